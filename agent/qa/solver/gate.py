"""The answer gate: a final answer is accepted only when it passes three checks in code.

Its inputs are the :class:`~agent.qa.core.items.Question` (text, context, options), the image
transcriptions made before the loop, the successful tool outputs of the trajectory and the
proposed answer. It never receives the gold answer, and nothing here can reach one. A failed
verdict carries reasons written for the model; the solver sends them back for one more step
(see :mod:`agent.qa.solver.react`), so the gate is a check, not a warning.

Numbers are read with :func:`agent.qa.core.numbers.find_numbers` (the scorers' reader); the answer
format is :func:`agent.qa.core.answer_format.answer_format_from_question` of the question text and
options (the same function the loaders use to write ``Question.answer_format``).

1. **Source-traceable.** Every number of the answer must trace to a number of the evidence:
   the question text and options, the context, an image transcription, or the output of a
   tool call that succeeded (failed calls and the model's own thoughts are not evidence). A
   number traces when some evidence number, after one of the transforms below, rounds
   (half-up) or truncates to the digits the answer shows (:func:`rounds_to`; signs are not
   compared, since a decrease is often written as a positive number with a word).
   Transforms and when they are allowed:
   - identity (the evidence as written, or with its own scale word applied);
   - x100 (fraction to percent): when the answer number is a percent or the question asks
     for a percentage;
   - /100 (percent to fraction): when the evidence number was marked as a percent;
   - /1e3, /1e6, /1e9 (units to a scaled amount): when the answer number carries a scale word;
   - x1e3, x1e6, x1e9 (a table "in thousands" written out in units): when the evidence number
     carries that scale word or its source text mentions it.
   Whole numbers up to ``GateConfig.free_integer_max`` (counts, small ordinals) need no trace.
2. **Units and scale.** A number must not be both a percent and scaled (``12% million``); a
   question that asks for a value in millions (thousands, billions) must not get another scale
   word; a currency mark of the answer must occur in the question, context or a
   transcription. (Unit slips by a factor of 100 or 1,000 are also caught by rule 1, which only
   lets a conversion through when the answer says so.)
3. **Format** (answer kinds of :mod:`agent.qa.core.answer_format`): non-empty and at most
   ``max_answer_chars``; ``choice``: only option labels (one or more) or one option's text;
   ``yes_no``: starts with yes or no; ``number``, ``percent``, ``count``: exactly one number;
   ``count``: a whole number; ``percent``: in percent units, so a number below 1 without a %
   sign is refused as ambiguous (0.123 may be a fraction meant as 12.3%); a stated number of
   decimal places is an upper bound on the decimals shown; ``list`` and ``text``: no numeric
   rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent.qa.core.answer_format import AnswerFormat, answer_format_from_question
from agent.qa.core.items import Question
from agent.qa.core.numbers import SCALE_FACTORS, ParsedNumber, find_numbers
from agent.qa.tools.base import ToolResult
from localfin.errors import ConfigError

__all__ = ["GateConfig", "Evidence", "Trace", "GateVerdict", "check_answer", "rounds_to", "question_format"]

_SCALES = (1e3, 1e6, 1e9)
_SCALE_IN_TEXT = re.compile(r"\b(thousands?|millions?|billions?|trillions?)\b", re.IGNORECASE)
_DECIMALS = re.compile(r"\d\.(\d+)")
_YES_NO = re.compile(r"^\s*(yes|no)\b", re.IGNORECASE)


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
class _Num:
    text: str
    value: float  # as written, sign applied, scale word not applied
    decimals: int  # digits shown after the decimal point
    percent: bool
    multiplier: float
    currency: str

    @property
    def scaled(self) -> float:
        return self.value * self.multiplier

    @classmethod
    def of(cls, p: ParsedNumber) -> _Num:
        m = _DECIMALS.search(p.text)
        exp = "e" in p.text.lower() and re.search(r"\d[eE][-+]?\d", p.text) is not None
        return cls(
            p.text,
            p.value,
            12 if exp else (len(m.group(1)) if m else 0),
            p.percent,
            SCALE_FACTORS[p.scale],
            p.currency,
        )


def _numbers(text: str) -> tuple[_Num, ...]:
    return tuple(_Num.of(p) for p in find_numbers(text))


def rounds_to(evidence: float, shown: float, decimals: int) -> bool:
    """True when ``evidence``, rounded half-up or truncated to ``decimals`` places, is ``shown``.

    Absolute values are compared; a relative slack of 1e-9 absorbs binary floating-point error.
    """
    e, a = abs(evidence), abs(shown)
    unit = 10.0 ** (-decimals)
    slack = 1e-9 * max(1.0, e, a)
    if abs(e - a) <= 0.5 * unit + slack:  # rounding (either direction at the half)
        return True
    return a - slack <= e < a + unit + slack  # truncation toward zero


@dataclass(frozen=True)
class _Source:
    kind: str  # question, options, context, transcription, tool:<name>
    text: str
    numbers: tuple[_Num, ...]
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
        transcriptions, and ``(tool name, result)`` pairs (only ``ok`` results count; a
        result's ``numbers`` count at full precision)."""
        parts: list[tuple[str, str, tuple[_Num, ...]]] = [
            ("question", question.text, ()),
            ("options", "\n".join(question.options), ()),
            ("context", question.context, ()),
        ]
        parts += [("transcription", t, ()) for t in transcriptions]
        for name, res in tool_outputs:
            if res.ok:
                extra = tuple(_Num(repr(v), float(v), 12, False, 1.0, "") for v in res.numbers)
                parts.append((f"tool:{name}", res.text, extra))
        sources = []
        for kind, text, extra in parts:
            if text or extra:
                scales = frozenset(SCALE_FACTORS[w.lower().rstrip("s")] for w in _SCALE_IN_TEXT.findall(text))
                sources.append(_Source(kind, text, _numbers(text) + extra, scales))
        return cls(tuple(sources))


