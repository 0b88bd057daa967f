"""The report's first screen: what its numbers can and cannot show, and which run is best.

Three parts, each only where it applies:

* **what the model can show** (:func:`model_caveats`): every model the runs called (the agent's
  and FinMem's backbone, the QA runs' model) is looked up among localfin's own model entries; a
  model built for the CPU (the demo's SmolLM2-135M) or a tiny random test model gets a plain
  statement of what its runs show (the pipeline works, what it costs) and what they cannot (how
  well the systems trade or answer). A model of a plugin or a models file gets no statement
  (nothing is guessed);
* **best run per metric** (:func:`best_runs`): per test window, the run with the highest
  cumulative return, annualised return, Sharpe ratio and Calmar ratio and the smallest drawdown,
  with the agent's best run and its rank beside it when another method leads; ties are named as
  ties; a run without a value (no Sharpe for a run that never traded) is never picked;
* **few transitions**: a window of fewer than
  :data:`~agent.pairs.market.metrics.FEW_TRANSITIONS` settled transitions gets a warning that the
  annualised figures say little there;
* **financial QA**: each QA report's most accurate variant (or that they tie).

Figures come from the recomputed metrics (:mod:`agent.report.tables`) and the QA documents
(:mod:`agent.report.qa`); nothing here computes a metric of its own.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pairs.market.metrics import FEW_TRANSITIONS
from agent.report.html import esc, fmt_num, fmt_pct, names
from agent.report.qa import find_qa_reports, qa_rows
from agent.report.tables import RunResult, exposure_name, method_name

__all__ = ["METRICS", "Best", "best_runs", "model_caveats", "glance_section"]


#: (metric, label, larger is better, formatter) of the best-run table, in its order
METRICS: tuple[tuple[str, str, bool, Callable[[Any], str]], ...] = (
    ("cumulative_return", "cumulative return", True, fmt_pct),
    ("annual_return", "annualised return", True, fmt_pct),
    ("sharpe", "Sharpe ratio", True, fmt_num),
    ("calmar", "Calmar ratio", True, fmt_num),
    ("max_drawdown", "max drawdown (smallest)", True, fmt_pct),
)


@dataclass(frozen=True)
class Best:
    """The best of one metric in one window: the leading runs (several on a tie), their value,
    how many runs had a value, and the agent's best run with its rank (None when an agent run
    leads or none ran)."""

    metric: str
    label: str
    leaders: tuple[RunResult, ...]
    value: float
    n_valued: int
    agent_best: RunResult | None = None
    agent_rank: int = 0


def _value(rr: RunResult, metric: str) -> float:
    v = getattr(rr.metrics, metric)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.nan


def best_runs(results: Sequence[RunResult]) -> list[Best]:
    """The :class:`Best` of every metric of :data:`METRICS` over ``results`` (one test window);
    metrics no run has a value of are left out."""
    out = []
    for metric, label, larger, _ in METRICS:
        valued = [(rr, _value(rr, metric)) for rr in results if math.isfinite(_value(rr, metric))]
        if not valued:
            continue
        ranked = sorted(valued, key=lambda x: -x[1] if larger else x[1])
        top = ranked[0][1]
        leaders = tuple(rr for rr, v in ranked if v == top)
        agent_best, rank = None, 0
        if not any(rr.run.kind == "moira" for rr in leaders):
            for rr, v in ranked:
                if rr.run.kind == "moira":
                    agent_best, rank = rr, 1 + sum(1 for _, w in ranked if (w > v if larger else w < v))
                    break
        out.append(Best(metric, label, leaders, top, len(valued), agent_best, rank))
    return out


def _run_name(rr: RunResult) -> str:
    r = rr.run
    label = method_name(r.method) + (f" [{r.variant}]" if r.variant and r.variant != "full" else "")
    return f"{label} · {exposure_name(r.exposure)} ({r.run_id})"


# -- what the model can show --------------------------------------------------------------------


def _registry_entry(key: str) -> Any:
    """localfin's own entry of ``key`` (None for a plugin's or a models file's model)."""
    from serving.models.model_specs import packaged_specs

    return next((s for s in packaged_specs() if s.key == key), None)


def model_caveats(keys: Iterable[str], lookup: Callable[[str], Any] = _registry_entry) -> list[str]:
    """One plain statement per model of ``keys`` that cannot show what the systems achieve (module
    doc); ``lookup`` finds a key's registry entry (None: unknown)."""
    out = []
    for key in sorted({k for k in keys if k}):
        spec = lookup(key)
        if spec is None or getattr(spec, "device", "gpu") != "cpu" or getattr(spec, "stand_in", False):
            continue
        # the published name, without a note on where the package comes from
        name = re.sub(r"\s*\(.*\)\s*$", "", getattr(spec, "display_name", "") or "") or key
        if getattr(spec, "source", "") == "built":
            out.append(
                f"The model here is {name} ({key}), built with random weights for tests: its replies "
                "are noise by construction. The page shows that every part runs and what the calls "
                "cost; its returns and accuracies mean nothing."
            )
            continue
        out.append(
            f"The model here is {name} ({key}), a small model run on the CPU. These runs show that "
            "every part of both systems works end to end and what each call costs. They cannot show "
            "how well Moira trades or FinAcumen answers: the model is too small to read prices or "
            "financial questions, so the agent's returns, the principles it writes and the QA "
            "accuracies are not evidence about either system (the rule baselines call no model). "
            "For results, run a GPU backbone (localfin reproduce)."
        )
    return out


