"""The report's PNG figures (matplotlib, Agg canvas, no pyplot state): each function draws data
computed by :mod:`agent.report.series` / :mod:`agent.report.tables` and writes one PNG.

Every function takes plain values (labels, arrays) and a path, so a test can draw each panel on
tiny inputs; none computes a number shown anywhere else.

Every figure along the test window has one x axis (:data:`STEP_LABEL`): test step k is the k-th
session of the test window, the one whose close decides step k (as the trace and the steps
tables number it); the equity at step k is the equity at that session's close (1 at step 1, before
any settlement), a lifecycle check at step k reads that session's close, and the last session,
which settles the last decision, is step T + 1. The axis spans 0.5 .. T + 1.5 on every figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent.report.series import BreakView, CycleView

__all__ = [
    "DPI",
    "STEP_LABEL",
    "Curve",
    "plot_equity",
    "plot_return_sharpe",
    "plot_pair_heatmap",
    "plot_pair_timeline",
    "plot_actions",
    "plot_rolling_accuracy",
    "plot_training",
    "plot_break_scores",
]

DPI = 96
#: the x axis of every figure along the test window (module doc)
STEP_LABEL = "test step (session of the test window; 1 = its first)"
_WIDTH = 11.0
_ACTION_COLORS = {"LONG_SHORT": "#2b8cbe", "SHORT_LONG": "#e6550d", "FLAT": "#bdbdbd"}
_LEVEL_COLORS = {"HEALTHY": "#31a354", "WARNING": "#fd8d3c", "BREAK": "#de2d26"}


def _figure(height: float, nrows: int = 1, ncols: int = 1, **kw: Any) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(_WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    return path


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _step_axis(ax: Any, last: int) -> None:
    """The test-step axis (module doc) up to session ``last``, whole steps only."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlim(0.5, max(last, 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _legend(ax: Any, n: int) -> None:
    if n:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


class Curve:
    """One line of the equity figure: label, equity and drawdown points (the start, then after each
    of the N settlements: at test steps 1 .. N + 1), the seeds' equity band (min, max) or None,
    and whether it is an agent (drawn thicker)."""

    def __init__(
        self,
        label: str,
        equity: np.ndarray,
        drawdown: np.ndarray,
        band: tuple[np.ndarray, np.ndarray] | None = None,
        agent: bool = False,
    ) -> None:
        self.label, self.equity, self.drawdown, self.band, self.agent = label, equity, drawdown, band, agent


def plot_equity(curves: Sequence[Curve], path: Path, title: str = "") -> Path:
    """Equity curves (top) and drawdowns (bottom) at the close of each test step."""
    fig, axes = _figure(5.6, 2, 1, sharex=True, height_ratios=[2, 1])
    top, bottom = axes[0][0], axes[1][0]
    for c, color in zip(curves, _colors(len(curves))):
        x = np.arange(1, len(c.equity) + 1)
        lw = 2.2 if c.agent else 1.2
        top.plot(x, c.equity, color=color, lw=lw, label=c.label)
        if c.band is not None:
            top.fill_between(x, c.band[0], c.band[1], color=color, alpha=0.15, lw=0)
        bottom.plot(x, 100 * c.drawdown, color=color, lw=lw)
    top.axhline(1.0, color="black", lw=0.6, ls=":")
    top.set_ylabel("equity (start = 1)")
    bottom.set_ylabel("drawdown (%)")
    bottom.set_xlabel(STEP_LABEL + "; equity at its close")
    _step_axis(bottom, max((len(c.equity) for c in curves), default=1))
    if title:
        top.set_title(title, fontsize=10)
    _legend(top, len(curves))
    return _save(fig, path)


def plot_return_sharpe(
    labels: Sequence[str],
    exposures: Sequence[str],
    returns: np.ndarray,
    sharpes: np.ndarray,
    ses: np.ndarray,
    path: Path,
) -> Path:
    """Grouped horizontal bars: cumulative return (%) and Sharpe (error bar = its standard error)
    of each setting (rows) under each exposure (bars); matrices are (settings x exposures), NaN
    where a setting did not run under an exposure."""
    n, k = len(labels), len(exposures)
    fig, axes = _figure(max(2.0, 0.26 * n * max(k, 1) + 1.1), 1, 2, sharey=True)
    y = np.arange(n)
    h = 0.8 / max(k, 1)
    colors = ["#3182bd", "#e6550d", "#31a354", "#756bb1"]
    for j, e in enumerate(exposures):
        off = y - 0.4 + h * (j + 0.5)
        r = 100 * returns[:, j]
        axes[0][0].barh(off, np.nan_to_num(r), height=h, color=colors[j % 4], label=e)
        s, se = sharpes[:, j], ses[:, j]
        axes[0][1].barh(
            off,
            np.nan_to_num(s),
            height=h,
            color=colors[j % 4],
            xerr=np.where(np.isfinite(se) & np.isfinite(s), se, 0.0),
            error_kw={"lw": 0.8, "capsize": 2},
        )
    for ax, name in ((axes[0][0], "cumulative return (%)"), (axes[0][1], "Sharpe ± SE (annualised)")):
        ax.axvline(0, color="black", lw=0.6)
        ax.set_xlabel(name)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, labels, fontsize=8)
    axes[0][0].invert_yaxis()
    axes[0][0].legend(fontsize=8, loc="best")
    return _save(fig, path)


