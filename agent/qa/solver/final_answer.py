"""The final answer of a reply: one documented rule for every variant (:func:`extract_final_answer`).

The model-only Base variant (FinAcumen G.2: the backbone answering the question, no tools, no
memory) replies in free text; the tools variants submit ``final_answer`` with an ``answer``
field. Both go through the same rule, so the variants are scored on answers read the same way:

1. **Marker**: the text after the last ``Answer:`` (any case, also ``Final answer:``, with
   optional Markdown emphasis around the word, e.g. ``**Answer:**``), up to the end of that
   line; if that rest of the line is empty, the next non-empty line.
2. **Box**: else the content of the last ``\\boxed{...}`` (one level of nested braces).
3. **Last line**: else the text's last non-empty line (a one-line text is itself).

The result is stripped of surrounding whitespace, Markdown emphasis (``*``, ``_``) and
backticks, of a ``$...$`` math wrapper, and of one trailing ``.`` when a digit, ``%``, a
closing bracket or a scale word (thousand, million, billion, percent) precedes it (``33
million.`` and ``12.5%.`` lose it, ``Inc.`` keeps it). A text
with none of these yields ``""``.

A bare answer (``"33 million"``, ``"A, C"``) passes through unchanged, so a ``final_answer``
field reads as written; the rule only matters when a reply holds working as well.
"""

from __future__ import annotations

import re

__all__ = ["FINAL_ANSWER_RULE", "extract_final_answer"]

#: One line naming the rule, recorded with every run's protocol.
FINAL_ANSWER_RULE = "last 'Answer:' line, else last \\boxed{}, else the last non-empty line"

_MARKER = re.compile(r"(?:final\s+)?answer\s*[*_]*\s*[:：]", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_TRAILING_DOT = re.compile(
    r"(?:(?<=[\d%)\]])|(?<=thousand)|(?<=million)|(?<=billion)|(?<=percent))\.$", re.IGNORECASE
)


def _clean(text: str) -> str:
    out = text.strip()
    for _ in range(3):  # nested wrappers such as **`12.5`** or $\text{12}$ peel off in turn
        before = out
        out = out.strip().strip("*_`").strip()
        if len(out) >= 2 and out.startswith("$") and out.endswith("$"):
            out = out[1:-1].strip()
        if out == before:
            break
    return _TRAILING_DOT.sub("", out).strip()


def extract_final_answer(text: str) -> str:
    """The final answer in ``text`` by the module's rule ("" when there is none)."""
    if not text or not text.strip():
        return ""
    marks = list(_MARKER.finditer(text))
    if marks:
        rest = text[marks[-1].end() :]
        lines = rest.split("\n")
        first = _clean(lines[0])
        if first:
            return first
        for line in lines[1:]:
            if _clean(line):
                return _clean(line)
        return ""
    boxes = list(_BOXED.finditer(text))
    if boxes:
        return _clean(boxes[-1].group(1))
    lines = [ln for ln in text.split("\n") if ln.strip()]
    return _clean(lines[-1]) if lines else ""
