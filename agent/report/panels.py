"""The panels of one results section (a test window and an exposure): the results table and the
figures, each replaced by a short note when its input is absent.

Which runs each panel shows: the equity/drawdown figure, the action distribution, the rolling
accuracy, the pair timeline, training dynamics and break scores show each setting's
representative (median-return) run, the equity figure with the seeds' min-max band shaded; the
pair-selection heatmap shows every run of the section that held a pair (all seeds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.pairs.market.metrics import (
    FEW_TRANSITIONS,
    LIFECYCLE_STATES,
    RETURN_NOTE,
    ZERO_VARIANCE_NOTE,
    table_sharpe,
)
from agent.report import figures as fg
from agent.report import series as sr
from agent.report.frictions import frictions_table
from agent.report.html import (
    Cell,
    figure,
    fmt_int,
    fmt_num,
    fmt_pct,
    fmt_range,
    note,
    sharpe_cell,
    table,
)
from agent.report.memorization import memorization_table
from agent.report.tables import Section, Setting, results_row
from agent.report.usage import (
    VALIDATION_PERIOD,
    FallbackRow,
    fallback_rows,
    finmem_tokens_per_cycle,
    token_rows,
    tokens_per_cycle,
)

__all__ = [
    "PanelContext",
    "RESULT_HEADERS",
    "results_table",
    "section_panels",
    "token_table",
    "fallback_table",
]

#: Columns of a results table (the paper's Tables 3-7 plus the rest of the reported metrics).
RESULT_HEADERS = (
    "setting",
    "runs (seeds)",
    "cum. return (compounded)",
    "return spread (min .. max)",
    "ann. return",
    "Sharpe ± SE",
    "Sharpe spread (min .. max)",
    "max drawdown",
    "Calmar",
    "ann. volatility",
    "Sortino",
    "win rate",
    "CF action accuracy",
    "accepted policy updates",
    "pair switches",
    "lifecycle HEALTHY / WARNING / BREAK / none",
    "boundary re-screens / replacements",
)


@dataclass
class PanelContext:
    """Where figures go and what the panels share: the figure folder (relative to the page:
    ``figures/``), the rolling-accuracy window, the break-score thresholds and the validation
    cycle (sessions) by experiment group, the figures written so far and notes for the end of the
    page."""

    fig_dir: Path
    rolling_window: int = sr.ROLLING_WINDOW
    thresholds: Callable[[str], tuple[float, float]] = lambda group: (2 / 3, 1.0)
    period: Callable[[str], int] = lambda group: VALIDATION_PERIOD
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def path(self, name: str) -> Path:
        return self.fig_dir / name

    def rel(self, p: Path) -> str:
        return f"figures/{p.name}"


def _seeds(s: Setting) -> str:
    seeds = [str(x) for x in s.seeds if x is not None]
    return f"{s.n} ({', '.join(seeds)})" if seeds else str(s.n)


def results_table(section: Section) -> str:
    """The section's results table: one row per setting (its median-return run), spreads across
    seeds; a metric that ``metrics.json`` reports differently from the steps is marked ``*``."""
    rows, attrs = [], []
    for s in section.settings:
        r = results_row(s)
        mark = " *" if r["mismatches"] else ""
        spread = s.n > 1
        rows.append(
            [
                Cell(s.label + mark, sub=f"median run: {r['run_id']}" if s.n > 1 else f"run: {r['run_id']}"),
                Cell(_seeds(s), s.n, "n_runs", "num"),
                Cell(fmt_pct(r["cumulative_return"]), r["cumulative_return"], "cumulative_return", "num"),
                Cell(fmt_range(r["return_min"], r["return_max"]) if spread else "–", None, "", "num wrap"),
                Cell(fmt_pct(r["annual_return"]), r["annual_return"], "annual_return", "num"),
                sharpe_cell(s.representative.metrics),
                Cell(
                    fmt_range(r["sharpe_min"], r["sharpe_max"], pct=False) if spread else "–",
                    None,
                    "",
                    "num wrap",
                ),
                Cell(fmt_pct(r["max_drawdown"]), r["max_drawdown"], "max_drawdown", "num"),
                Cell(fmt_num(r["calmar"]), r["calmar"], "calmar", "num"),
                Cell(
                    fmt_pct(r["annual_volatility"], signed=False),
                    r["annual_volatility"],
                    "annual_volatility",
                    "num",
                ),
                Cell(fmt_num(r["sortino"]), r["sortino"], "sortino", "num"),
                Cell(fmt_pct(r["win_rate"], 1, signed=False), r["win_rate"], "win_rate", "num"),
                Cell(
                    fmt_pct(r["action_accuracy"], 1, signed=False),
                    r["action_accuracy"],
                    "action_accuracy",
                    "num",
                ),
                Cell(
                    fmt_int(r["accepted_updates"]),
                    r["accepted_updates"] if r["accepted_updates"] is not None else math.nan,
                    "accepted_updates",
                    "num",
                ),
                Cell(fmt_int(r["pair_switches"]), r["pair_switches"], "pair_switches", "num"),
                Cell(_shares(r["lifecycle_shares"]), None, "", "num wrap"),
                Cell(
                    _pair_of_ints(r["rescreens"], r["replacements"]),
                    r["replacements"] if r["replacements"] is not None else math.nan,
                    "replacements",
                    "num",
                ),
            ]
        )
        attrs.append(
            {
                "setting": s.label,
                "run": r["run_id"],
                "group": s.representative.run.group,
                "sharpe-se": repr(float(r["sharpe_se"])) if math.isfinite(r["sharpe_se"]) else "nan",
                "return-min": repr(float(r["return_min"])) if math.isfinite(r["return_min"]) else "nan",
                "return-max": repr(float(r["return_max"])) if math.isfinite(r["return_max"]) else "nan",
            }
        )
    return table(RESULT_HEADERS, rows, cls="results", row_attrs=attrs)


def _shares(shares: dict[str, float] | None) -> str:
    if not shares:
        return "n/a"
    return " / ".join(fmt_pct(shares[k], 0, signed=False) for k in LIFECYCLE_STATES)


def _pair_of_ints(a: int | None, b: int | None) -> str:
    return "n/a" if a is None or b is None else f"{fmt_int(a)} / {fmt_int(b)}"


def _range(r: tuple[int, int] | None) -> str:
    return "n/a" if r is None else (fmt_int(r[0]) if r[0] == r[1] else f"{fmt_int(r[0])} .. {fmt_int(r[1])}")


def token_table(setting: Setting, period: int = VALIDATION_PERIOD) -> str:
    """Tokens by call type of the setting's representative run ('' when it called no model): totals
    over training and test, test tokens per finalized step, one call's prompt, completion and
    total tokens (min .. max, each on its own: Table 9), and under the table the test tokens per
    validation cycle of the run's ``period`` sessions (Table 10: Moira's test total per step x
    the period, 23 in the paper; FinMem's mean of its first complete cycles)."""
    rep = setting.representative
    rows = token_rows(rep.run, rep.metrics.n_transitions)
    if not rows:
        return ""

    def nan(x: float | None) -> float:
        return math.nan if x is None else x

    body = [
        [
            Cell(t.call_type),
            Cell(fmt_int(t.calls), t.calls, "calls", "num"),
            Cell(fmt_int(t.prompt_tokens), t.prompt_tokens, "prompt_tokens", "num"),
            Cell(fmt_int(t.completion_tokens), t.completion_tokens, "completion_tokens", "num"),
            Cell(fmt_int(t.cached_tokens), nan(t.cached_tokens), "cached_tokens", "num"),
            Cell(
                fmt_num(t.test_tokens_per_step, 1), nan(t.test_tokens_per_step), "test_tokens_per_step", "num"
            ),
            Cell(_range(t.prompt_per_call), None, "", "num"),
            Cell(_range(t.completion_per_call), None, "", "num"),
            Cell(_range(t.total_per_call), None, "", "num"),
        ]
        for t in rows
    ]
    cycle, how = tokens_per_cycle(rows, period), f"test tokens per step x {period}"
    fm_cycle, n_cycles = finmem_tokens_per_cycle(rep.run.extra, rep.metrics.n_transitions, period)
    if fm_cycle is not None:
        cycle, how = (
            fm_cycle,
            (
                "the test's first complete cycle"
                if n_cycles == 1
                else f"the mean of the test's first {n_cycles} complete cycles"
            ),
        )
    after = ""
    if cycle is not None:
        after = (
            f'<p class="small" data-metric="tokens_per_cycle" data-value="{cycle!r}">Test tokens per '
            f"{period}-step validation cycle: {fmt_int(round(cycle))} ({how}).</p>"
        )
    return (
        table(
            (
                "call type",
                "calls",
                "prompt tokens",
                "completion tokens",
                "cached tokens",
                "test tokens per finalized step",
                "prompt tokens per call",
                "completion tokens per call",
                "total tokens per call",
            ),
            body,
            cls="tokens",
            row_attrs=[{"run": rep.run.run_id, "call-type": t.call_type} for t in rows],
            caption=f"{setting.label}: run {rep.run.run_id} (training + test; per step: test tokens / "
            f"{rep.metrics.n_transitions} transitions; per call: min .. max over the traced calls)",
        )
        + after
    )


