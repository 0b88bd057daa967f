"""Errors raised by the kernels package.

The kernels are leaf code and import nothing else of ours, so their one error class subclasses
:class:`ValueError` directly; the CLI maps any ``ValueError`` to exit code 2 (bad input).
"""

from __future__ import annotations

__all__ = ["KernelInputError"]


class KernelInputError(ValueError):
    """An input array or parameter of a kernel is invalid; the message names it and what is allowed.

    Raised for NaN in a single-window input, mismatched lengths, a series shorter than the
    minimum, a window below its minimum, or a lag cap out of range. Degenerate but valid data
    (a constant series, perfectly collinear legs) is not an error: it gives NaN results.
    """
