"""Errors raised by the kernels package."""

from __future__ import annotations

from serving.errors import ConfigError

__all__ = ["KernelInputError"]


class KernelInputError(ConfigError):
    """An input array or parameter of a kernel is invalid; the message names it and what is allowed.

    Raised for NaN in a single-window input, mismatched lengths, a series shorter than the
    minimum, a window below its minimum, or a lag cap out of range. Degenerate but valid data
    (a constant series, perfectly collinear legs) is not an error: it gives NaN results.
    """
