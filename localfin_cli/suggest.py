"""Suggestions for a mistyped choice ("did you mean ...?") on every command's one error line.

A refusal of a value names it and the allowed values (``--gpu 'h10'; allowed: h100, h200, ...``,
``unknown model key 'qwen3-4'; allowed: ...``). :func:`with_suggestion` reads the quoted value and
the list after ``allowed:`` back from such a message and, when one allowed value is close (the
same word in other case, or :func:`difflib.get_close_matches` at its default cutoff), appends
``; did you mean 'h100'?``. A message of another shape, or a value with nothing close, is left as
it is. Mistyped commands get theirs from typer (``No such command 'kernel'. Did you mean
'kernels'?``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

__all__ = ["closest", "with_suggestion"]

#: the first quoted value of a message, then (in the same clause) the allowed values
_REFUSAL = re.compile(r"""(?P<q>['"])(?P<value>[^'"]{1,80})(?P=q)[^;]*;\s*allowed:\s*(?P<allowed>[^;()]+)""")


def closest(value: str, choices: Sequence[str]) -> str | None:
    """The choice ``value`` most likely meant: the same word in other case, else the closest one
    by :func:`difflib.get_close_matches`; None when nothing is close."""
    lowered = {c.lower(): c for c in choices}
    if value.lower() in lowered and lowered[value.lower()] != value:
        return lowered[value.lower()]
    found = difflib.get_close_matches(value.lower(), list(lowered), n=1)
    return lowered[found[0]] if found and lowered[found[0]] != value else None


def with_suggestion(message: str) -> str:
    """``message`` with ``; did you mean 'X'?`` appended when it refuses a value that is close to
    one of the allowed ones (module doc)."""
    m = _REFUSAL.search(message)
    if m is None or "did you mean" in message.lower():
        return message
    choices = [c.strip().strip("'\"`") for c in re.split(r",|\bor\b", m["allowed"])]
    choices = [c for c in choices if re.fullmatch(r"[\w.+-]+", c)]
    guess = closest(m["value"], choices)
    return f"{message}; did you mean {guess!r}?" if guess else message