@dataclass(frozen=True)
class Trace:
    """How one answer number traced: the evidence source, its number and the transform."""

    answer_number: str
    source: str | None  # None: no trace; "exempt": a free small integer
    evidence_number: str = ""
    transform: str = ""  # identity, x100, /100, /1000, x1e+06, ..., or "free integer"


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


_CHOICE = AnswerFormat("choice").describe()


def question_format(question: Question) -> AnswerFormat:
    """The answer form the question asks for (its text and options only; a choice item the
    benchmark publishes without its options, e.g. a FinMME row with empty ``options``, by the
    format its loader wrote from the item's question type)."""
    if not question.options and question.answer_format == _CHOICE:
        return AnswerFormat("choice")
    return answer_format_from_question(question.text, options=question.options)


def _transforms(a: _Num, e: _Num, src: _Source, percent_asked: bool) -> Iterable[tuple[str, float]]:
    forms = [e.value] + ([e.scaled] if e.multiplier != 1.0 else [])
    for ev in forms:
        yield "identity", ev
        if a.percent or percent_asked:
            yield "x100", ev * 100.0
        if e.percent:
            yield "/100", ev / 100.0
        for s in _SCALES:
            if a.multiplier != 1.0:
                yield f"/{s:g}", ev / s
            if e.multiplier == s or s in src.scales:
                yield f"x{s:g}", ev * s


def _trace(a: _Num, evidence: Evidence, percent_asked: bool, cfg: GateConfig) -> Trace:
    if a.decimals == 0 and a.multiplier == 1.0 and abs(a.value) <= cfg.free_integer_max:
        return Trace(a.text, "exempt", transform="free integer")
    for src in evidence.sources:
        for e in src.numbers:
            for name, ev in _transforms(a, e, src, percent_asked):
                if rounds_to(ev, a.value, a.decimals):
                    return Trace(a.text, src.kind, e.text, name)
    return Trace(a.text, None)


_LABELLED = re.compile(r"^\s*\(?([A-Za-z])[\).:]\s*(.*)$", re.DOTALL)


