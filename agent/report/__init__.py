"""The report: reads the run folders that :mod:`agent.pairs` writes and renders a static HTML page
with PNG figures (``localfin report RUN_DIR``). Imports nothing from the agents' code beyond the
shared records and metrics; names are re-exported lazily so ``import agent.report`` stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ReportResult", "build_report", "find_chromium", "screenshot"]

_WHERE = {
    "ReportResult": "agent.report.build",
    "build_report": "agent.report.build",
    "find_chromium": "agent.report.screenshot",
    "screenshot": "agent.report.screenshot",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'agent.report' has no attribute {name!r}")
