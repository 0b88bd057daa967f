"""The FinAcumen authors' released code read at run time from a user's checkout: its prompt
texts and tables found with ``ast`` and checked against the pinned commit, and the messages their
code builds from them, rebuilt by our code."""

from __future__ import annotations

__all__: list[str] = []