def _options_named(answer: str, options: Sequence[str]) -> bool:
    """True when ``answer`` is one or more option labels (``A``, ``(A)``, ``A, C``), one label
    followed by its option's text, or one option's text (case and a final full stop ignored)."""
    norm = answer.strip().rstrip(".").strip().lower()
    labels: dict[str, str] = {}
    for i, opt in enumerate(options):
        m = _LABELLED.match(opt)
        label, body = (m.group(1).lower(), m.group(2)) if m else (chr(ord("a") + i), opt)
        labels[label] = body.strip().rstrip(".").strip().lower()
    tokens = [t for t in re.split(r"[\s,;/&]+|\band\b", norm) if t]
    tokens = [t.strip("()").rstrip(").:") for t in tokens]
    if tokens and all(t in labels or (not options and re.fullmatch(r"[a-n]", t)) for t in tokens):
        return True  # without published options: any option letters (A to N, as FinMME's)
    for label, body in labels.items():
        if body and norm in (
            body,
            *(f"{p} {body}" for p in (f"{label})", f"({label})", f"{label}.", f"{label}:")),
        ):
            return True
    return False


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
    fmt = question_format(question)
    reasons: list[str] = []
    checks: dict[str, bool] = {}
    ans = answer.strip()
    nums = _numbers(ans)
    numeric = fmt.kind in ("number", "percent", "count")

    if cfg.check_format:
        before = len(reasons)
        if not ans:
            reasons.append("The answer is empty: give the answer itself.")
        elif len(ans) > cfg.max_answer_chars:
            reasons.append(
                f"The answer has {len(ans)} characters (at most {cfg.max_answer_chars}): "
                "give only the answer."
            )
        elif fmt.kind == "choice" and not _options_named(ans, question.options):
            reasons.append("The question has options: answer with the option label(s) only (e.g. A).")
        elif fmt.kind == "yes_no" and not _YES_NO.match(ans):
            reasons.append("The question asks yes or no: start the answer with Yes or No.")
        elif numeric and not nums:
            reasons.append("The question asks for a number, but the answer has none.")
        elif numeric and len(nums) > 1:
            shown = ", ".join(n.text for n in nums[:4])
            reasons.append(f"The question asks for one number; the answer has {len(nums)} ({shown}).")
        elif numeric:
            n = nums[0]
            if fmt.kind == "count" and not float(n.value).is_integer():
                reasons.append(f"The question asks for a count: {n.text} is not a whole number.")
            if fmt.kind == "percent" and not n.percent and abs(n.value) < 1.0 and n.value != 0.0:
                reasons.append(
                    f"The question asks for a percentage and {n.text} has no % sign: if it is a fraction, "
                    "multiply it by 100 (0.123 is 12.3%); if it is already a percentage, add %."
                )
            if fmt.decimals is not None and n.decimals > fmt.decimals:
                reasons.append(f"The question asks for {fmt.decimals} decimal places; {n.text} shows more.")
        checks["format"] = len(reasons) == before

    if cfg.check_units:
        before = len(reasons)
        asked = SCALE_FACTORS[fmt.scale] if fmt.scale else None
        for n in nums:
            if n.percent and n.multiplier != 1.0:
                reasons.append(f"{n.text} is both a percentage and a scaled amount: keep one unit.")
            if asked is not None and n.multiplier not in (1.0, asked):
                reasons.append(
                    f"The question asks for the value in {fmt.scale}s; {n.text} uses another scale."
                )
        seen = "\n".join(
            s.text for s in evidence.sources if s.kind in ("question", "options", "context", "transcription")
        ).upper()
        for cur in sorted({n.currency for n in nums if n.currency}):
            if (
                cur not in seen
                and not (cur.endswith("$") and "$" in seen)
                and not (cur == "USD" and "$" in seen)
            ):
                reasons.append(f"The answer uses {cur}, a currency that the question and its data never use.")
        checks["units"] = len(reasons) == before

    traces: tuple[Trace, ...] = ()
    if cfg.check_trace:
        traces = tuple(_trace(n, evidence, fmt.kind == "percent", cfg) for n in nums)
        missing = [t.answer_number for t in traces if t.source is None]
        if missing:
            reasons.append(
                "These numbers do not appear in the context, a transcription or a tool output: "
                + ", ".join(missing[:6])
                + ". Compute them with a tool (or copy them from the data) before answering."
            )
        checks["trace"] = not missing

    return GateVerdict(ok=not reasons, reasons=tuple(reasons), checks=checks, traces=traces)
