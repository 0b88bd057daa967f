"""Experience bank (FinAcumen memory): entries in SQLite, vectors in hnswlib, exact threshold
retrieval, snapshot analytics. Import the submodules; this package imports nothing heavy."""

from __future__ import annotations

__all__ = [
    "analytics",
    "embedder",
    "errors",
    "exact",
    "index",
    "plots",
    "retrieval",
    "schema",
    "snapshots",
    "store",
]
