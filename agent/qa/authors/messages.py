"""The messages the authors' code builds, rebuilt by our code from their texts
(:class:`agent.qa.authors.checkout.AuthorsCode`): the problem block of a user message, its
format instructions, the Base variant's message, the memory block and an entry's question, the
OCR prefix. The rules (which line when, escaping, joining) are theirs, written here in our code;
every word is read from their checkout. Differential tests run their functions from the pinned
snapshot beside these on the same items and require the same text.

- :func:`problem_block`: ``fm/retrieve.py`` ``render_user_message`` (tools variants) and
  ``render_baseline_message(..., include_instruction=False)`` (Base): the context, the options
  and the question, each escaped (``&``, ``<``, ``>``) and each only when present, then, for the
  tools variants, the instruction block: the line asking for ``terminate`` and the instructions
  derived from the gold answer (:func:`instruction_lines`; none unless a run reads the gold).
- :func:`instruction_lines`: ``build_instruction`` after its first line: the rule of
  :func:`agent.qa.data.gold_inputs.format_hints` (the same rule) in their words; ``example``
  off drops the rounding instruction's example number (which is the gold number itself).
- :func:`memory_block`: ``render_memory_block`` under the default strategy (``E``): the field
  guide, then per entry its question (:func:`entry_question`), its answer when it has one, its
  experience (findings, cautions), and the numbers of its images; the opt-out line last; joined
  to the user message by ``inject_memory_into_message``'s separator.
- :func:`ocr_prefixed`: ``fm/ocr_preprocess.py``: the transcriptions joined and prefixed, put
  before the user message (a transcription under 8 characters is left out, as theirs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agent.qa.authors.checkout import AuthorsCode

__all__ = [
    "escape",
    "problem_block",
    "instruction_lines",
    "hint_rule",
    "memory_block",
    "entry_question",
    "ocr_prefixed",
    "system_prompt",
    "policy_message",
]

_ESCAPE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_MAGNITUDE_WORDS = re.compile(r"\s*(billion|millions|million|thousands|thousand)\s*", re.IGNORECASE)
_ENTITY = re.compile(r"[A-Z][a-zA-Z.\s&()'-]{1,80}")
_LETTERS = re.compile(r"[A-H]+")
_OCR_MIN_CHARS = 8
_EXAMPLE = "\u2063example\u2063"  # a mark no answer holds: the example's place, cut out after rendering


def escape(text: str) -> str:
    """Their XML escaping of a field: ``&``, ``<`` and ``>``."""
    return text.translate(_ESCAPE)


def system_prompt(code: AuthorsCode, agent: str) -> str:
    """The system prompt of their ``finacumen`` agent (its step-2 text of the default memory
    strategy filled in) or of their ``ft_only`` agent."""
    if agent == "finacumen":
        return code.text("finacumen.system").format(step2_text=code.text("finacumen.step2"))
    if agent == "ft_only":
        return code.text("ft_only.system")
    raise ValueError(f"agent={agent!r}; allowed: finacumen, ft_only")


def policy_message(code: AuthorsCode, agent: str) -> str:
    """The policy message their agent appends at every step (before the step-limit notes)."""
    return code.text("finacumen.policy" if agent == "finacumen" else "ft_only.policy")


# ----------------------------------------------------------------------------- format instructions
def hint_rule(answer: str) -> list[tuple[str, dict[str, Any]]]:
    """The instructions ``build_instruction`` derives from the gold ``answer`` (written as
    their adapters write it), after its first line, as (text name, fields) pairs: the first
    rule that fits decides (true/false, option letters, an entity name, a sentence with
    numbers, a count), else the currency, percent, magnitude and basis-point lines, the
    precision and the closing line."""
    a = str(answer).strip()
    if a.lower() in ("true", "false", "yes", "no"):
        return [("hint.boolean", {}), ("hint.boolean_must", {})]
    if _LETTERS.fullmatch(a):
        one = len(a) == 1
        return [
            ("hint.letter" if one else "hint.letters", {}),
            ("hint.letter_must" if one else "hint.letters_must", {}),
        ]
    if _ENTITY.fullmatch(a) and not re.search(r"\d", a):
        return [("hint.entity", {}), ("hint.entity_must", {})]
    if len(a) >= 40 and re.search(r"\d", a):
        return [("hint.sentence", {}), ("hint.sentence_must", {})]
    if re.fullmatch(r"\d+", a):
        return [("hint.count", {}), ("hint.count_must", {})]
    out: list[tuple[str, dict[str, Any]]] = []
    out.append(("@currency", {"head": a.lstrip("-(").lstrip()}))
    if a.endswith("%"):
        out.append(("hint.percent", {}))
    for word, plural in (("billion", "billions"), ("million", "millions"), ("thousand", "thousands")):
        if word in a.lower():
            out.append(("hint.magnitude", {"label": plural}))
            break
    if "bps" in a.lower() or "basis point" in a.lower():
        out.append(("hint.bps", {}))
    out.append(("@precision", {"answer": a}))
    out.append(("hint.answer_must", {}))
    return out


def _precision(code: AuthorsCode, answer: str, example: bool) -> str:
    core = answer
    for mark, _ in code.table("hint.currencies"):
        if core.startswith(mark):
            core = core[len(mark) :].lstrip()
            break
    core = _MAGNITUDE_WORDS.sub("", core.rstrip("%")).strip().replace(",", "").strip()
    try:
        num = float(core)
    except ValueError:
        return code.text("hint.text")
    parts = core.lstrip("-(").rstrip(")").split(".")
    if len(parts) == 2 and parts[1]:
        dp = len(parts[1])
        if example:
            return code.render("hint.rounded", dp=dp, num=num)
        said = code.template("hint.rounded").render(dp=dp, num=_Example())
        return re.sub(r"\s*\([^()]*" + re.escape(_EXAMPLE) + r"[^()]*\)", "", said)
    return code.text("hint.integer")


class _Example:
    """Stands for the example number while the rounding line renders without it."""

    def __format__(self, spec: str) -> str:
        return _EXAMPLE


def instruction_lines(code: AuthorsCode, answer: str, *, example: bool = True) -> tuple[str, ...]:
    """``build_instruction``'s lines for the gold ``answer`` after its first (module docstring)."""
    out = []
    for name, fields in hint_rule(answer):
        if name == "@currency":
            for mark, label in code.table("hint.currencies"):
                if fields["head"].startswith(mark):
                    out.append(code.render("hint.currency", name=label))
                    break
        elif name == "@precision":
            out.append(_precision(code, fields["answer"], example))
        elif fields:
            out.append(code.render(name, **fields))
        else:
            out.append(code.text(name))
    return tuple(out)


