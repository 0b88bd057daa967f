"""What form of answer a question asks for, read from the question text only.

The public FinAcumen code builds its format hints from the gold answer at test time; ours
never sees the gold. :func:`answer_format_from_question` reads cues a careful reader would
use ("Answer to the nearest integer", "(in million)", "what percentage", "how many", "is
... ?", a Chinese "保留两位小数") plus what a benchmark publishes per item and shows every
solver (answer options; FinMME's answer unit). Loaders store :meth:`AnswerFormat.describe`
in ``Question.answer_format``; the answer gate can re-derive the structured form from the
question text with the same function.

Decisions where the text is silent: no decimals cue means ``decimals=None`` (any precision);
no scale cue means ``scale=""`` (write the number in the units of the source); percentages
are asked in percent units ("12.5" or "12.5%", never 0.125), which is how TAT-QA and FinMMR
state their gold answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from localfin.errors import ConfigError

__all__ = ["ANSWER_KINDS", "AnswerFormat", "answer_format_from_question", "numeric_format"]

#: number: a numeric value; percent: a percentage in percent units; count: an integer count;
#: yes_no: "yes" or "no"; choice: option letter(s); list: several short spans; text: one span.
ANSWER_KINDS = ("number", "percent", "count", "yes_no", "choice", "list", "text")

_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "一": 1, "两": 2, "二": 2, "三": 3, "四": 4}
_NUM = r"(\d|one|two|three|four|five)"
_DECIMALS = (
    (re.compile(r"nearest\s+(?:whole\s+)?(?:integer|whole number|dollar|percent|cent\b)", re.I), 0),
    (re.compile(r"(?:as an? |to an? )?(?:whole number|integer)\b", re.I), 0),
    (re.compile(r"nearest\s+tenth", re.I), 1),
    (re.compile(r"nearest\s+hundredth", re.I), 2),
    (re.compile(r"nearest\s+thousandth", re.I), 3),
    (re.compile(r"保留整数|取整"), 0),
)
_DECIMALS_N = (
    re.compile(rf"{_NUM}\s+decimal(?:\s+places?|\s+points?|s)?", re.I),
    re.compile(r"(?:保留|小数点后)\s*([\d一两二三四])\s*位"),
)
_SCALE = re.compile(
    r"\bin\s+(?:US\s*)?(?:\$|usd|dollars)?\s*(thousand|million|billion)s?\b|\((?:in\s+)?(thousand|million|billion)s?\)",
    re.I,
)
_PERCENT = re.compile(r"percent|percentage|\bpct\b|%|百分比|百分点", re.I)
_COUNT = re.compile(r"\bhow many\b(?!\s+(?:percent|dollars|million|thousand|billion|basis points))", re.I)
_YES_NO = re.compile(r"^\s*(?:is|are|was|were|does|do|did|has|have|had|can|could|will|would|should)\b", re.I)
_LIST = re.compile(
    r"^\s*(?:what|which)\s+(?:are|were)\s+the\b|^\s*(?:list|name)\s+(?:all\s+)?the\b|"
    r"^\s*in which years\b|^\s*which years\b",
    re.I,
)
_NUMERIC = re.compile(
    r"how much|what (?:is|was|were|are) the (?:total|average|sum|difference|change|increase|decrease|"
    r"ratio|rate|amount|value|net|growth|proportion|cost|price|margin|return|yield)|ratio|"
    r"difference|change in|growth|cagr|average|calculate|compute|sum of|total|increase|decrease|"
    r"计算|比例|增长率|差值|总和|比值|多少",
    re.I,
)


@dataclass(frozen=True)
class AnswerFormat:
    """The form of answer a question asks for.

    Attributes:
        kind: one of :data:`ANSWER_KINDS`.
        decimals: decimal places asked for (None: not stated).
        scale: "", "thousand", "million" or "billion" when the question names the unit of a
            number ("(in million)"), else "".
        unit: a unit the benchmark states for the item (FinMME's ``unit``), else "".
        n_options: number of answer options (choice items).
    """

    kind: str
    decimals: int | None = None
    scale: str = ""
    unit: str = ""
    n_options: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ANSWER_KINDS:
            raise ConfigError(f"AnswerFormat.kind={self.kind!r}; allowed: {', '.join(ANSWER_KINDS)}")
        if self.decimals is not None and not 0 <= self.decimals <= 10:
            raise ConfigError(f"AnswerFormat.decimals={self.decimals}; allowed: 0..10 or None")
        if self.scale not in ("", "thousand", "million", "billion"):
            raise ConfigError(f"AnswerFormat.scale={self.scale!r}; allowed: '', thousand, million, billion")

    def describe(self) -> str:
        """One line for the prompt, e.g. ``a number in millions, rounded to 2 decimal places``."""
        if self.kind == "choice":
            return "the letter(s) of the correct option(s), e.g. A or A, C"
        if self.kind == "yes_no":
            return "yes or no"
        if self.kind == "list":
            return "a list of short text spans copied from the context, as a JSON list of strings"
        if self.kind == "text":
            return "a short text span copied from the context"
        if self.kind == "count":
            return "an integer count"
        head = (
            "a percentage in percent units (write 12.5 or 12.5%, not 0.125)"
            if self.kind == "percent"
            else "a number"
        )
        parts = [head]
        if self.scale:
            parts.append(f"in {self.scale}s")
        if self.unit:
            parts.append(f"in {self.unit}")
        text = " ".join(parts)
        if self.decimals is not None:
            text += (
                ", as an integer" if self.decimals == 0 else f", rounded to {self.decimals} decimal places"
            )
        return text


def _decimals(text: str) -> int | None:
    for rx in _DECIMALS_N:
        m = rx.search(text)
        if m:
            word = m.group(1).lower()
            return int(word) if word.isdigit() else _WORDS.get(word)
    for rx, n in _DECIMALS:
        if rx.search(text):
            return n
    return None


def answer_format_from_question(text: str, *, options: Sequence[str] = (), unit: str = "") -> AnswerFormat:
    """The answer form ``text`` asks for (question text only; ``options`` and ``unit`` are the
    per-item fields a benchmark shows every solver)."""
    if options:
        return AnswerFormat("choice", n_options=len(options))
    decimals = _decimals(text)
    m = _SCALE.search(text)
    scale = (m.group(1) or m.group(2)).lower() if m else ""
    if _COUNT.search(text):
        return AnswerFormat("count", decimals=0)
    if _YES_NO.search(text) and " or " not in text.lower():
        return AnswerFormat("yes_no")
    if _PERCENT.search(text):
        return AnswerFormat("percent", decimals=decimals, unit=unit)
    if _LIST.search(text):
        return AnswerFormat("list")
    if decimals is not None or scale or unit or _NUMERIC.search(text):
        return AnswerFormat("number", decimals=decimals, scale=scale, unit=unit)
    return AnswerFormat("text")


def numeric_format(text: str, *, unit: str = "") -> AnswerFormat:
    """:func:`answer_format_from_question` for a benchmark whose published task is to give a
    number (BizBench SEC-NUM, FinMMR): a ``text``/``list``/``yes_no`` reading becomes
    ``number`` with the decimals and scale the question states (and the published ``unit``)."""
    fmt = answer_format_from_question(text, unit=unit)
    if fmt.kind in ("number", "percent", "count"):
        return fmt
    return AnswerFormat("number", decimals=fmt.decimals, scale=fmt.scale, unit=unit)
