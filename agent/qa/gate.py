"""The answer gate: a final answer is accepted only when it passes three checks in code.

Its inputs are the :class:`~agent.qa.items.Question` (text, context, options, answer format),
the image transcriptions made before the loop, the successful tool outputs of the trajectory
and the proposed answer. It never receives the gold answer, and nothing here can reach one.
A failed verdict carries reasons written for the model; the solver sends them back for one
more step (see :mod:`agent.qa.react`), so the gate is a check, not a warning.

1. **Source-traceable.** Every number of the answer (read by :func:`agent.qa.numbers.extract_numbers`)
   must trace to a number of the evidence: the question text and its options, the context, an
   image transcription, or the output of a tool call that succeeded (failed calls and the
   model's own thoughts are not evidence). A number traces when some evidence number, after
   one of the transforms below, rounds (half-up) or truncates to the answer's shown digits
   (:func:`agent.qa.numbers.rounds_to`; signs are not compared, since a decrease is often
   written as a positive number with a word). Transforms and when they are allowed:
   - identity, also between the scaled forms (``1.5 million`` traces to ``1,500,000``);
   - x100 (fraction to percent): only when the answer number is marked as a percent or the
     question asks for a percentage;
   - /100 (percent to fraction): only when the evidence number was marked as a percent;
   - /1e3, /1e6, /1e9 (e.g. units to millions): only when the answer number carries a scale word;
   - x1e3, x1e6, x1e9 (e.g. a table "in thousands" written out in units): only when the
     evidence number carries that scale word or its source text mentions it.
   Integers up to ``GateConfig.free_integer_max`` (counts, small ordinals) need no trace.
2. **Units and scale.** A number must not be both a percent and scaled (``12% million``); a
   question that asks for a value "in millions" (thousands, billions) must not get another
   scale word; a currency symbol of the answer must occur in the question, context or a
   transcription. (Unit errors by a factor of 100 or 1,000 are also caught by rule 1, which
   only lets a conversion through when the answer says so.)
3. **Format**, read from ``Question.answer_format`` and the question text (never the gold):
   non-empty and at most ``max_answer_chars``; with options, the answer names exactly one
   option (its label or its text); a numeric question ("how many", "how much", "what
   percentage", "what is the change/average/ratio/...", or a numeric ``answer_format``) has
   exactly one number; a count ("how many", ``integer``) is a whole number; a percentage
   carries ``%`` or "percent"; "N decimal places" allows at most N shown decimals; a yes/no
   format starts with yes or no.

``answer_format`` vocabulary (case-insensitive words anywhere in it): ``percent``/``percentage``;
``integer``/``count``/``whole``; ``number``/``numeric``/``numerical``/``float``/``decimal``;
``yes/no``/``boolean``; ``choice``/``option``/``letter``; ``text``/``span`` (no numeric rules);
``list``/``multi`` (several values: no single-number rule); ``N decimal`` or ``decimals=N``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent.qa.items import Question
from agent.qa.numbers import Number, extract_numbers, rounds_to, text_scales
from agent.qa.tools.base import ToolResult
from localfin.errors import ConfigError

__all__ = ["GateConfig", "Evidence", "Trace", "GateVerdict", "AnswerFormat", "answer_format", "check_answer"]

_SCALES = (1e3, 1e6, 1e9)
_SCALE_NAME = {1e3: "thousand", 1e6: "million", 1e9: "billion", 1e12: "trillion"}


@dataclass(frozen=True)
class GateConfig:
    """Gate settings.

    Attributes:
        free_integer_max: whole numbers with absolute value up to this need no trace (counts,
            "3 years"); 0 makes every number need one.
        max_answer_chars: longest accepted answer (characters).
        check_trace / check_units / check_format: switch a check off (ablations only).
    """

    free_integer_max: int = 10
    max_answer_chars: int = 400
    check_trace: bool = True
    check_units: bool = True
    check_format: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.free_integer_max <= 1000:
            raise ConfigError(f"GateConfig.free_integer_max={self.free_integer_max}; allowed: 0..1000")
        if not 1 <= self.max_answer_chars <= 100_000:
            raise ConfigError(f"GateConfig.max_answer_chars={self.max_answer_chars}; allowed: 1..100000")


@dataclass(frozen=True)
class _Source:
    kind: str  # question, options, context, transcription, tool:<name>
    text: str
    numbers: tuple[Number, ...]
    scales: frozenset[float]


@dataclass(frozen=True)
class Evidence:
    """What an answer's numbers may trace to. Build with :meth:`build`."""

    sources: tuple[_Source, ...]

    @classmethod
    def build(
        cls,
        question: Question,
        transcriptions: Sequence[str] = (),
        tool_outputs: Iterable[tuple[str, ToolResult]] = (),
    ) -> Evidence:
        """Evidence of one trajectory: the question, its options and context, the image
        transcriptions, and ``(tool name, result)`` pairs (only ``ok`` results count)."""
        parts: list[tuple[str, str, tuple[Number, ...]]] = [
            ("question", question.text, ()),
            ("options", "\n".join(question.options), ()),
            ("context", question.context, ()),
        ]
        parts += [("transcription", t, ()) for t in transcriptions]
        for name, res in tool_outputs:
            if res.ok:
                extra = tuple(Number(text=repr(v), value=float(v), decimals=12) for v in res.numbers)
                parts.append((f"tool:{name}", res.text, extra))
        sources = []
        for kind, text, extra in parts:
            if text or extra:
                sources.append(
                    _Source(kind, text, tuple(extract_numbers(text)) + extra, frozenset(text_scales(text)))
                )
        return cls(tuple(sources))

    def text(self) -> str:
        return "\n".join(s.text for s in self.sources)