def _steps_text(fb: FallbackRow, limit: int = 12) -> str:
    if not fb.steps:
        return "(not recorded per step)"
    shown = ", ".join(fb.steps[:limit])
    return shown + (f" (+{len(fb.steps) - limit} more)" if len(fb.steps) > limit else "")


def fallback_table(setting: Setting) -> str:
    """Fallbacks of the representative run by phase and call type, with their steps ('' when the
    run called no model); a run that called a model without a fallback says so."""
    rep = setting.representative
    if not rep.run.uses_model:
        return ""
    rows = fallback_rows(rep.run)
    if not rows:
        return note(f"{setting.label} (run {rep.run.run_id}): no fallback.")
    body = [
        [
            Cell(f.phase),
            Cell(f.call_type),
            Cell(fmt_int(f.count), f.count, "fallbacks", "num"),
            Cell(_steps_text(f)),
            Cell("; ".join(f"{r} ({n})" for r, n in f.reasons[:3]) or "n/a"),
        ]
        for f in rows
    ]
    return table(
        ("phase", "call type", "fallbacks", "steps (test) / round:step (training)", "reasons"),
        body,
        cls="fallbacks",
        row_attrs=[{"run": rep.run.run_id} for _ in rows],
        caption=f"{setting.label}: run {rep.run.run_id}",
    )


