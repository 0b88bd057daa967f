"""The one number formatter of localfin's tables (run summaries, the matrix summary, the report).

Undefined numbers (None, NaN, infinities, non-numbers) are written ``n/a``; fractions are shown
as percentages with a sign, other figures with two decimals.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NA", "is_number", "fmt_pct", "fmt_num", "fmt_int", "fmt_pm", "fmt_range"]

NA = "n/a"


def is_number(x: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_pct(x: Any, digits: int = 2, signed: bool = True) -> str:
    """A fraction as a percentage (``+12.34%``); ``n/a`` when undefined."""
    if not is_number(x):
        return NA
    return f"{100 * x:+.{digits}f}%" if signed else f"{100 * x:.{digits}f}%"


def fmt_num(x: Any, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals; ``n/a`` when undefined."""
    return f"{x:.{digits}f}" if is_number(x) else NA


def fmt_int(x: Any) -> str:
    """``x`` as a whole number with thousands separators; ``n/a`` when undefined."""
    return f"{int(x):,}" if is_number(x) else NA


def fmt_pm(x: Any, se: Any, digits: int = 2) -> str:
    """``1.23 ± 0.45``; the value alone when the error is undefined; ``n/a`` without a value."""
    if not is_number(x):
        return NA
    return f"{x:.{digits}f} ± {se:.{digits}f}" if is_number(se) else f"{x:.{digits}f}"


def fmt_range(lo: Any, hi: Any, pct: bool = True) -> str:
    """``lo .. hi`` (percentages or 2-decimal numbers); ``n/a`` when undefined."""
    f = fmt_pct if pct else fmt_num
    if not (is_number(lo) and is_number(hi)):
        return NA
    return f"{f(lo)} .. {f(hi)}"