@dataclass(frozen=True)
class Trace:
    """How one answer number traced: the evidence source, its number and the transform."""

    answer_number: str
    source: str | None  # None: no trace (or exempt)
    evidence_number: str = ""
    transform: str = ""  # identity, x100, /100, x1000, /1e+06, ..., or "free integer"


@dataclass(frozen=True)
class AnswerFormat:
    """What the question asks for, read from ``answer_format`` and the question text only."""

    numeric: bool = False  # exactly one number
    integer: bool = False
    percent: bool = False
    yes_no: bool = False
    choice: bool = False
    max_decimals: int | None = None
    scale: float | None = None  # "in millions" etc.


@dataclass(frozen=True)
class GateVerdict:
    """The gate's decision. ``reasons`` are messages for the model (empty when ``ok``)."""

    ok: bool
    reasons: tuple[str, ...]
    checks: dict[str, bool] = field(default_factory=dict)
    traces: tuple[Trace, ...] = ()

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "reasons": list(self.reasons),
            "checks": dict(self.checks),
            "traces": [t.__dict__ for t in self.traces],
        }


_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "zero": 0}
_NUMERIC_Q = re.compile(
    r"\b(how (many|much)|what (percentage|percent|proportion|fraction)|percentage (change|of|increase|"
    r"decrease)|(what|how) (is|was|were|are) the (average|mean|ratio|change|difference|sum|total "
    r"(change|increase|decrease)|percentage|growth|increase|decrease|rate)|calculate|compute)\b",
    re.IGNORECASE,
)
_PERCENT_Q = re.compile(
    r"\b(what (percentage|percent)|percentage (change|of|increase|decrease)|as a percentage|in percent"
    r"(age)?|(is|was|were|are) the percentage|growth rate|percent change|% change)\b",
    re.IGNORECASE,
)
_COUNT_Q = re.compile(r"\bhow many\b", re.IGNORECASE)
_DECIMALS_Q = re.compile(r"\b(\d|one|two|three|four|five|zero)\s+decimal(?:\s+places?)?\b", re.IGNORECASE)
_SCALE_Q = re.compile(r"\bin (thousands|millions|billions)\b", re.IGNORECASE)
_YES_NO = re.compile(r"^\s*(yes|no)\b", re.IGNORECASE)


