"""`localfin pairs screen --json` and `--out FILE`: the screen of one date as a JSON document (the
date asked, the session screened, the column, the pool, the candidates in rank order and, with
`--all`, every other pair with the reason it is not a candidate). An undefined number (a
half-life of a spread that does not revert, a p-value of a pair without enough sessions) is
null."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

__all__ = ["screen_document", "write_screen"]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def screen_document(res: Any, price_field: str, show_all: bool) -> dict[str, Any]:
    """The JSON document of a :class:`~agent.pairs.screen.causal.ScreenResult` (module doc)."""
    n_ok = sum(p.eligible for p in res.pairs)
    doc: dict[str, Any] = {
        "date": str(res.date),
        "session": str(res.session),
        "price_field": price_field,
        "pool": list(res.pool),
        "pairs": len(res.pairs),
        "ranked": n_ok,
        "excluded": len(res.pairs) - n_ok,
        "candidates": [_clean(asdict(c)) for c in res.candidates],
    }
    if show_all:
        doc["others"] = [
            _clean({**asdict(p), "reason": p.reason or "ranked below top"})
            for p in res.pairs[len(res.candidates) :]
        ]
    return doc


def write_screen(doc: dict[str, Any], path: Path) -> Path:
    """Write ``doc`` to ``path`` (JSON, atomically: a failed write leaves what was there)."""
    from localfin.files import write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(doc, indent=1) + "\n")
    return path
