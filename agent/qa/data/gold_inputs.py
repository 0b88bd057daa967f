"""Inputs read from an item's gold at test time, as the authors' released code gives them to the
model: format instructions derived from the gold answer, and FinTMMBench's evidence taken from
the gold annotation's sources. Both read the gold; nothing here runs unless a plan asks for it
(``qa.gold_format_hints``, ``qa.gold_evidence``, both off under the paper's protocol), and every
question that carries such an input names it in :attr:`agent.qa.core.items.Question.from_gold`, so a
run's manifest and report can say so.

**Format instructions** (``format_hints``): the rules of the authors' ``build_instruction``
(``fm/retrieve.py``), in our words, applied to the gold answer written as their adapters write
it (:func:`gold_text`). The first rule that fits decides:

1. ``true``/``false``/``yes``/``no`` (any case): answer true or false (or yes or no);
2. only the letters A-H: answer with the option letter (one letter) or letters (several);
3. one to a few capitalised words without a digit: answer with the entity's name;
4. at least 40 characters with a digit: a sentence giving the direction with the values;
5. only digits: a count, a whole number;
6. otherwise: the currency of a leading currency mark, a percentage when it ends in ``%``, the
   magnitude word it contains (billions, millions, thousands), basis points when it says so,
   then the precision: with its currency mark, ``%``, magnitude words and commas removed, a
   number with decimals gives "round to N decimal places" and one without "a whole number"; a
   text that does not read as a number gives "answer as text".

The released code follows the rounding rule with an example that is the gold number itself,
written to those decimals (``e.g., 12.35`` for the gold answer ``12.35``): ``"authors"`` keeps
that example, ``"format"`` gives the same instructions without it. The Base variant never shows
them (the authors' Base prompt has no instruction block). Under the authors' loop
(``GoldInputs.authors``: their checkout) the instructions are their own lines, read from their
code (:func:`agent.qa.authors.messages.instruction_lines`, the same rule).

**FinTMMBench evidence** (``evidence``): for each source the gold annotation cites, the corpus
row with that ``uuid`` (``data/StockPrice.json``, ``data/FinancialTable.json``,
``data/News.json``) and the chart ``data/Chart/<stem>.png`` of a ``Chart_<stem>`` source.
``"authors"`` writes each row as the authors' adapter does, ``Company (Symbol) Date:
indicator_name=indicator_value unit`` (a news row so keeps only its company, symbol and date),
and takes the charts only for questions of type ``Chart`` (``ft/dataset/adapters.py``);
``"full"`` writes every field of each row and takes every cited chart. The rows become the
question's context (FinTMMBench questions have none), the charts its images, for every variant,
Base included, as the authors' adapter hands them to all three.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.qa.core.items import Gold, QAItem
from localfin.errors import ConfigError, InputError

__all__ = [
    "FORMAT_HINTS",
    "EVIDENCE_FORMS",
    "GoldInputs",
    "gold_text",
    "format_hints",
    "with_gold_inputs",
]

log = logging.getLogger(__name__)

#: ``none``; ``format``: the instructions without the example; ``authors``: with the example
#: number, which is the gold answer itself
FORMAT_HINTS = ("none", "format", "authors")
#: ``none``; ``authors``: the adapter's lines and chart questions' charts; ``full``: every field
EVIDENCE_FORMS = ("none", "authors", "full")
_EVIDENCE_DATASETS = ("fintmmbench",)
_CORPUS = ("StockPrice.json", "FinancialTable.json", "News.json")

#: currency marks, longest first where one is the end of another, and the currency's name
_CURRENCIES = (
    ("HK$", "Hong Kong dollars (HK$)"),
    ("A$", "Australian dollars (A$)"),
    ("C$", "Canadian dollars (C$)"),
    ("S$", "Singapore dollars (S$)"),
    ("R$", "Brazilian reais (R$)"),
    ("$", "dollars ($)"),
    ("\u20ac", "euros (\u20ac)"),
    ("\u00a5", "yen (\u00a5)"),
    ("\uffe5", "yuan (\uffe5)"),
    ("\u00a3", "pounds (\u00a3)"),
    ("\u20b9", "rupees (\u20b9)"),
    ("\u20a9", "won (\u20a9)"),
)
_MAGNITUDES = (("billion", "billions"), ("million", "millions"), ("thousand", "thousands"))
_MAGNITUDE_WORDS = re.compile(r"\s*(billion|millions|million|thousands|thousand)\s*", re.IGNORECASE)
_ENTITY = re.compile(r"[A-Z][a-zA-Z.\s&()'-]{1,80}")
_LETTERS = re.compile(r"[A-H]+")
_NOT_MISSING = "The answer must be a value, not a statement that the data is missing."


@dataclass(frozen=True)
class GoldInputs:
    """What of the gold a run gives the model at test time.

    Attributes:
        format_hints: one of :data:`FORMAT_HINTS`.
        evidence: one of :data:`EVIDENCE_FORMS` (FinTMMBench items only).
        corpus: the FinTMMBench folder (``data/`` inside) the evidence is read from.
        authors: the authors' checkout (:class:`agent.qa.authors.checkout.AuthorsCode`): the
            instructions in their words (None: ours).
    """

    format_hints: str = "none"
    evidence: str = "none"
    corpus: Path | None = None
    authors: Any = None

    def __post_init__(self) -> None:
        if self.format_hints not in FORMAT_HINTS:
            raise ConfigError(f"gold_format_hints={self.format_hints!r}; allowed: {', '.join(FORMAT_HINTS)}")
        if self.evidence not in EVIDENCE_FORMS:
            raise ConfigError(f"gold_evidence={self.evidence!r}; allowed: {', '.join(EVIDENCE_FORMS)}")

    @property
    def reads_gold(self) -> bool:
        return self.format_hints != "none" or self.evidence != "none"


# ---------------------------------------------------------------------------- format instructions
def gold_text(gold: Gold) -> str:
    """The gold answer as the authors' adapters write it: a float to six significant digits, a
    list joined by commas, anything else as text (a loader's ``extra["answer_text"]`` first)."""
    given = gold.extra.get("answer_text") if isinstance(gold.extra, Mapping) else None
    if isinstance(given, str) and given:
        return given
    a = gold.answer
    if isinstance(a, bool):
        return str(a)
    if isinstance(a, float):
        return f"{a:.6g}"
    if isinstance(a, (list, tuple)):
        return ", ".join(str(x) for x in a)
    return str(a)


def _precision(answer: str, example: bool) -> str:
    core = answer
    for mark, _ in _CURRENCIES:
        if core.startswith(mark):
            core = core[len(mark) :].lstrip()
            break
    core = _MAGNITUDE_WORDS.sub("", core.rstrip("%")).strip().replace(",", "").strip()
    try:
        value = float(core)
    except ValueError:
        return "Answer as text."
    parts = core.lstrip("-(").rstrip(")").split(".")
    if len(parts) == 2 and parts[1]:
        dp = len(parts[1])
        said = f"Round the answer to {dp} decimal place{'s' if dp > 1 else ''}"
        return f"{said} (for example {value:.{dp}f})." if example else f"{said}."
    return "Give the answer as a whole number."


def format_hints(answer: str, *, example: bool = True) -> tuple[str, ...]:
    """The instructions the rules of the module docstring derive from the gold ``answer``
    (written as :func:`gold_text` writes it); ``example``: the rounding rule's example number,
    which is the gold number itself."""
    a = str(answer).strip()
    if a.lower() in ("true", "false", "yes", "no"):
        return ("Answer true or false (or yes or no).", _NOT_MISSING)
    if _LETTERS.fullmatch(a):
        if len(a) == 1:
            return (
                "Answer with the option letter only (for example A).",
                "The answer must be one option letter.",
            )
        return (
            "Answer with the option letters only (for example AB).",
            "The answer must be the option letters.",
        )
    if _ENTITY.fullmatch(a) and not re.search(r"\d", a):
        return (
            "Answer with the entity's name (for example a company's).",
            "The answer must be a name, not a number.",
        )
    if len(a) >= 40 and re.search(r"\d", a):
        return (
            "Answer with a sentence that says the direction and gives the values.",
            "The answer must say whether it increased or decreased, not only give numbers.",
        )
    if re.fullmatch(r"\d+", a):
        return ("Answer with a count.", "The answer must be a whole number.")
    out = []
    head = a.lstrip("-(").lstrip()
    for mark, name in _CURRENCIES:
        if head.startswith(mark):
            out.append(f"Give the answer in {name}.")
            break
    if a.endswith("%"):
        out.append("Give the answer as a percentage, with a % sign.")
    for word, plural in _MAGNITUDES:
        if word in a.lower():
            out.append(f"Give the answer in {plural}.")
            break
    if "bps" in a.lower() or "basis point" in a.lower():
        out.append("Give the answer in basis points (for example 50 bps).")
    out.append(_precision(a, example))
    out.append(_NOT_MISSING)
    return tuple(out)


# ---------------------------------------------------------------------------- FinTMMBench evidence
class _Corpus:
    """FinTMMBench's corpus rows by ``uuid`` and its chart folder (read once)."""

    def __init__(self, folder: Path) -> None:
        data = folder / "data"
        if not data.is_dir():
            raise InputError(f"no FinTMMBench corpus folder {data} (the gold evidence is read from it)")
        self.charts = data / "Chart"
        self.rows: dict[str, Mapping[str, Any]] = {}
        for name in _CORPUS:
            f = data / name
            if not f.is_file():
                log.warning("gold evidence: %s is absent; its rows cannot be cited", f)
                continue
            try:
                rows = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise InputError(f"cannot read FinTMMBench corpus file {f}: {exc}") from exc
            for r in rows if isinstance(rows, list) else []:
                key = (r.get("uuid") or r.get("UUID")) if isinstance(r, Mapping) else None
                if key:
                    self.rows[str(key)] = r

    def chart(self, source: str) -> str | None:
        stem = source.removeprefix("Chart_").removesuffix(".png")
        f = self.charts / f"{stem}.png"
        return str(f) if f.is_file() else None


def _text(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return "" if v is None else str(v)


def _authors_line(row: Mapping[str, Any]) -> str:
    company, symbol, date = (_text(row.get(k)) for k in ("Company", "Symbol", "Date"))
    name, value, unit = (_text(row.get(k)) for k in ("indicator_name", "indicator_value", "unit"))
    return f"{company} ({symbol}) {date}: {name}={value} {unit}".strip()


def _full_line(row: Mapping[str, Any]) -> str:
    return "; ".join(
        f"{k}: {_text(v)}" for k, v in row.items() if str(k).lower() != "uuid" and v not in (None, "")
    )


def _sources(gold: Gold) -> list[str]:
    src = gold.extra.get("sources", ()) if isinstance(gold.extra, Mapping) else ()
    return [s for s in src if isinstance(s, str)] if isinstance(src, (list, tuple)) else []


def _evidence(item: QAItem, corpus: _Corpus, form: str) -> tuple[str, tuple[str, ...]]:
    """The context and images the gold's sources give ``item`` under ``form``."""
    sources = _sources(item.gold)
    rows = [corpus.rows[s] for s in sources if not s.startswith("Chart_") and s in corpus.rows]
    line = _authors_line if form == "authors" else _full_line
    context = "\n".join(line(r) for r in rows)
    charts: list[str] = []
    kind = str(item.gold.extra.get("type", "")) if isinstance(item.gold.extra, Mapping) else ""
    if form == "full" or kind == "Chart":
        charts = [c for s in sources if s.startswith("Chart_") and (c := corpus.chart(s))]
        if form == "full":  # a chart cited by its bare stem
            charts += [c for s in sources if s not in corpus.rows and not s.startswith("Chart_")
                       and (c := corpus.chart(s))]  # fmt: skip
    return context, tuple(dict.fromkeys(charts))


def with_gold_inputs(items: Sequence[QAItem], cfg: GoldInputs) -> list[QAItem]:
    """``items`` with the gold inputs ``cfg`` asks for put into their questions (each question
    names them in ``from_gold``); the same items when it asks for none."""
    if not cfg.reads_gold:
        return list(items)
    corpus: _Corpus | None = None
    if cfg.evidence != "none" and any(it.question.dataset in _EVIDENCE_DATASETS for it in items):
        if cfg.corpus is None:
            raise ConfigError(
                "gold_evidence needs the FinTMMBench folder (qa.corpus, or a FinTMMBench source in the plan)"
            )
        corpus = _Corpus(cfg.corpus)
    out = []
    for it in items:
        q, tags = it.question, list(it.question.from_gold)
        changes: dict[str, Any] = {}
        if cfg.format_hints != "none":
            example = cfg.format_hints == "authors"
            if cfg.authors is not None:
                from agent.qa.authors.messages import instruction_lines

                changes["instructions"] = instruction_lines(cfg.authors, gold_text(it.gold), example=example)
            else:
                changes["instructions"] = format_hints(gold_text(it.gold), example=example)
            tags.append(f"format_hints:{cfg.format_hints}")
        if corpus is not None and q.dataset in _EVIDENCE_DATASETS:
            context, images = _evidence(it, corpus, cfg.evidence)
            changes["context"] = "\n".join(x for x in (q.context, context) if x)
            changes["images"] = tuple(dict.fromkeys((*q.images, *images)))
            tags.append(f"evidence:{cfg.evidence}")
        if changes:
            q = replace(q, from_gold=tuple(dict.fromkeys(tags)), **changes)
        out.append(replace(it, question=q))
    return out


def gold_input_counts(questions: Iterable[Any]) -> dict[str, int]:
    """How many of ``questions`` carry each gold input (``from_gold`` tags)."""
    out: dict[str, int] = {}
    for q in questions:
        for t in getattr(q, "from_gold", ()):
            out[t] = out.get(t, 0) + 1
    return out