def _is_agent(s: Setting) -> bool:
    return s.kind == "moira" or s.method in ("moira", "finmem")


def _fig(ctx: PanelContext, name: str, draw: Callable[[Path], Path], alt: str, caption: str) -> str:

    p = draw(ctx.path(name))
    ctx.written.append(p)
    return figure(ctx.rel(p), alt, caption, file=p)


def _equity(section: Section, ctx: PanelContext, prefix: str) -> str:
    curves = []
    for s in section.settings:
        rep = s.representative
        r = [x.realized for x in rep.run.steps]
        band = sr.seed_band([sr.equity_points([x.realized for x in rr.run.steps]) for rr in s.results])
        curves.append(fg.Curve(s.label, sr.equity_points(r), sr.drawdown_points(r), band, _is_agent(s)))
    return _fig(
        ctx,
        f"{prefix}-equity.png",
        lambda p: fg.plot_equity(curves, p),
        "equity and drawdown curves",
        "Equity (start 1) and drawdown of each setting's median-return run; shaded: min-max over its seeds.",
    )


def _actions(section: Section, ctx: PanelContext, prefix: str) -> str:
    labels, counts, left_out = [], [], []
    for s in section.settings:
        c = sr.action_counts([x.action for x in s.representative.run.steps])
        if c is None:
            left_out.append(s.label)
        else:
            labels.append(s.label)
            counts.append(c)
    if not labels:
        return note("Action distribution: no run of this section holds pair actions.")
    extra = note(f"Not pair actions (pool positions), left out: {', '.join(left_out)}.") if left_out else ""
    return (
        _fig(
            ctx,
            f"{prefix}-actions.png",
            lambda p: fg.plot_actions(labels, counts, p),
            "action distribution",
            "Action distribution of each setting's median-return run (LONG_SHORT / SHORT_LONG / FLAT).",
        )
        + extra
    )