def plot_pair_heatmap(pairs: Sequence[str], columns: Sequence[str], shares: np.ndarray, path: Path) -> Path:
    """Runs (rows) x pairs (columns): share of the run's transitions spent holding the pair;
    ``shares`` is (pairs x runs) as :func:`agent.report.series.pair_share_matrix` returns it."""
    runs = list(columns)
    m = 100 * np.asarray(shares).T
    fig, axes = _figure(max(1.8, 0.3 * len(runs) + 1.3))
    ax = axes[0][0]
    im = ax.imshow(m, aspect="auto", cmap="Blues", vmin=0, vmax=100)
    ax.set_yticks(np.arange(len(runs)), runs, fontsize=8)
    ax.set_xticks(np.arange(len(pairs)), pairs, fontsize=8, rotation=30 if len(pairs) > 8 else 0)
    ax.xaxis.tick_top()
    if m.size <= 600:
        for i in range(len(runs)):
            for j in range(len(pairs)):
                if m[i, j] > 0:
                    color = "white" if m[i, j] > 60 else "black"
                    ax.text(j, i, f"{m[i, j]:.0f}", ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(im, ax=ax, label="% of transitions held", shrink=0.9)
    return _save(fig, path)


def plot_pair_timeline(rows: Sequence[tuple[str, Sequence[str | None], np.ndarray]], path: Path) -> Path:
    """Top: the pair held at each step by each run (one row each, a color per pair); bottom: the
    run's cumulative pair switches. ``rows``: (label, pair per step, cumulative switches)."""
    pairs = sorted({p for _, ps, _ in rows for p in ps if p})
    color = dict(zip(pairs, _colors(len(pairs))))
    fig, axes = _figure(
        max(3.2, 0.35 * len(rows) + 2.6), 2, 1, sharex=True, height_ratios=[max(1, len(rows)), 2]
    )
    top, bottom = axes[0][0], axes[1][0]
    for i, (_label, ps, _) in enumerate(rows):
        start = 0
        for k in range(1, len(ps) + 1):
            if k == len(ps) or ps[k] != ps[start]:
                if ps[start]:
                    top.broken_barh([(start + 0.5, k - start)], (i - 0.4, 0.8), color=color[ps[start]])
                start = k
    top.set_yticks(np.arange(len(rows)), [r[0] for r in rows], fontsize=8)
    top.set_ylim(len(rows) - 0.5, -0.5)
    from matplotlib.patches import Patch

    top.legend(
        handles=[Patch(color=color[p], label=p) for p in pairs],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
        title="pair held",
        title_fontsize=8,
    )
    for (label, _, sw), c in zip(rows, _colors(len(rows))):
        bottom.step(np.arange(1, len(sw) + 1), sw, where="post", color=c, label=label)
    top_count = max((int(sw.max()) for _, _, sw in rows if len(sw)), default=0)
    bottom.set_ylim(-0.2, max(1, top_count) + 0.5)
    bottom.set_ylabel("pair switches")
    bottom.set_xlabel(STEP_LABEL)
    _step_axis(bottom, max((len(ps) for _, ps, _ in rows), default=0) + 1)
    bottom.yaxis.get_major_locator().set_params(integer=True)
    _legend(bottom, len(rows))
    return _save(fig, path)


def plot_actions(labels: Sequence[str], counts: Sequence[dict[str, int]], path: Path) -> Path:
    """Stacked horizontal bars: share of each action per setting, with the counts written in."""
    fig, axes = _figure(max(1.8, 0.42 * len(labels) + 1.0))
    ax = axes[0][0]
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for a, col in _ACTION_COLORS.items():
        n = np.array([c.get(a, 0) for c in counts], dtype=float)
        tot = np.array([max(1, sum(c.values())) for c in counts], dtype=float)
        share = 100 * n / tot
        ax.barh(y, share, left=left, color=col, label=a, height=0.7)
        for yi, (l0, s, k) in enumerate(zip(left, share, n)):
            if s >= 6:
                ax.text(l0 + s / 2, yi, f"{int(k)}", ha="center", va="center", fontsize=7)
        left += share
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of test transitions (counts in the bars)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _save(fig, path)


def plot_rolling_accuracy(lines: Sequence[tuple[str, np.ndarray, float]], window: int, path: Path) -> Path:
    """Rolling counterfactual action accuracy (%) per run; ``lines``: (label, per-step values,
    overall accuracy shown in the legend)."""
    fig, axes = _figure(3.4)
    ax = axes[0][0]
    for (label, v, overall), c in zip(lines, _colors(len(lines))):
        ax.plot(
            np.arange(1, len(v) + 1), 100 * v, color=c, lw=1.4, label=f"{label} (all: {100 * overall:.1f}%)"
        )
    ax.set_ylim(-3, 103)
    ax.set_ylabel(f"matched best action, trailing {window} (%)")
    ax.set_xlabel(STEP_LABEL)
    _step_axis(ax, max((len(v) for _, v, _ in lines), default=0) + 1)
    ax.grid(alpha=0.3)
    _legend(ax, len(lines))
    return _save(fig, path)


def plot_training(
    moira: Sequence[tuple[str, CycleView]],
    ddqn: Sequence[tuple[str, dict[str, np.ndarray]]],
    path: Path,
) -> Path:
    """Left: Moira's training return per replay cycle (filled: accepted, open: rejected, grey x:
    no replay) with the best return so far; right: EG-DDQN's training return per episode
    (epsilon-greedy and greedy replay). A side without data is left out."""
    panels = [p for p in ((moira, "moira"), (ddqn, "ddqn")) if p[0]]
    fig, axes = _figure(3.6, 1, max(1, len(panels)))
    for ax, (data, kind) in zip(axes[0], panels):
        colors = _colors(len(data))
        if kind == "moira":
            for (label, cv), c in zip(data, colors):
                x = np.array(cv.cycles)
                r = 100 * np.array(cv.returns)
                b = 100 * np.array(cv.best_after)
                acc = np.array(cv.accepted)
                ok = np.isfinite(r)
                ax.plot(x, b, color=c, lw=1.2, ls="--")
                ax.scatter(x[ok & acc], r[ok & acc], color=c, s=36, zorder=3, label=f"{label}")
                ax.scatter(x[ok & ~acc], r[ok & ~acc], facecolors="none", edgecolors=[c], s=36, zorder=3)
                nr = ~ok
                if nr.any():
                    ax.scatter(x[nr], b[nr], marker="x", color="grey", s=30, zorder=3)
            ax.set_xlabel("replay cycle (0 = warmup)")
            ax.set_ylabel("training return, sum of daily (%)")
            ax.set_title(
                "Moira policy memory: ● accepted  ○ rejected  × no replay; -- best so far", fontsize=9
            )
            ax.xaxis.get_major_locator().set_params(integer=True)
        else:
            for (label, cur), c in zip(data, colors):
                ax.plot(
                    cur["episode"], 100 * cur["return"], color=c, lw=1.0, ls=":", label=f"{label} ε-greedy"
                )
                ax.plot(cur["episode"], 100 * cur["greedy_return"], color=c, lw=1.8, label=f"{label} greedy")
            ax.set_xlabel("training episode")
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.set_ylabel("training return, sum (%)")
            ax.set_title("EG-DDQN training curve", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def plot_break_scores(
    views: Sequence[tuple[str, BreakView]], thresholds: tuple[float, float], path: Path
) -> Path:
    """One panel per run: break score per test step (colored by lifecycle level), the WARNING and
    BREAK levels, validation boundaries (dotted: kept, red dashed: replaced) and the pairs held."""
    fig, axes = _figure(2.3 * len(views) + 0.4, len(views), 1, sharex=True)
    warn, brk = thresholds
    for ax, (label, v) in zip(axes[:, 0], views):
        x = np.array(v.steps)
        s = np.array(v.scores)
        ax.plot(x, s, color="#636363", lw=0.8)
        for lvl, col in _LEVEL_COLORS.items():
            m = np.array([lv == lvl for lv in v.levels])
            if m.any():
                ax.scatter(x[m], s[m], color=col, s=12, zorder=3, label=lvl)
        ax.axhline(warn, color=_LEVEL_COLORS["WARNING"], lw=0.8, ls="--")
        ax.axhline(brk, color=_LEVEL_COLORS["BREAK"], lw=0.8, ls="--")
        for st, keep in v.boundaries:
            ax.axvline(
                st,
                color="#de2d26" if not keep else "#969696",
                lw=1.2 if not keep else 0.8,
                ls="--" if not keep else ":",
            )
        start = 0
        for k in range(1, len(v.pairs) + 1):
            if k == len(v.pairs) or v.pairs[k] != v.pairs[start]:
                ax.text((x[start] + x[k - 1]) / 2, 1.12, v.pairs[start], ha="center", fontsize=7)
                start = k
        for st, old, new in v.replacements:
            ax.annotate(
                f"{old} → {new}",
                (st, 0.5),
                xytext=(-4, 0),
                textcoords="offset points",
                fontsize=7,
                color="#de2d26",
                rotation=90,
                ha="right",
                va="center",
            )
        ax.set_ylim(-0.05, 1.25)
        ax.set_ylabel("break score", fontsize=8)
        ax.set_title(label, fontsize=9, loc="left")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1][0].set_xlabel(STEP_LABEL + "; dotted: validation boundary kept, red dashed: pair replaced")
    _step_axis(axes[-1][0], max((max(v.steps, default=0) for _, v in views), default=0))
    return _save(fig, path)
