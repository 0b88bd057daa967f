"""FinMME's official verdict, rule for rule as the benchmark's ``eval.py`` (``official``).

The rules are those of ``check_answer``, ``extract_result`` and ``normalize_response`` in
``eval.py`` of luo-junyu/FinMME at 702cb3a, read and written anew here;
``tests/agent/qa/data/finmme_scores.jsonl`` holds that function's verdicts on predictions over
FinMME-shaped items (``tests/agent/qa/data/README.md``), and the tests assert the same verdict
on every row.

1. The reply's answer is the first run of non-space characters after ``Answer`` and a colon
   (any case, spaces around the colon allowed); no such run: the empty answer. So only the
   first token counts: ``Answer: A, C`` is ``A,``, ``Answer: 12.5 million`` is ``12.5``.
2. It is cleaned by removing, in this order, ``**``, ``:``, ``$\\boxed{``, ``}$``, ``\\$``, ``$``,
   ``{`` and ``\\boxed``.
3. A numerical item: each side (the cleaned answer and the released answer text) keeps only
   its digits (any Unicode digit), dots and minus signs, and is read as a float; right when the
   two differ by at most the item's ``tolerance``. A side that does not read as a float
   (nothing left, two dots, a stray minus, a digit Python's float does not take), or a
   tolerance that is not a number (a row whose ``tolerance`` is null), makes the item wrong.
4. Any other item: the sets of letters A to N in each side (upper-cased) must be equal (the
   released answer ``A,C`` is {A, C}; an answer with no letter is the empty set).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["finmme_official_answer", "finmme_official"]

_ANSWER = re.compile(r"(?i)Answer\s*:\s*([^\s\n]+)")
_REMOVED = ("**", ":", "$\\boxed{", "}$", "\\$", "$", "{", "\\boxed")
_LETTERS = set("ABCDEFGHIJKLMN")


def finmme_official_answer(reply: str) -> str:
    """The answer the official eval reads from a reply (steps 1 and 2)."""
    m = _ANSWER.search(reply or "")
    text = m.group(1) if m else ""
    for mark in _REMOVED:
        text = text.replace(mark, "")
    return text


def _number(text: str) -> float:
    return float("".join(c for c in text if c.isdigit() or c in ".-"))


def finmme_official(question_type: str, gold: Any, reply: str, *, tolerance: Any = 0.0) -> bool:
    """The official verdict on ``reply`` for an item of ``question_type`` (as released) whose
    released answer is ``gold`` (None: empty) and ``tolerance`` (as released, None allowed)."""
    pred = finmme_official_answer(reply)
    correct = "" if gold is None else str(gold)
    if question_type == "numerical":
        try:
            return abs(_number(pred) - _number(correct)) <= float(tolerance)
        except (ValueError, TypeError):
            return False
    return {c for c in pred.upper() if c in _LETTERS} == {c for c in correct.upper() if c in _LETTERS}