def _pairs(section: Section, ctx: PanelContext, prefix: str) -> str:
    cols = []
    for s in section.settings:
        for rr in sorted(s.results, key=lambda x: (x.run.seed is None, x.run.seed, x.run.run_id)):
            ps = [x.pair or None for x in rr.run.steps]
            if any(ps):
                lab = s.label if s.n == 1 else f"{s.label} s{rr.run.seed}"
                cols.append((lab, ps))
    if not cols:
        return note("Pair selection: no run of this section held a pair.")
    pairs, labels, mat = sr.pair_share_matrix(cols)
    out = _fig(
        ctx,
        f"{prefix}-pairs.png",
        lambda p: fg.plot_pair_heatmap(pairs, labels, mat, p),
        "pair-selection heatmap",
        "Pair-selection heatmap: % of each run's test transitions spent holding each pair (every seed).",
    )
    rows = []
    for s in section.settings:
        ps = [x.pair or None for x in s.representative.run.steps]
        if any(ps):
            rows.append((s.label, ps, sr.cumulative_switches(ps)))
    out += _fig(
        ctx,
        f"{prefix}-switches.png",
        lambda p: fg.plot_pair_timeline(rows, p),
        "pair held over time and pair switches",
        "Pair held at each test step and cumulative pair switches (median-return runs).",
    )
    return out


def _accuracy(section: Section, ctx: PanelContext, prefix: str) -> str:
    lines = []
    for s in section.settings:
        rep = s.representative
        if math.isfinite(rep.metrics.action_accuracy):
            v = sr.rolling_accuracy([bool(x.matched) for x in rep.run.steps], ctx.rolling_window)
            lines.append((s.label, v, rep.metrics.action_accuracy))
    if not lines:
        return note("Counterfactual action accuracy: undefined for every run of this section.")
    return _fig(
        ctx,
        f"{prefix}-accuracy.png",
        lambda p: fg.plot_rolling_accuracy(lines, ctx.rolling_window, p),
        "rolling counterfactual action accuracy",
        f"Counterfactual action accuracy over the trailing {ctx.rolling_window} transitions "
        "(fewer at the start); in brackets over the whole window.",
    )


