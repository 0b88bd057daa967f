"""Top-level `localfin chat`, `localfin serve` and `localfin demo` commands."""

from __future__ import annotations

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Attach the top-level serving commands to ``app``."""
