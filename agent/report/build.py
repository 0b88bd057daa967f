"""``localfin report RUN_DIR``: read the run folders, compute, draw, write the page.

:func:`build_report` writes ``index.html`` and ``figures/*.png`` into a temporary sibling folder
and moves it into place (default ``RUN_DIR/report``), so a reader never sees a half-written
report and a failed build leaves the previous one untouched.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent.pairs.market.metrics import ZERO_VARIANCE_MARK
from agent.report import figures as fg
from agent.report import series as sr
from agent.report.glance import glance_section
from agent.report.happened import happened_section
from agent.report.html import (
    GENERATOR,
    Cell,
    esc,
    figure,
    fmt_int,
    fmt_num,
    fmt_pct,
    note,
    page,
    sharpe_cell,
    table,
)
from agent.report.load import ReportInput, load_input
from agent.report.panels import PanelContext, section_panels
from agent.report.qa import qa_section
from agent.report.repro import find_reproductions, repro_section
from agent.report.tables import (
    RunResult,
    Section,
    build_sections,
    build_settings,
    exposure_name,
    method_name,
    run_results,
)
from agent.report.usage import engine_token_rows, fallback_rows
from localfin.errors import InputError
from localfin.files import write_failed
from localfin.progress import NULL_PROGRESS, Progress

__all__ = ["ReportResult", "build_report", "render", "is_report_dir"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportResult:
    """What :func:`build_report` wrote: the folder, the page, the figures; runs and sections
    shown, runs skipped, and notes (mismatches, unreadable files)."""

    out_dir: Path
    html: Path
    figures: tuple[Path, ...]
    n_runs: int
    n_sections: int
    skipped: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]


def _window_comparison(sections: list[Section], ctx: PanelContext, prefix: str) -> str:
    """Return and Sharpe of every setting of one test window under every exposure."""
    labels: list[str] = []
    exposures: list[str] = []
    cells: dict[tuple[str, str], RunResult] = {}
    for sec in sections:
        if sec.exposure not in exposures:
            exposures.append(sec.exposure)
        for s in sec.settings:
            if s.label not in labels:
                labels.append(s.label)
            cells[(s.label, sec.exposure)] = s.representative
    shape = (len(labels), len(exposures))
    ret, shp, se = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    for i, lab in enumerate(labels):
        for j, e in enumerate(exposures):
            rr = cells.get((lab, e))
            if rr is not None:
                ret[i, j], shp[i, j], se[i, j] = (
                    rr.metrics.cumulative_return,
                    rr.metrics.sharpe,
                    rr.metrics.sharpe_se,
                )
    p = fg.plot_return_sharpe(
        labels, [exposure_name(e) for e in exposures], ret, shp, se, ctx.path(f"{prefix}-compare.png")
    )
    ctx.written.append(p)

    return figure(
        ctx.rel(p),
        "return and Sharpe comparison",
        "Cumulative return and Sharpe (± its standard error) of each setting's median-return run, "
        "by exposure: the effect of Beta hedging.",
        file=p,
    )


def _conventions(window: int) -> str:
    items = [
        "Metrics are recomputed from each run's steps.parquet: cumulative return = "
        "prod(1 + r) - 1, compounded over the test window's daily returns; Sharpe = sqrt(252) mean / "
        "std (ddof 1) ± its standard error (Lo 2002, IID), shown as 0.00 "
        f"{ZERO_VARIANCE_MARK} for a run whose every return is zero (undefined: 0 / 0); "
        "maximum drawdown of the equity curve; annualised return = (1 + cumulative return)^(252 / "
        "transitions) - 1; Calmar = annualised return / |maximum drawdown|; annualised volatility; "
        "Sortino (target 0); win rate "
        "over transitions with a position; counterfactual (CF) action accuracy = share of transitions "
        "whose action matched the best of LONG_SHORT / SHORT_LONG / FLAT.",
        "A setting is every run sharing test window, exposure, method, variant, backbone and pool; its "
        "row shows the median-return run (the lower middle for an even number of seeds) and the spread "
        "across seeds as min .. max of the cumulative return and the Sharpe ratio.",
        "Accepted policy updates: Moira's replay cycles accepted after the warmup, beyond the warmup's "
        "own reflection memory (n/a for methods without a policy memory). Pair switches: changes of the "
        "held pair (the first pair is not one).",
        f"Rolling CF accuracy: trailing {window} transitions. Undefined values are written n/a.",
    ]
    return '<ul class="conv">' + "".join(f"<li>{esc(t)}</li>" for t in items) + "</ul>"


def _all_runs(results: list[RunResult]) -> str:
    rows, attrs = [], []
    for rr in results:
        r, m = rr.run, rr.metrics
        nfb = sum(f.count for f in fallback_rows(r)) if r.uses_model else None
        rows.append(
            [
                Cell(r.group),
                Cell(r.run_id),
                Cell(
                    method_name(r.method) + (f" [{r.variant}]" if r.variant and r.variant != "full" else "")
                ),
                Cell(exposure_name(r.exposure)),
                Cell(fmt_int(r.seed)),
                Cell(fmt_int(m.n_transitions), m.n_transitions, "n_transitions", "num"),
                Cell(fmt_pct(m.cumulative_return), m.cumulative_return, "cumulative_return", "num"),
                Cell(fmt_pct(m.annual_return), m.annual_return, "annual_return", "num"),
                sharpe_cell(m),
                Cell(fmt_pct(m.max_drawdown), m.max_drawdown, "max_drawdown", "num"),
                Cell(fmt_num(m.calmar), m.calmar, "calmar", "num"),
                Cell(fmt_int(nfb), nfb if nfb is not None else math.nan, "fallbacks", "num"),
                Cell("ok" if not rr.mismatches else "differs: " + ", ".join(rr.mismatches)),
            ]
        )
        attrs.append({"run": r.run_id, "group": r.group})
    return table(
        (
            "experiment folder",
            "run",
            "method",
            "exposure",
            "seed",
            "transitions",
            "cum. return (compounded)",
            "ann. return",
            "Sharpe ± SE",
            "max drawdown",
            "Calmar",
            "fallbacks",
            "metrics.json vs steps",
        ),
        rows,
        cls="runs",
        row_attrs=attrs,
    )


def _engine_tables(inp: ReportInput) -> str:
    parts = []
    for group, info in sorted(inp.experiments.items()):
        rows = engine_token_rows(info)
        if not rows:
            continue
        where = "the input folder" if group == "." else f"experiment folder {group}"
        body = [
            [
                Cell(r["call_type"]),
                Cell(fmt_int(r["calls"]), r["calls"], "calls", "num"),
                Cell(fmt_int(r["prompt_tokens"]), r["prompt_tokens"], "prompt_tokens", "num"),
                Cell(fmt_int(r["completion_tokens"]), r["completion_tokens"], "completion_tokens", "num"),
                Cell(fmt_int(r["cached_tokens"]), r["cached_tokens"], "cached_tokens", "num"),
                Cell(
                    f"{r['latency_s']:.2f}" if math.isfinite(r["latency_s"]) else "n/a",
                    r["latency_s"],
                    "latency_s",
                    "num",
                ),
                Cell(fmt_int(r["fallbacks"]), r["fallbacks"], "invalid", "num"),
            ]
            for r in rows
        ]
        parts.append(
            table(
                (
                    "call type",
                    "calls",
                    "prompt tokens",
                    "completion tokens",
                    "cached tokens",
                    "latency (s)",
                    "invalid",
                ),
                body,
                cls="engine",
                row_attrs=[{"group": group, "call-type": r["call_type"]} for r in rows],
                caption=f"{where}: calls that reached the engine, all runs together "
                f"(from {info.engine_tokens_source}; a request shared by runs or replayed is counted once)",
            )
        )
    return "".join(parts) or note(
        "No experiment folder holds engine token totals (summary.json or journal.sqlite)."
    )


def _prompt_sets(inp: ReportInput) -> str:
    """Which prompt texts each experiment used (its manifest's ``prompt_set``: the packaged
    prompts or the user's ``[prompt] dir``), as HTML; empty when no manifest says."""
    sets: dict[str, list[str]] = {}
    for group, info in sorted(inp.experiments.items()):
        value = ((info.manifest or {}) if info is not None else {}).get("prompt_set")
        if value:
            sets.setdefault(str(value), []).append(group or ".")
    return "; ".join(
        f"<code>{esc(v)}</code> ({esc(', '.join(g))})" if len(sets) > 1 else f"<code>{esc(v)}</code>"
        for v, g in sets.items()
    )


def render(
    inp: ReportInput,
    fig_dir: Path,
    *,
    rolling_window: int = sr.ROLLING_WINDOW,
    progress: Progress = NULL_PROGRESS,
) -> tuple[str, PanelContext, int]:
    """The page's HTML for ``inp`` (figures written into ``fig_dir``); returns (html, context
    with the figures written and the notes, number of sections)."""

    def thresholds(group: str) -> tuple[float, float]:
        info = inp.experiments.get(group)
        return sr.lifecycle_thresholds(info.manifest if info is not None else None)

    def period(group: str) -> int:
        info = inp.experiments.get(group)
        return sr.validation_period(info.manifest if info is not None else None)

    ctx = PanelContext(fig_dir, rolling_window, thresholds, period)
    results = run_results(inp.runs)
    sections = build_sections(build_settings(results))
    windows: list[tuple[str, str]] = []
    for sec in sections:
        if sec.window not in windows:
            windows.append(sec.window)
    groups = sorted({r.group for r in inp.runs})
    body = [
        "<h1>localfin report</h1>",
        f'<p class="meta">Input <code>{esc(inp.root)}</code>: {len(inp.runs)} runs in {len(groups)} '
        f"experiment folder(s), {len(windows)} test window(s), {len(sections)} results table(s). "
        f"Written {esc(dt.datetime.now().strftime('%Y-%m-%d %H:%M'))} by <code>localfin report</code>.</p>",
    ]
    prompt_sets = _prompt_sets(inp)
    if prompt_sets:
        body.append(f'<p class="meta">Prompt texts: {prompt_sets}.</p>')
    # the first screen: what the model can show, the best run per metric, QA's best variant
    body.append(glance_section(results, inp.root, exclude=fig_dir.parent))
    nav = []
    main: list[str] = []
    with progress.task("report sections", total=len(sections)) as task:
        k = 0
        for wi, w in enumerate(windows):
            secs = [s for s in sections if s.window == w]
            anchor = f"w{wi}"
            nav.append(f'<a href="#{anchor}">test decisions {esc(w[0])} .. {esc(w[1])}</a>')
            main.append(
                f'<h2 id="{anchor}">Test window: decisions {esc(w[0])} .. {esc(w[1])}</h2>'
                '<p class="small">Each decision is settled at the next session\'s close.</p>'
            )
            main.append(_window_comparison(secs, ctx, f"w{wi:02d}"))
            for sec in secs:
                sid = f"s{k:02d}"
                opened = " open" if k < 4 else ""
                main.append(
                    f'<details{opened} id="{sid}"><summary>{esc(sec.title)} · {sec.n_transitions} finalized '
                    f"transitions · {len(sec.settings)} settings</summary>"
                )
                main.append(section_panels(sec, ctx, sid))
                main.append("</details>")
                k += 1
                task.advance()
    qa_html = qa_section(inp.root, fig_dir.parent, exclude=fig_dir.parent)
    repro_html = repro_section(inp.root, fig_dir.parent, exclude=fig_dir.parent)
    happened = happened_section(inp.root, exclude=fig_dir.parent)
    if happened:
        nav.insert(0, '<a href="#happened">what happened</a>')
    if qa_html:
        nav.append('<a href="#qa">financial QA</a>')
    if repro_html:
        nav.append('<a href="#repro">reproductions</a>')
    nav += [
        '<a href="#engine">engine tokens</a>',
        '<a href="#runs">all runs</a>',
        '<a href="#notes">notes</a>',
    ]
    body.append("<nav>" + "".join(nav) + "</nav>")
    if happened:
        body.append('<h2 id="happened">What happened</h2>' + happened)
    body.append("<h2>How to read this page</h2>" + _conventions(rolling_window))
    body += main
    if qa_html:
        body.append('<h2 id="qa">Financial QA (FinAcumen)</h2>' + qa_html)
    if repro_html:
        body.append('<h2 id="repro">Reproductions</h2>' + repro_html)
    body.append('<h2 id="engine">Engine tokens by call type</h2>' + _engine_tables(inp))
    body.append('<h2 id="runs">All runs</h2>' + _all_runs(results))
    notes = list(ctx.notes)
    for rr in results:
        if rr.mismatches:
            notes.append(
                f"{rr.run.group}/{rr.run.run_id}: metrics.json differs from its steps in "
                f"{', '.join(rr.mismatches)}; the page shows the values recomputed from the steps."
            )
        for pr in rr.run.problems:
            notes.append(f"{rr.run.group}/{rr.run.run_id}: {pr}")
    for path, why in inp.skipped:
        notes.append(f"skipped {path}: {why}")
    body.append(
        '<h2 id="notes">Notes</h2>'
        + (
            "<ul>" + "".join(f'<li class="warn">{esc(n)}</li>' for n in notes) + "</ul>"
            if notes
            else note("Nothing to report: every run folder was read and agrees with its metrics.json.")
        )
    )
    ctx.notes[:] = notes
    return page("localfin report", "\n".join(body)), ctx, len(sections)


def _reproductions_only(root: Path, out: Path) -> ReportResult:
    """The page of a folder that holds reproductions and no Moira run (a FinAcumen reproduction):
    the reproductions panel alone, written as :func:`build_report` writes a page."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        html = '<h2 id="repro">Reproductions</h2>' + repro_section(root, out, exclude=out)
        (tmp / "index.html").write_text(page("localfin report", html), encoding="utf-8")
        _replace_dir(tmp, out)
    except OSError as exc:  # the previous report stays
        shutil.rmtree(tmp, ignore_errors=True)
        raise write_failed(out, exc) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    n = len(find_reproductions(root, exclude=out))
    log.info("report of %d reproduction(s) written to %s", n, out / "index.html")
    return ReportResult(out, out / "index.html", (), 0, n, (), ())


def is_report_dir(path: Path) -> bool:
    """Whether ``path`` is empty or holds a page written by this module (so it may be replaced)."""
    if not path.is_dir():
        return False
    if not any(path.iterdir()):
        return True
    page_file = path / "index.html"
    try:
        head = page_file.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}">' in head


def _check_out(out: Path) -> None:
    if out.exists() and not is_report_dir(out):
        raise InputError(
            f"--out {out} exists and is not a report folder written by localfin report; allowed: a new "
            "folder, an empty one or an earlier report (it is replaced)"
        )


def _replace_dir(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        _check_out(out)
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    tmp.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    rolling_window: int = sr.ROLLING_WINDOW,
    progress: Progress = NULL_PROGRESS,
) -> ReportResult:
    """Write the report of every run under ``run_dir`` into ``out_dir`` (default
    ``run_dir/report``): ``index.html`` and ``figures/*.png``. Raises InputError when
    ``run_dir`` holds no readable run."""
    root = Path(run_dir)
    if not root.is_dir():
        raise InputError(f"RUN_DIR={root} is not a folder; allowed: a run folder or an experiment folder")
    if rolling_window < 1:
        raise InputError(f"rolling_window={rolling_window}; allowed: >= 1 transition")
    out = Path(out_dir) if out_dir is not None else root / "report"
    _check_out(out)
    inp = load_input(root, exclude=out)
    if not inp.runs and find_reproductions(root, exclude=out):  # a FinAcumen reproduction
        return _reproductions_only(root, out)
    if not inp.runs:
        why = "; ".join(f"{p}: {w}" for p, w in inp.skipped[:3])
        raise InputError(
            f"no readable run folder (steps.parquet + metrics.json) under {root}"
            + (f" ({why})" if why else "")
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        fig_dir = tmp / "figures"
        fig_dir.mkdir()
        text, ctx, n_sections = render(inp, fig_dir, rolling_window=rolling_window, progress=progress)
        (tmp / "index.html").write_text(text, encoding="utf-8")
        _replace_dir(tmp, out)
    except OSError as exc:  # a full disk, a file-size limit: the previous report stays
        shutil.rmtree(tmp, ignore_errors=True)
        raise write_failed(out, exc) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    figs = tuple(out / "figures" / p.name for p in ctx.written)
    log.info("report of %d runs written to %s", len(inp.runs), out / "index.html")
    return ReportResult(
        out, out / "index.html", figs, len(inp.runs), n_sections, inp.skipped, tuple(ctx.notes)
    )