def _training(section: Section, ctx: PanelContext, prefix: str) -> str:
    moira, ddqn = [], []
    for s in section.settings:
        tr = s.representative.run.training
        cv = sr.moira_cycles(tr)
        if cv is not None:
            moira.append((s.label, cv))
        cur = sr.ddqn_curve(tr)
        if cur is not None:
            ddqn.append((s.label, cur))
    if not moira and not ddqn:
        return note("Training dynamics: no run of this section has a training.json (Moira or EG-DDQN).")
    out = _fig(
        ctx,
        f"{prefix}-training.png",
        lambda p: fg.plot_training(moira, ddqn, p),
        "training dynamics",
        "Training dynamics of the median-return runs.",
    )
    if moira:
        rows = [
            [
                Cell(lab),
                Cell(fmt_int(cv.n_accepted), cv.n_accepted, "cycles_accepted", "num"),
                Cell(fmt_int(cv.n_rejected), cv.n_rejected, "cycles_rejected", "num"),
                Cell(fmt_int(cv.n_no_replay), cv.n_no_replay, "cycles_no_replay", "num"),
                Cell(fmt_pct(cv.returns[0]), cv.returns[0], "warmup_return", "num"),
                Cell(fmt_pct(cv.best_after[-1]), cv.best_after[-1], "best_return", "num"),
            ]
            for lab, cv in moira
        ]
        out += table(
            ("setting", "accepted", "rejected", "no replay", "warmup return", "best training return"),
            rows,
            cls="training",
            caption="Replay cycles after the warmup (training return = sum of daily returns)",
        )
    return out


def _breaks(section: Section, ctx: PanelContext, prefix: str) -> str:
    views, groups = [], set()
    for s in section.settings:
        v = sr.break_scores(s.representative.run.trace)
        if v is not None:
            views.append((f"{s.label} (run {s.representative.run.run_id})", v))
            groups.add(s.representative.run.group)
    if not views:
        return note("Break-score evolution: no run of this section has lifecycle rows in a trace.parquet.")
    th = ctx.thresholds(sorted(groups)[0])
    return _fig(
        ctx,
        f"{prefix}-breaks.png",
        lambda p: fg.plot_break_scores(views, th, p),
        "break-score evolution",
        f"Break score of the held pair per test step (WARNING from {th[0]:.2f}, BREAK at {th[1]:.2f}), "
        "validation boundaries and replacements.",
    )


def section_panels(section: Section, ctx: PanelContext, prefix: str) -> str:
    """The HTML of one section: table, figures, tokens and fallbacks."""
    parts = [results_table(section), note(RETURN_NOTE)]
    if section.n_transitions < FEW_TRANSITIONS:
        parts.append(
            note(
                f"Only {section.n_transitions} settled transitions: the annualised figures (annualised "
                "return, Sharpe ± SE, Calmar, Sortino, volatility) say little on so few; a few days' "
                f"return is compounded to a year. They need at least {FEW_TRANSITIONS} (a quarter)."
            )
        )
    if any(table_sharpe(r.metrics)[1] for s in section.settings for r in s.results):
        parts.append(note(ZERO_VARIANCE_NOTE))
    if any(r.mismatches for s in section.settings for r in s.results):
        parts.append(
            note("* metrics.json of that run differs from the metrics recomputed from its steps (see Notes).")
        )
    parts.append("<h4>Paper protocol and with frictions</h4>" + frictions_table(section))
    memo = memorization_table(section)
    if memo:
        parts.append("<h4>Real names and aliases in the prompts</h4>" + memo)
    parts.append("<h4>Equity and drawdown</h4>" + _equity(section, ctx, prefix))
    parts.append("<h4>Action distribution</h4>" + _actions(section, ctx, prefix))
    parts.append("<h4>Pair selection and pair switches</h4>" + _pairs(section, ctx, prefix))
    parts.append("<h4>Counterfactual action accuracy</h4>" + _accuracy(section, ctx, prefix))
    parts.append("<h4>Training dynamics</h4>" + _training(section, ctx, prefix))
    parts.append("<h4>Break-score evolution</h4>" + _breaks(section, ctx, prefix))
    tok = [t for t in (token_table(s, ctx.period(s.representative.run.group)) for s in section.settings) if t]
    parts.append(
        "<h4>Tokens by call type</h4>"
        + ("".join(tok) if tok else note("Tokens: no run of this section called a model."))
    )
    fb = [t for t in (fallback_table(s) for s in section.settings) if t]
    parts.append(
        "<h4>Fallbacks</h4>"
        + ("".join(fb) if fb else note("Fallbacks: no run of this section called a model."))
    )
    return "\n".join(parts)
