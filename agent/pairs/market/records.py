"""The run-folder format that Moira, every baseline and the report share.

An experiment folder holds ``config.toml`` (a copy), ``manifest.json``, ``journal.sqlite``
(every model call), ``run.log`` and one folder per run under ``runs/<run_id>/`` with:

* ``steps.parquet``: one row per finalized transition (:class:`StepRecord`), the input of
  the equity curves, drawdowns, action distributions and pair-switch plots;
* ``metrics.json``: :func:`run_summary` output: the run's identity (``kind`` = ``moira`` or
  ``baseline``, method, exposure, seed, variant), :class:`agent.pairs.market.metrics.Metrics`, and
  extra counters (tokens by call type, fallbacks, dates without candidates, policy updates);
* agent-specific files (e.g. Moira's ``trace.parquet`` of every state transition and
  ``training.json`` of its replay cycles).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from agent.pairs.market.metrics import Metrics
from localfin.errors import DamagedFileError, InputError
from localfin.files import atomic_target, read_parquet, write_text

__all__ = ["StepRecord", "write_steps", "read_steps", "run_summary", "write_json", "read_json"]


@dataclass(frozen=True)
class StepRecord:
    """One finalized transition of a run: decided at ``step`` (session ``date``), settled at
    the next session. Returns are fractions; ``pair`` is ``"A/B"`` or empty when none is held."""

    step: int
    date: str
    pair: str
    action: str
    ret_long_short: float
    ret_short_long: float
    realized: float
    equity: float
    best: str
    matched: bool
    lifecycle: str = ""
    fallback: bool = False
    note: str = ""


def write_rows(path: str | Path, rows: Sequence[Any], row_type: type) -> Path:
    """Write dataclass ``rows`` (of ``row_type``, its fields the columns) to a Parquet file
    (written to a temp name, then moved into place)."""
    import pandas as pd

    p = Path(path)
    cols = [f.name for f in fields(row_type)]
    frame = pd.DataFrame([asdict(r) for r in rows], columns=cols)
    with atomic_target(p) as tmp:
        frame.to_parquet(tmp, index=False)
    return p


def write_steps(path: str | Path, records: Sequence[StepRecord]) -> Path:
    """Write ``records`` to a Parquet file (written to a temp name, then moved into place)."""
    return write_rows(path, records, StepRecord)


def read_steps(path: str | Path) -> list[StepRecord]:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no steps file at {p}")
    frame = read_parquet(p)
    names = [f.name for f in fields(StepRecord)]
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise InputError(f"{p} lacks columns {missing}")
    return [StepRecord(**{n: row[n] for n in names}) for row in frame.to_dict("records")]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def run_summary(
    *,
    run_id: str,
    kind: str,
    method: str,
    exposure: str,
    seed: int | None,
    metrics: Metrics,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``metrics.json`` document of a run (NaN written as null)."""
    return _clean(
        {
            "run_id": run_id,
            "kind": kind,
            "method": method,
            "exposure": exposure,
            "seed": seed,
            "metrics": metrics.to_dict(),
            "extra": dict(extra or {}),
        }
    )


def write_json(path: str | Path, doc: Mapping[str, Any]) -> Path:
    """Write a JSON document atomically (temp file, then rename), NaN as null."""
    return write_text(path, json.dumps(_clean(dict(doc)), indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> dict[str, Any]:
    """A run folder's JSON document; a missing file is an InputError, a torn one (not valid
    JSON) a DamagedFileError naming it."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DamagedFileError(f"cannot read JSON {p}: {exc}: torn or not written by localfin") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read JSON {p}: {exc}") from exc
