"""Reproducing the seed papers' tables: shipped configs (``configs/*.toml``), pre-flight checks,
full runs through the experiment matrix and the QA evaluation, CPU smoke runs, and a report
that puts the paper's published figures beside ours. Submodules are imported where used."""

from __future__ import annotations

__all__: list[str] = []