def answer_format(question: Question) -> AnswerFormat:
    """What the answer must look like (see the module docstring for the rules)."""
    fmt = question.answer_format.lower()
    text = question.text
    textual = bool(re.search(r"\b(text|span)\b", fmt))
    several = bool(re.search(r"\b(list|multi)", fmt))
    percent = bool(re.search(r"percent", fmt)) or (not fmt and bool(_PERCENT_Q.search(text)))
    integer = bool(re.search(r"\b(integer|count|whole)\b", fmt)) or (not fmt and bool(_COUNT_Q.search(text)))
    numeric_word = bool(re.search(r"\b(number|numeric|numerical|float|decimal|integer|count|percent)", fmt))
    numeric = (numeric_word or (not fmt and bool(_NUMERIC_Q.search(text)))) and not textual and not several
    decimals = None
    m = (
        re.search(r"decimals?\s*=\s*(\d+)", fmt)
        or re.search(r"(\d+)\s+decimal", fmt)
        or _DECIMALS_Q.search(text)
    )
    if m:
        tok = m.group(1).lower()
        decimals = _WORDS[tok] if tok in _WORDS else int(tok)
    sm = _SCALE_Q.search(text)
    scale = {"thousands": 1e3, "millions": 1e6, "billions": 1e9}[sm.group(1).lower()] if sm else None
    return AnswerFormat(
        numeric=numeric or (percent and not several) or (integer and not several),
        integer=integer and not textual,
        percent=percent and not textual,
        yes_no=bool(re.search(r"yes\s*/\s*no|boolean", fmt)),
        choice=bool(question.options) or bool(re.search(r"\b(choice|option|letter)\b", fmt)),
        max_decimals=decimals,
        scale=scale,
    )


def _transforms(a: Number, e: Number, src: _Source, fmt: AnswerFormat) -> Iterable[tuple[str, float]]:
    """(name, evidence value after the transform) pairs allowed for answer number ``a``."""
    forms = [e.value] + ([e.scaled] if e.multiplier != 1.0 else [])
    for ev in forms:
        yield "identity", ev
        if a.percent or fmt.percent:
            yield "x100", ev * 100.0
        if e.percent:
            yield "/100", ev / 100.0
        for s in _SCALES:
            if a.multiplier != 1.0:
                yield f"/{s:g}", ev / s
            if e.multiplier == s or s in src.scales:
                yield f"x{s:g}", ev * s


def _trace(a: Number, evidence: Evidence, fmt: AnswerFormat, cfg: GateConfig) -> Trace:
    if a.is_integer and a.multiplier == 1.0 and abs(a.value) <= cfg.free_integer_max:
        return Trace(a.text, "exempt", transform="free integer")
    for src in evidence.sources:
        for e in src.numbers:
            for name, ev in _transforms(a, e, src, fmt):
                if rounds_to(ev, a.value, a.decimals):
                    return Trace(a.text, src.kind, e.text, name)
    return Trace(a.text, None)


_LABELLED = re.compile(r"^\s*\(?([A-Za-z])[\).:]\s*(.*)$", re.DOTALL)


def _option_named(answer: str, options: Sequence[str]) -> bool:
    """True when ``answer`` names exactly one option: its label (``A``, ``(A)``, ``A.``), its
    label followed by its text, or its text alone (case and a final full stop ignored)."""
    norm = answer.strip().rstrip(".").strip().lower()
    named = set()
    for i, opt in enumerate(options):
        m = _LABELLED.match(opt)
        label, body = (m.group(1).lower(), m.group(2)) if m else (chr(ord("a") + i), opt)
        body = body.strip().rstrip(".").strip().lower()
        forms = {label, f"({label})", f"{label})", f"{label}.", body}
        forms |= (
            {f"{p} {body}" for p in (f"{label})", f"({label})", f"{label}.", f"{label}:")} if body else set()
        )
        if norm in forms:
            named.add(label)
    return len(named) == 1


