"""The numbers of the report's tables, as pure functions of the loaded runs.

Metrics are recomputed from each run's ``steps.parquet`` with
:func:`agent.pairs.market.metrics.compute_metrics` under the rules the writers use (so the page
shows what the settled transitions say, and :func:`metric_mismatches` flags a ``metrics.json``
that disagrees):

* rows whose action is not a pair action (Equal-Weight's ``HOLD``) make the run a pool position:
  no action counts, no action accuracy, every transition counts in the win rate;
* a run whose ``extra.no_candidate`` is true held nothing because the screen had no pair: its
  action accuracy is undefined (n/a), not 100%;
* otherwise the action accuracy is the share of transitions whose action matched the best one.

Tokens and fallbacks are in :mod:`agent.report.usage`.

Settings and seeds (several seeds per setting, report the median-return run
and the spread across seeds): a *setting* is every run that shares the test window (first and
last decision dates), the exposure, kind, method, variant, backbone, pool and whether its
prompts named the stocks by aliases (``extra.anonymized``), differing only in seed. Its
*representative* run is the median-return run: runs sorted by cumulative return (ties: seed,
then run id), the middle one for an odd count and the lower of the two middle ones for an
even count (a run that happened, not an average; the lower one so that an even count never
flatters the setting). The *spread* is the minimum and maximum across the seeds (with the three
seeds of the protocol an interquartile range is not defined better than that). A *section* is
one test window and one exposure: one results table like the paper's Tables 3-7.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.pairs.market.metrics import Metrics, compute_metrics, lifecycle_shares, table_sharpe
from agent.pairs.market.settlement import ACTIONS
from agent.report.load import RunData

__all__ = [
    "METHOD_NAMES",
    "EXPOSURE_NAMES",
    "COMPARED_METRICS",
    "RunResult",
    "Setting",
    "Section",
    "method_name",
    "exposure_name",
    "step_metrics",
    "metric_mismatches",
    "run_results",
    "median_index",
    "build_settings",
    "build_sections",
    "results_row",
]

#: Display names of the methods (others are shown as written).
METHOD_NAMES = {
    "moira": "Moira",
    "finmem": "FinMem",
    "long_short": "Long-Short",
    "short_long": "Short-Long",
    "equal_weight": "Equal-Weight",
    "eg_z": "EG+Z",
    "eg_ddqn": "EG-DDQN",
}
EXPOSURE_NAMES = {"no_beta": "No-Beta", "beta": "Beta"}
#: The metrics of ``metrics.json`` that are recomputed from the steps and compared.
COMPARED_METRICS = (
    "n_transitions",
    "cumulative_return",
    "sharpe",
    "sharpe_se",
    "max_drawdown",
    "annual_volatility",
    "annual_return",
    "calmar",
    "sortino",
    "win_rate",
    "action_accuracy",
    "pair_switches",
)
_ORDER = {m: i for i, m in enumerate(METHOD_NAMES)}


def method_name(method: str) -> str:
    return METHOD_NAMES.get(method, method)


def exposure_name(exposure: str) -> str:
    return EXPOSURE_NAMES.get(exposure, exposure or "n/a")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def step_metrics(run: RunData) -> Metrics:
    """Every metric of ``run``, recomputed from its steps (rules in the module doc)."""
    steps = run.steps
    actions = [str(s.action) for s in steps]
    pair_actions = all(a in ACTIONS for a in actions)
    counterfactual = pair_actions and not bool(run.extra.get("no_candidate", False))
    return compute_metrics(
        [float(s.realized) for s in steps],
        actions=actions if pair_actions else None,
        matched=[bool(s.matched) for s in steps] if counterfactual else None,
        pairs=[str(s.pair) or None for s in steps],
    )


def metric_mismatches(computed: Metrics, doc: Mapping[str, Any], tol: float = 1e-9) -> tuple[str, ...]:
    """Names of the metrics where ``metrics.json`` (``doc``) disagrees with the recomputed ones
    (NaN and null agree; numbers agree within ``tol`` relative to max(1, |value|)); a metric the
    document lacks is not compared."""
    written = doc.get("metrics") if isinstance(doc.get("metrics"), Mapping) else {}
    out = []
    for name in COMPARED_METRICS:
        if name not in written:
            continue
        mine, theirs = getattr(computed, name), written[name]
        if not _finite(mine) or not _finite(theirs):
            if _finite(mine) != _finite(theirs):
                out.append(name)
            continue
        if abs(float(mine) - float(theirs)) > tol * max(1.0, abs(float(mine))):
            out.append(name)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class RunResult:
    """A run with its recomputed metrics and the metrics where ``metrics.json`` disagrees."""

    run: RunData
    metrics: Metrics
    mismatches: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.run.run_id


def run_results(runs: Iterable[RunData]) -> list[RunResult]:
    out = []
    for r in runs:
        m = step_metrics(r)
        out.append(RunResult(r, m, metric_mismatches(m, r.doc)))
    return out


def median_index(values: Sequence[float]) -> int:
    """Index (into ``values``, already sorted ascending) of the median-return run: the middle one,
    the lower middle for an even count."""
    if not values:
        raise ValueError("median_index of an empty sequence")
    return (len(values) - 1) // 2


@dataclass(frozen=True, eq=False)
class Setting:
    """The runs of one setting, sorted by cumulative return (ascending; ties by seed, run id)."""

    key: tuple[Any, ...]
    label: str
    window: tuple[str, str]
    exposure: str
    method: str
    kind: str
    results: tuple[RunResult, ...]

    @property
    def n(self) -> int:
        return len(self.results)

    @property
    def representative(self) -> RunResult:
        return self.results[median_index([r.metrics.cumulative_return for r in self.results])]

    def spread(self, metric: str) -> tuple[float, float]:
        """Min and max of ``metric`` across the seeds (NaN when no seed has a finite value; the
        Sharpe ratio as a table shows it, :func:`agent.pairs.market.metrics.table_sharpe`)."""
        if metric == "sharpe":
            vals = [table_sharpe(r.metrics)[0] for r in self.results]
        else:
            vals = [float(getattr(r.metrics, metric)) for r in self.results]
        vals = [v for v in vals if math.isfinite(v)]
        return (min(vals), max(vals)) if vals else (math.nan, math.nan)

    @property
    def seeds(self) -> tuple[int | None, ...]:
        return tuple(r.run.seed for r in self.results)


@dataclass(frozen=True, eq=False)
class Section:
    """One results table: a test window and an exposure, its settings in display order."""

    window: tuple[str, str]
    exposure: str
    settings: tuple[Setting, ...]

    @property
    def n_transitions(self) -> int:
        return max((s.representative.metrics.n_transitions for s in self.settings), default=0)

    @property
    def title(self) -> str:
        return f"{exposure_name(self.exposure)}, test decisions {self.window[0]} .. {self.window[1]}"


def _pool_key(run: RunData) -> tuple[str, ...]:
    pool = run.extra.get("pool")
    return tuple(sorted(str(t) for t in pool)) if isinstance(pool, list) else ()


def _base_label(run: RunData) -> str:
    label = method_name(run.method)
    if run.variant and run.variant != "full":
        label += f" [{run.variant}]"
    if run.backbone:
        label += f" · {run.backbone}"
    return label


def build_settings(results: Iterable[RunResult]) -> list[Setting]:
    """Group runs into settings (module doc), in display order: window, exposure (No-Beta first),
    then Moira, FinMem, the baselines (Long-Short, Short-Long, Equal-Weight, EG+Z, EG-DDQN),
    other methods; labels carry the variant and the backbone, and the experiment folder where two
    settings of one section would otherwise share a label."""
    groups: dict[tuple[Any, ...], list[RunResult]] = defaultdict(list)
    for rr in results:
        r = rr.run
        # the last element: prompts with aliases (memorization control; agent.report.memorization)
        key = (r.window, r.exposure, r.kind, r.method, r.variant, r.backbone, _pool_key(r), r.anonymized)
        groups[key].append(rr)
    base = {k: _base_label(v[0].run) + (" · anonymized" if k[-1] else "") for k, v in groups.items()}
    taken = Counter((k[0], k[1], base[k]) for k in groups)
    out = []
    for key, members in groups.items():
        members.sort(
            key=lambda x: (
                x.metrics.cumulative_return,
                x.run.seed if x.run.seed is not None else -1,
                x.run.run_id,
            )
        )
        label = base[key]
        if taken[(key[0], key[1], label)] > 1:
            folders = sorted({m.run.group for m in members})
            label += f" ({', '.join(folders)})"
        out.append(Setting(key, label, key[0], key[1], key[3], key[2], tuple(members)))
    exp_order = {e: i for i, e in enumerate(EXPOSURE_NAMES)}
    out.sort(
        key=lambda s: (
            s.window,
            exp_order.get(s.exposure, len(exp_order)),
            s.exposure,
            _ORDER.get(s.method, len(_ORDER)),
            s.method,
            s.label.removesuffix(" · anonymized"),
            s.key[-1],  # a setting's anonymized runs right after its named ones
        )
    )
    return out


def build_sections(settings: Sequence[Setting]) -> list[Section]:
    """Settings grouped by (test window, exposure), keeping their order."""
    order: list[tuple[tuple[str, str], str]] = []
    by: dict[tuple[tuple[str, str], str], list[Setting]] = defaultdict(list)
    for s in settings:
        k = (s.window, s.exposure)
        if k not in by:
            order.append(k)
        by[k].append(s)
    return [Section(k[0], k[1], tuple(by[k])) for k in order]


def _int_or_none(x: Any) -> int | None:
    return int(x) if _finite(x) else None


def results_row(setting: Setting) -> dict[str, Any]:
    """One row of a results table: the representative run's metrics, the spread across seeds of
    the cumulative return and the Sharpe ratio, the accepted policy updates (Moira's
    ``extra.accepted_policy_updates``; None for methods without a policy memory). ``sharpe`` is
    the ratio as computed (NaN where undefined); ``sharpe_shown`` what the table prints
    (0.0 for a run whose every return is zero, flagged by ``sharpe_zero_variance``)."""
    rep = setting.representative
    m = rep.metrics
    lo, hi = setting.spread("cumulative_return")
    slo, shi = setting.spread("sharpe")
    return {
        "setting": setting.label,
        "run_id": rep.run.run_id,
        "n_runs": setting.n,
        "seeds": setting.seeds,
        "n_transitions": m.n_transitions,
        "cumulative_return": m.cumulative_return,
        "return_min": lo,
        "return_max": hi,
        "sharpe": m.sharpe,
        "sharpe_shown": table_sharpe(m)[0],
        "sharpe_zero_variance": table_sharpe(m)[1],
        "sharpe_se": m.sharpe_se,
        "sharpe_min": slo,
        "sharpe_max": shi,
        "max_drawdown": m.max_drawdown,
        "annual_return": m.annual_return,
        "calmar": m.calmar,
        "annual_volatility": m.annual_volatility,
        "sortino": m.sortino,
        "win_rate": m.win_rate,
        "action_accuracy": m.action_accuracy,
        "accepted_updates": _int_or_none(rep.run.extra.get("accepted_policy_updates")),
        "pair_switches": m.pair_switches,
        "mismatches": rep.mismatches,
        **lifecycle_row(rep.run),
    }


def lifecycle_row(run: RunData) -> dict[str, Any]:
    """The run's lifecycle figures (Table 7): the share of its transitions per lifecycle state,
    recomputed from its steps (``lifecycle_shares``: None for the methods without lifecycle
    monitoring, i.e. every one but Moira), and the boundary re-screens and replacements of its test
    window (``extra.lifecycle``; None where absent)."""
    states = [str(s.lifecycle) for s in run.steps]
    life = run.extra.get("lifecycle") if isinstance(run.extra.get("lifecycle"), Mapping) else {}
    return {
        "lifecycle_shares": lifecycle_shares(states) if run.method == "moira" or any(states) else None,
        "rescreens": _int_or_none(life.get("rescreens")),
        "replacements": _int_or_none(life.get("replacements")),
    }