# ----------------------------------------------------------------------------- the problem block
def problem_block(
    code: AuthorsCode,
    *,
    question: str,
    context: str = "",
    options: Sequence[str] = (),
    instructions: Sequence[str] | None = (),
) -> str:
    """The problem block of their user message; ``instructions`` None: Base's message (no
    instruction block), else the instruction block with the ``terminate`` line and these
    lines after it."""
    base = instructions is None
    pre = "base_problem" if base else "problem"
    lines = [code.text(f"{pre}.open")]
    if context:
        lines.append(code.render(f"{pre}.context", **{"#0": escape(context)}))
    if options:
        lines.append(code.render(f"{pre}.options", **{"#0": escape("\n".join(options))}))
    lines.append(code.render(f"{pre}.question", **{"#0": escape(question)}))
    lines.append(code.text(f"{pre}.close"))
    if not base:
        assert instructions is not None
        lines += [code.text("instruction.open"), code.text("hint.terminate"), *instructions]
        lines.append(code.text("instruction.close"))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- memory
def entry_question(code: AuthorsCode, question: str, context: str, has_images: bool) -> str:
    """A memory entry's question as their collector writes it: the question, its whole context
    and a note that a chart came with it."""
    out = question
    if context:
        out += code.text("entry.context") + context
    if has_images:
        out += code.text("entry.chart")
    return out


def memory_block(
    code: AuthorsCode,
    entries: Sequence[dict[str, Any]],
    image_numbers: dict[int, list[int]] | None = None,
) -> str:
    """Their memory block of ``entries`` (each ``question``, ``answer``, ``findings``,
    ``cautions``; the question as :func:`entry_question` writes it), with the image numbers of
    entry ``i`` (1-based, the entries' images go first) under ``image_numbers[i]``; "" without
    entries."""
    if not entries:
        return ""
    refs = image_numbers or {}
    lines = [code.text("memory.open"), code.text("memory.guide_open")]
    lines += [code.render("memory.guide_line", p=code.text(f"memory.guide_e{i}")) for i in range(7)]
    lines.append(code.text("memory.guide_close"))
    for i, e in enumerate(entries):
        lines.append(code.text("memory.entry_open"))
        lines.append(code.render("memory.question", **{"#0": escape(e.get("question") or "")}))
        if e.get("answer"):
            lines.append(code.render("memory.answer", **{"#0": escape(str(e["answer"]))}))
        lines.append(code.text("memory.experience_open"))
        findings, cautions = list(e.get("findings") or ()), list(e.get("cautions") or ())
        if findings:
            lines.append(code.text("memory.findings_open"))
            lines += [code.render("memory.finding", **{"#0": escape(str(f))}) for f in findings]
            lines.append(code.text("memory.findings_close"))
        if cautions:
            lines.append(code.text("memory.cautions_open"))
            lines += [code.render("memory.caution", **{"#0": escape(str(c))}) for c in cautions]
            lines.append(code.text("memory.cautions_close"))
        lines.append(code.text("memory.experience_close"))
        if i in refs:
            parts = code.text("memory.image_sep").join(str(n) for n in refs[i])
            lines.append(code.render("memory.images", parts=parts))
        lines.append(code.text("memory.entry_close"))
    lines += [code.text("memory.opt_out"), code.text("memory.close")]
    return "\n".join(lines)


def with_memory(code: AuthorsCode, block: str, message: str) -> str:
    """The user message with the memory block before it (the message alone without one)."""
    return block + code.text("memory.join") + message if block else message


def ocr_prefixed(code: AuthorsCode, transcriptions: Sequence[str], message: str) -> str:
    """The user message with the image transcriptions before it (unchanged without any)."""
    parts = [t.strip() for t in transcriptions if len(t.strip()) >= _OCR_MIN_CHARS]
    if not parts:
        return message
    return code.text("ocr.prefix") + code.text("ocr.join").join(parts) + "\n\n" + message