def check_answer(
    question: Question,
    answer: str,
    evidence: Evidence,
    config: GateConfig | None = None,
) -> GateVerdict:
    """Check ``answer`` to ``question`` against ``evidence`` (see the module docstring).

    Args:
        question: the question as the agent saw it (no gold in it).
        answer: the proposed final answer text.
        evidence: :meth:`Evidence.build` of the trajectory so far.
        config: gate settings.
    """
    cfg = config or GateConfig()
    fmt = answer_format(question)
    reasons: list[str] = []
    checks: dict[str, bool] = {}
    nums = extract_numbers(answer)
    ans = answer.strip()

    if cfg.check_format:
        before = len(reasons)
        if not ans:
            reasons.append("The answer is empty: give the answer itself.")
        elif len(ans) > cfg.max_answer_chars:
            reasons.append(
                f"The answer has {len(ans)} characters (at most {cfg.max_answer_chars}): "
                "give only the answer."
            )
        if ans and fmt.choice and question.options and not _option_named(ans, question.options):
            reasons.append("The question has options: answer with exactly one option label (e.g. A).")
        if ans and fmt.yes_no and not _YES_NO.match(ans):
            reasons.append("The question asks yes or no: start the answer with Yes or No.")
        if ans and fmt.numeric and not fmt.choice:
            if not nums:
                reasons.append("The question asks for a number, but the answer has none.")
            elif len(nums) > 1:
                shown = ", ".join(n.text for n in nums[:4])
                reasons.append(f"The question asks for one number; the answer has {len(nums)} ({shown}).")
        if nums and fmt.numeric and not fmt.choice:
            n = nums[0]
            if fmt.integer and not (n.is_integer or float(n.value).is_integer()):
                reasons.append(f"The question asks for a count: {n.text} is not a whole number.")
            if fmt.percent and not n.percent:
                reasons.append(
                    f"The question asks for a percentage: write {n.text} as a percentage with a % sign "
                    "(a fraction 0.123 is 12.3%)."
                )
            if fmt.max_decimals is not None and n.decimals > fmt.max_decimals:
                reasons.append(
                    f"The question asks for {fmt.max_decimals} decimal places; {n.text} shows more."
                )
        checks["format"] = len(reasons) == before

    if cfg.check_units:
        before = len(reasons)
        for n in nums:
            if n.percent and n.multiplier != 1.0:
                reasons.append(f"{n.text} is both a percentage and a scaled amount: keep one unit.")
            if fmt.scale is not None and n.multiplier not in (1.0, fmt.scale):
                reasons.append(
                    f"The question asks for the value in {_SCALE_NAME[fmt.scale]}s; {n.text} uses "
                    f"{_SCALE_NAME.get(n.multiplier, 'another scale')}."
                )
        seen_text = "\n".join(
            s.text for s in evidence.sources if s.kind in ("question", "options", "context", "transcription")
        )
        for cur in sorted({n.currency for n in nums if n.currency}):
            if cur not in seen_text:
                reasons.append(f"The answer uses {cur}, a currency that the question and its data never use.")
        checks["units"] = len(reasons) == before

    traces: tuple[Trace, ...] = ()
    if cfg.check_trace:
        traces = tuple(_trace(n, evidence, fmt, cfg) for n in nums)
        missing = [t.answer_number for t in traces if t.source is None]
        if missing:
            reasons.append(
                "These numbers do not appear in the context, a transcription or a tool output: "
                + ", ".join(missing[:6])
                + ". Compute them with a tool (or copy them from the data) before answering."
            )
        checks["trace"] = not missing

    return GateVerdict(ok=not reasons, reasons=tuple(reasons), checks=checks, traces=traces)
