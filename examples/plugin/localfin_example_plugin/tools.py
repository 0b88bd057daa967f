"""``pct_change``: the percentage change from one value to another, a deterministic tool."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agent.qa.data.extensions import ToolPlugin

__all__ = ["pct_change", "PCT_CHANGE"]


def pct_change(args: Mapping[str, Any]) -> str:
    """(new - old) / |old| x 100, to 4 decimals; a zero or non-finite ``old`` is refused."""
    old, new = float(args["old"]), float(args["new"])
    if old == 0 or not (math.isfinite(old) and math.isfinite(new)):
        raise ValueError(f"old={old}, new={new}; allowed: finite numbers, old not 0")
    return f"{(new - old) / abs(old) * 100:.4f}"


PCT_CHANGE = ToolPlugin(
    name="pct_change",
    description='percentage change from old to new, args {"old": 120.0, "new": 150.0} -> 25.0000',
    args_schema={
        "type": "object",
        "properties": {"old": {"type": "number"}, "new": {"type": "number"}},
        "required": ["old", "new"],
        "additionalProperties": False,
    },
    run=pct_change,
)
