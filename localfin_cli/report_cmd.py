"""`localfin report RUN_DIR`: the static HTML report of an experiment's run folders."""

from __future__ import annotations

from pathlib import Path

import typer

from localfin.errors import InputError
from localfin_cli._common import note, progress_for, quiet_run, result

__all__ = ["register", "report"]


def _window(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError as exc:
        raise InputError(f"--window={text!r}; allowed: WIDTHxHEIGHT in pixels, e.g. 1280x4000") from exc
    return w, h


def report(
    ctx: typer.Context,
    run_dir: Path = typer.Argument(
        ..., help="An experiment folder (runs/RUN_ID/...), a run folder, or a folder above several."
    ),
    out: Path | None = typer.Option(None, "--out", help="Report folder (default: RUN_DIR/report)."),
    screenshot: Path | None = typer.Option(
        None, "--screenshot", help="Also render the page in headless Chromium into this PNG."
    ),
    window: str = typer.Option("1280x4000", "--window", help="Browser window for --screenshot, WxH pixels."),
    scale: float = typer.Option(
        1.0, "--scale", help="Scale the screenshot by this factor (0-1] and reduce it to 256 colours."
    ),
    rolling: int = typer.Option(10, "--rolling-window", help="Transitions in the rolling accuracy window."),
) -> None:
    """Write RUN_DIR/report/index.html with PNG figures: results tables per setting (median-return
    run, spread across seeds, Sharpe ± SE), equity and drawdowns against every baseline, pair
    selection, actions, pair switches, counterfactual accuracy, training dynamics, break scores,
    tokens and fallbacks. Opens offline."""
    from agent.report.build import build_report

    size = _window(window) if screenshot is not None else None
    if screenshot is not None and not 0 < scale <= 1:
        raise InputError(f"--scale={scale}; allowed: 0 < scale <= 1")
    if not run_dir.is_dir():
        raise InputError(f"RUN_DIR={run_dir} is not a folder; allowed: a run folder or an experiment folder")
    with quiet_run(ctx, "report", run_dir, announce=False) as rl:
        res = build_report(run_dir, out, rolling_window=rolling, progress=progress_for(rl))
        for text in res.notes:
            note(rl, f"note: {text}")
        note(rl, f"{res.n_runs} runs, {res.n_sections} results tables, {len(res.figures)} figures")
        result(rl, str(res.html))
        if screenshot is not None and size is not None:
            from agent.report.screenshot import screenshot as shoot
            from agent.report.screenshot import shrink_png

            png = shoot(res.html, screenshot, width=size[0], height=size[1])
            if scale < 1:
                shrink_png(png, png, scale=scale)
            result(rl, str(png))


def register(app: typer.Typer) -> None:
    """Attach ``localfin report`` to ``app``."""
    app.command("report")(report)
