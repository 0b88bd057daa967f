"""One module per benchmark layout; :func:`agent.qa.data.datasets.load_items` is the entry point."""

from __future__ import annotations

__all__: list[str] = []