def _qa_docs(root: Path, exclude: Path | None) -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in find_qa_reports(root, exclude):
        try:
            docs.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            continue  # the QA panel lists it with the reason
    return docs


# -- the section ----------------------------------------------------------------------------------


def _best_rows(bests: list[Best]) -> str:
    rows = []
    for b in bests:
        fmt = next(f for m, _, _, f in METRICS if m == b.metric)
        if len(b.leaders) == 1:
            who = names(_run_name(b.leaders[0]))
        else:
            shown = ", ".join(rr.run.run_id for rr in b.leaders[:3]) + (", ..." if len(b.leaders) > 3 else "")
            who = f"{len(b.leaders)} runs tie: {names(shown)}"
        agent = ""
        if b.agent_best is not None:
            agent = (
                f"{names(b.agent_best.run.run_id)}: {esc(fmt(_value(b.agent_best, b.metric)))} "
                f"(rank {b.agent_rank} of {b.n_valued})"
            )
        rows.append(
            f'<tr data-metric="{esc(b.metric)}"><td>{esc(b.label)}</td><td>{who}</td>'
            f'<td class="num" data-value="{b.value!r}">{esc(fmt(b.value))}</td>'
            + (f"<td>{agent}</td>" if any(x.agent_best for x in bests) else "")
            + "</tr>"
        )
    agent_head = "<th>the agent's best</th>" if any(x.agent_best for x in bests) else ""
    return (
        '<div class="scroll"><table class="best"><thead><tr><th>metric</th><th>best run</th><th>value</th>'
        f"{agent_head}</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def _window_part(window: tuple[str, str], results: list[RunResult]) -> str:
    bests = best_runs(results)
    n = max((rr.metrics.n_transitions for rr in results), default=0)
    head = (
        f'<p class="best" data-role="best"><strong>Best run per metric</strong>, test decisions '
        f"{esc(window[0])} .. {esc(window[1])}, {len(results)} runs, at most {n} settled transitions "
        "each:</p>"
    )
    few = ""
    if n < FEW_TRANSITIONS:
        few = (
            f'<p class="warn" data-role="few">Only {n} settled transitions: the annualised figures '
            "(Sharpe, Sortino, annualised return, Calmar) say little on so few. The standard error of "
            f"a Sharpe ratio is about {math.sqrt(252 / max(n, 1)):.1f} here, and a few days' return is "
            f"compounded to a year. They need at least {FEW_TRANSITIONS} (a quarter) to mean much.</p>"
        )
    return head + (_best_rows(bests) if bests else "") + few


def _qa_part(root: Path, exclude: Path | None) -> str:
    lines = []
    for path, doc in _qa_docs(root, exclude):
        try:
            rows = [r for r in qa_rows(doc) if r["accuracy"] is not None]
        except (KeyError, TypeError, ValueError):
            continue
        if not rows:
            continue
        top = max(r["accuracy"] for r in rows)
        leaders = [r for r in rows if r["accuracy"] == top]
        shown = f"{leaders[0]['correct']}/{leaders[0]['n']} ({100 * top:.0f}%)"
        if len(leaders) == len(rows) and len(rows) > 1:
            verdict = f"all {len(rows)} variants tie at {shown}"
        elif len(leaders) > 1:
            verdict = f"{', '.join(r['variant'] for r in leaders)} tie at {shown}"
        else:
            verdict = f"best: {leaders[0]['variant']}, {shown}"
        lines.append(f"{names(path.parent.name)}: {esc(verdict)}")
    if not lines:
        return ""
    return (
        '<p class="best" data-role="qa-best"><strong>Financial QA</strong>, most accurate variant: '
        + "; ".join(lines)
        + ' (<a href="#qa">the QA panel</a>).</p>'
    )


def glance_section(
    results: Sequence[RunResult],
    root: Path,
    *,
    exclude: Path | None = None,
    lookup: Callable[[str], Any] = _registry_entry,
    max_windows: int = 4,
) -> str:
    """The first screen's HTML (module doc); "" when there is nothing to say."""
    keys = {rr.run.backbone for rr in results if rr.run.uses_model}
    keys |= {str(doc.get("model") or "") for _, doc in _qa_docs(root, exclude)}
    caveats = model_caveats(keys, lookup)
    parts = [
        f'<p class="caveat" data-role="caveat"><strong>What these numbers can show.</strong> {esc(c)}</p>'
        for c in caveats
    ]
    windows: dict[tuple[str, str], list[RunResult]] = {}
    for rr in results:
        if rr.run.window != ("", ""):
            windows.setdefault(rr.run.window, []).append(rr)
    for window in sorted(windows)[:max_windows]:
        parts.append(_window_part(window, windows[window]))
    if len(windows) > max_windows:
        parts.append(
            f'<p class="small">{len(windows) - max_windows} more test windows: see each window\'s '
            "results tables below.</p>"
        )
    parts.append(_qa_part(root, exclude))
    body = "".join(p for p in parts if p)
    return f'<section class="glance" id="glance">{body}</section>' if body else ""
