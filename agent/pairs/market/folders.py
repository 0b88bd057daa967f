"""The tables of every run folder under a folder: one run, an experiment, a matrix, a rolling
study (:mod:`agent.pairs.market.tables` says what each table holds).

:func:`write_tables` finds every run folder (``metrics.json`` + ``steps.parquet``; hidden folders
and ``report`` skipped), reads its tape (or has ``rebuild`` make one for a folder written before
tapes existed), checks that the tape reproduces the run's ``steps.parquet`` under the run's own
execution settings, and writes ``equity_curve``, ``trades`` and ``llm_usage`` into the run's
folder (or its mirror under ``out``), ``runs`` into every experiment folder (the parent of
``runs/``) and, when the root is above several experiments (a matrix, a rolling study), one
``runs`` of all of them at the root.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.market.records import StepRecord, read_json, read_steps
from agent.pairs.market.tables import (
    EQUITY_COLUMNS,
    EQUITY_FILE,
    RUNS_FILE,
    TRADE_COLUMNS,
    TRADES_FILE,
    USAGE_COLUMNS,
    USAGE_FILE,
    check_tape,
    equity_rows,
    run_execution,
    run_row,
    trades,
    usage_rows,
    write_table,
)
from agent.pairs.market.tape import (
    DECISIONS_FILE,
    PRICES_FILE,
    Decision,
    PriceTape,
    has_tape,
    read_decisions,
    read_prices,
)
from localfin.errors import DamagedFileError, InputError, LocalfinError, WriteFailedError

__all__ = ["Rebuild", "TablesResult", "find_runs", "experiment_of", "load_tape", "write_tables"]

log = logging.getLogger(__name__)

#: (run folder, metrics.json document, steps) -> the run's tape, for folders written without one
Rebuild = Callable[[Path, dict[str, Any], Sequence[StepRecord]], tuple[list[Decision], PriceTape]]
_SKIP = {"report", "__pycache__"}


@dataclass
class TablesResult:
    """What :func:`write_tables` wrote: files, the runs' rows, and the runs it could not write
    (folder, reason)."""

    files: list[Path] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)


def find_runs(root: str | Path) -> list[Path]:
    """Every run folder at or below ``root``, sorted."""
    r = Path(root)
    if not r.is_dir():
        raise InputError(f"{r} is not a folder; allowed: a run, experiment or matrix folder")
    out = []
    for dirpath, dirnames, filenames in os.walk(r):
        dirnames[:] = sorted(n for n in dirnames if not n.startswith(".") and n not in _SKIP)
        if "metrics.json" in filenames and "steps.parquet" in filenames:
            out.append(Path(dirpath))
    return sorted(out)


def experiment_of(run_dir: Path) -> Path:
    """The experiment folder of a run (the parent of ``runs/``; the run folder itself otherwise)."""
    return run_dir.parent.parent if run_dir.parent.name == "runs" else run_dir


def load_tape(run_dir: str | Path) -> tuple[list[Decision], PriceTape] | None:
    d = Path(run_dir)
    if not has_tape(d):
        return None
    return read_decisions(d / DECISIONS_FILE), read_prices(d / PRICES_FILE)


def _backbone(doc: dict[str, Any], manifest: dict[str, Any] | None) -> str:
    extra = doc.get("extra") if isinstance(doc.get("extra"), dict) else {}
    cfg = extra.get("config") if isinstance(extra.get("config"), dict) else {}
    for m in (extra.get("backbone"), extra.get("model"), cfg.get("model")):
        if isinstance(m, str) and m:
            return m
    if doc.get("kind") == "moira" and manifest and isinstance(manifest.get("model"), dict):
        return str(manifest["model"].get("key") or "")
    return ""


def _manifest(folder: Path, cache: dict[Path, dict[str, Any] | None]) -> dict[str, Any] | None:
    if folder not in cache:
        p = folder / "manifest.json"
        try:
            cache[folder] = read_json(p) if p.is_file() else None
        except DamagedFileError:
            raise
        except InputError:
            cache[folder] = None
    return cache[folder]


def write_tables(
    root: str | Path, *, out: str | Path | None = None, fmt: str = "csv", rebuild: Rebuild | None = None
) -> TablesResult:
    """Write the tables of every run under ``root`` (module doc); ``out``: a folder mirroring
    ``root`` to write into instead (``root`` is then left untouched); ``fmt``: csv or parquet.
    A run without a tape and without ``rebuild`` is skipped and listed."""
    base = Path(root)
    dest_root = Path(out) if out is not None else base
    res = TablesResult()
    manifests: dict[Path, dict[str, Any] | None] = {}
    by_group: dict[str, list[dict[str, Any]]] = {}
    for run_dir in find_runs(base):
        rel = run_dir.relative_to(base)
        exp = experiment_of(run_dir)
        group = os.path.relpath(exp, base).replace(os.sep, "/") if exp != base else "."
        try:
            doc = read_json(run_dir / "metrics.json")
            steps = read_steps(run_dir / "steps.parquet")
            tape = load_tape(run_dir)
            if tape is None:
                if rebuild is None:
                    raise InputError("no decisions.parquet / prices.parquet (run `localfin export` on it)")
                tape = rebuild(run_dir, doc, steps)
                res.rebuilt.append(str(rel))
            decisions, prices = tape
            settings = run_execution(doc)
            fills = check_tape(run_dir, steps, decisions, prices, settings)
            dest = dest_root / rel
            res.files.append(
                write_table(equity_rows(decisions, fills), EQUITY_COLUMNS, dest / EQUITY_FILE, fmt)
            )
            res.files.append(
                write_table(
                    trades(decisions, fills, prices, settings), TRADE_COLUMNS, dest / TRADES_FILE, fmt
                )
            )
            res.files.append(write_table(usage_rows(run_dir, doc), USAGE_COLUMNS, dest / USAGE_FILE, fmt))
            row = run_row(
                run_dir,
                doc,
                decisions,
                prices,
                fills,
                group=group,
                backbone=_backbone(doc, _manifest(exp, manifests)),
            )
        except (WriteFailedError, DamagedFileError):
            raise  # a full disk or a torn file stops here: a table left out would go unseen
        except LocalfinError as exc:
            log.warning("no tables for %s: %s", run_dir, exc)
            res.skipped.append((str(rel), str(exc)))
            continue
        res.rows.append(row)
        by_group.setdefault(group, []).append(row)
    columns = list(res.rows[0]) if res.rows else ["group", "run_id"]
    for group, rows in by_group.items():
        folder = dest_root if group == "." else dest_root / group
        res.files.append(write_table(rows, columns, folder / RUNS_FILE, fmt))
    if len(by_group) > 1 or (by_group and "." not in by_group):
        res.files.append(write_table(res.rows, columns, dest_root / RUNS_FILE, fmt))
    return res
