"""FinAcumen's deterministic tools, one module each; :mod:`agent.qa.tools.base` is their contract."""

from __future__ import annotations

__all__: list[str] = []
