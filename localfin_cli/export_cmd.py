"""`localfin export RUN_OR_EXPERIMENT --format csv|parquet --out DIR`: every run's tables
(equity curve, trades, LLM usage) and the runs table, for any run folder, older ones included."""

from __future__ import annotations

from pathlib import Path

import typer

from localfin.errors import InputError
from localfin_cli._common import note, result

__all__ = ["register", "export"]

_FORMATS = ("csv", "parquet")


def export(
    path: Path = typer.Argument(..., help="A run folder, an experiment folder, or a folder above several."),
    out: Path = typer.Option(..., "--out", help="Where the tables go (the input's folder layout)."),
    fmt: str = typer.Option("csv", "--format", help="csv or parquet."),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="Market store to rebuild the tape of a folder written without one (default: its manifest's).",
    ),
) -> None:
    """Write equity_curve, trades and llm_usage for every run under PATH, and runs (one row per
    run: settings, metrics, metrics with frictions, tokens) per experiment and for the whole input."""
    from agent.pairs.experiment.export import export as run_export

    if fmt not in _FORMATS:
        raise InputError(f"--format={fmt!r}; allowed: {', '.join(_FORMATS)}")
    if not path.is_dir():
        raise InputError(f"PATH={path} is not a folder; allowed: a run, experiment or matrix folder")
    res = run_export(path, out, fmt=fmt, store=store)
    for rel, why in res.skipped:
        note(None, f"skipped {rel}: {why}")
    if res.rebuilt:
        note(None, f"{len(res.rebuilt)} run(s) written before tapes existed: tape rebuilt from the store")
    note(None, f"{len(res.rows)} runs, {len(res.files)} files")
    result(None, str(out))


def register(app: typer.Typer) -> None:
    """Attach ``localfin export`` to ``app``."""
    app.command("export")(export)
