"""The protocol ledger of both papers: every setting that can move a reported number, its value
in each config and where that value comes from (paper, the authors' code, or ours, with the
reason)."""

from __future__ import annotations

__all__ = ["book", "values", "effective", "resolve", "render", "locate"]
