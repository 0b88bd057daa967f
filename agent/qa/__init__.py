"""FinAcumen: a tool-grounded ReAct agent for financial QA with a selective experience memory."""

from __future__ import annotations

__all__: list[str] = []
