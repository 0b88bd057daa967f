"""How the authors' code reads answers and grades them, as rules in our code (no text of theirs
is needed): each function names the place in their code whose rule it follows.

- :func:`base_answer`: their Base reply (``ft/variant/baseline_raw.py`` ``_extract_answer``):
  the text after the first bold ``Final Answer:`` marker to the end of its line, else the last
  non-empty line when it is at most 200 characters, else nothing.
- :func:`terminate_answer`: a ``terminate`` call's answer (``ft/variant/finacumen.py``
  ``_extract_final_answer``): ``final_answer``, else ``status``, ``answer`` or ``result``, the
  first that is set, as a string, stripped; arguments that are not a JSON object give none.
- :func:`reply_answer`: their reading of an agent that never terminated, after the calls: a
  bold ``Final Answer:`` line of an assistant message, newest first; else the newest assistant
  message's last line that is not a lone tag: its ``final_answer:``/``answer =`` value, or the
  line itself when at most 200 characters (older messages when none qualifies).
- :func:`final_answer`: the answer of a finished conversation: the newest ``terminate`` call's
  (:func:`terminate_answer`), else :func:`reply_answer`, else the step-limit answer given.
- :func:`last_number`: the step-limit answer (``ft/agent/base.py``
  ``_extract_last_computed_value``): the last number of the newest tool output that has one.
- :func:`stuck_number`: the zero-tool stop's answer (``ft/agent/toolcall.py``
  ``_try_extract_answer_from_stuck``): in the newest assistant message with text, the number
  after ``answer``/``result``/``margin``/``value`` and ``is``/``=``/``:``, else after
  ``terminate``, else its last number, as a float; their second pattern (``final_answer`` and
  a number) has no group to read, so a message it matches first raises where theirs raises
  (:class:`NoSuchGroup`).
- :func:`close_enough`: their bank's correctness (``fm/cross_verify.py`` ``_check_correct``):
  equal ignoring case, or both numbers (currency marks, ``%`` as a hundredth, magnitude words,
  commas and brackets read) within 1 % of the gold (exactly 0 for a gold of 0), also with the
  percent sign on one side only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "NoSuchGroup",
    "base_answer",
    "terminate_answer",
    "reply_answer",
    "final_answer",
    "last_number",
    "stuck_number",
    "close_enough",
    "parse_number",
]

_BOLD = re.compile(r"\*\*Final Answer:\*\*\s*(.+?)(?:\n|$)", re.IGNORECASE)
_BOLD_EXACT = re.compile(r"\*\*Final Answer:\*\*\s*(.+?)(?:\n|$)")
_TAG_LINE = re.compile(r"^</?[A-Za-z_|][^>]*>$")
_NAMED = re.compile(r"(?:final_answer|voted_answer|answer)\s*[:=]\s*(.+)", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?\d+\.?\d*")
_STUCK = (
    re.compile(r"(?:answer|result|margin|value)\s*(?:is|=|:)\s*([-+]?\d+\.?\d*)", re.IGNORECASE),
    re.compile(r"final_answer\s*[-+]?\d+\.?\d*", re.IGNORECASE),
    re.compile(r"terminate.*?([-+]?\d+\.?\d*)", re.IGNORECASE),
)
_LINE_CAP = 200


class NoSuchGroup(IndexError):
    """Their stuck-answer reading asked a pattern without a group for its group (their loop
    records the error as the step's reply and goes on)."""


def base_answer(text: str) -> str:
    """Their Base reading (module docstring)."""
    m = _BOLD.search(text)
    if m:
        return m.group(1).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and len(lines[-1]) <= _LINE_CAP:
        return lines[-1]
    return ""


def terminate_answer(arguments: str) -> str:
    """The answer of a ``terminate`` call with JSON ``arguments`` ("" when it gives none)."""
    try:
        args = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        args = {}
    if not isinstance(args, Mapping):
        return ""
    ans = args.get("final_answer") or args.get("status") or args.get("answer") or args.get("result")
    return str(ans).strip() if ans else ""


def reply_answer(assistant_texts: Sequence[str]) -> str:
    """The answer their reading finds in the assistant messages' texts (oldest first) when no
    ``terminate`` call gave one ("" when none)."""
    texts = [t for t in assistant_texts if t]
    for t in reversed(texts):
        m = _BOLD_EXACT.search(t)
        if m:
            return m.group(1).strip()
    for t in reversed(texts):
        for line in reversed(t.strip().splitlines()):
            line = line.strip()
            if not line or _TAG_LINE.match(line):
                continue
            m = _NAMED.match(line)
            if m:
                return m.group(1).strip()
            if len(line) <= _LINE_CAP:
                return line
    return ""


def final_answer(messages: Sequence[Any], forced: str = "") -> tuple[str, bool]:
    """The answer their reading takes from ``messages`` (each with ``role``, ``content`` and
    ``tool_calls`` of ``name``/``arguments``, oldest first) and whether a ``terminate`` call gave
    it; ``forced``: the step-limit answer, their last resort."""
    for m in reversed(messages):
        for tc in m.tool_calls or ():
            if tc.name == "terminate":
                ans = terminate_answer(tc.arguments)
                if ans:
                    return ans, True
    said = reply_answer([m.content or "" for m in messages if m.role == "assistant"])
    return (said or str(forced or "").strip()), False


def last_number(tool_outputs: Sequence[str]) -> str:
    """The last number of the newest tool output that has one (outputs oldest first)."""
    for out in reversed(tool_outputs):
        nums = _NUMBER.findall(out or "")
        if nums:
            return nums[-1]
    return ""


def stuck_number(assistant_texts: Sequence[str]) -> float | None:
    """The number their zero-tool stop reads (module docstring); None when no assistant text
    has one. Raises :class:`NoSuchGroup` where theirs raises."""
    for content in reversed([t for t in assistant_texts if t]):
        for i, pat in enumerate(_STUCK):
            m = pat.search(content)
            if m:
                if i == 1:
                    raise NoSuchGroup("no such group")
                try:
                    return float(m.group(1).replace(",", ""))
                except ValueError:
                    continue
        nums = _NUMBER.findall(content)
        if nums:
            try:
                return float(nums[-1].replace(",", ""))
            except ValueError:
                continue
    return None


_MAGNITUDE = (
    ("billion", 1e9), ("billions", 1e9), ("million", 1e6), ("millions", 1e6),
    ("thousand", 1e3), ("thousands", 1e3),
)  # fmt: skip
_MARKS = ("$", "€", "¥", "£", "₹", "₩", "hk$", "a$", "c$", "s$", "r$")
_CLEAN = re.compile(r"[,$%€¥£\s]")


def parse_number(text: str) -> float | None:
    """A number as their bank's check reads it (currency mark, ``%`` as a hundredth, a trailing
    magnitude word, commas and brackets); None when it does not read as one."""
    t = text.strip().lower()
    for sym in _MARKS:
        if t.startswith(sym):
            t = t[len(sym) :].strip()
            break
    pct = t.endswith("%")
    if pct:
        t = t[:-1].strip()
    scale = 1.0
    for word, mag in _MAGNITUDE:
        if t.endswith(word):
            t, scale = t[: -len(word)].strip(), mag
            break
    t = _CLEAN.sub("", t).strip(")(").strip()
    if not t:
        return None
    try:
        v = float(t)
    except (ValueError, OverflowError):
        return None
    return (v / 100.0 if pct else v) * scale


def close_enough(predicted: str, gold: str) -> bool:
    """Their bank's correctness (module docstring)."""
    if not predicted or not gold:
        return False
    p, g = predicted.strip().lower(), gold.strip().lower()
    if p == g:
        return True
    pn, gn = parse_number(p), parse_number(g)
    if pn is None or gn is None:
        return False
    if gn == 0:
        return abs(pn) < 1e-9
    if abs(pn - gn) / abs(gn) < 0.01:
        return True
    p_pct, g_pct = predicted.rstrip().endswith("%"), gold.rstrip().endswith("%")
    if p_pct != g_pct:
        ap, ag = pn * 100.0 if p_pct else pn, gn * 100.0 if g_pct else gn
        if ag == 0:
            return abs(ap) < 1e-9
        return abs(ap - ag) / abs(ag) < 0.01
    return False


def as_text(value: Any) -> str:
    """A value as Python's ``str`` writes it (their answers are ``str(...)`` of what they read)."""
    return str(value)
