"""One Moira run (training + test) as a lockstep program, and the run folder it writes.

A run = (variant, exposure, seed). Its program trains the policy memory on the training window
(No-Beta sizing), freezes the accepted principles, and runs the test window under its own
exposure with daily counterfactual records and lifecycle monitoring on.

Runs share their training as far as it is the same. Runs of one :func:`warmup_key` (seed,
the policy settings the warmup depends on, selection fallback; with ``pairing = "independent"``
also the exposure) share ONE warmup: its round and its reflection, journaled once (the two A3
conditions: paper §4.3.3, "both conditions share a single-round warmup and its initial reflection
memory"). Among them, runs of one :func:`training_key` (the whole policy too) share ONE training
phase: :func:`moira_group_program` runs the warmup once, then each training's consolidation from
it (the full agent's training: lifecycle reselection on, no fixed pair, whatever the members'
test settings), then every member's test window side by side from its training's principles
and pair memory, so runs of one training start their test windows with the same first
selection request, answered once: the two exposures of a seed (``pairing = "paired"``, the
default: a Beta-against-No-Beta difference is then a paired comparison), and the A4 pair of the
full agent and its no-reselection variant (paper §4.3.4: both start from the identical
Moira-selected pair with the same policy memory). Each member's trace starts with a copy of the
shared training rows under its own run id. Metrics are those of
the test window (settled at t+1 through :mod:`agent.pairs.market.settlement`, computed by
:mod:`agent.pairs.market.metrics`). ``runs/<run_id>/`` then holds ``steps.parquet`` and
``metrics.json`` (the shared format of :mod:`agent.pairs.market.records`), ``trace.parquet``,
``training.json`` and the tape (``decisions.parquet`` + ``prices.parquet``,
:mod:`agent.pairs.market.tape`): the test decisions and their prices, which settle the run again
under other execution settings; ``provenance.parquet`` (:mod:`agent.pairs.market.provenance`):
what each model call's payload drew from, for ``localfin audit``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.pairs.experiment.config import ExperimentConfig
from agent.pairs.market.anonymize import Aliases, anonymized
from agent.pairs.market.execution import PAPER, ExecutionSettings
from agent.pairs.market.metrics import compute_metrics, lifecycle_shares
from agent.pairs.market.provenance import PROVENANCE_FILE
from agent.pairs.market.records import run_summary, write_json, write_steps
from agent.pairs.market.tape import DECISIONS_FILE, PRICES_FILE, PriceTape, write_decisions, write_prices
from agent.pairs.market.view import MarketView
from agent.pairs.moira.calls import CallSettings
from agent.pairs.moira.config import Variant
from agent.pairs.moira.episode import RunContext, WindowResult, WindowSpec, run_window
from agent.pairs.moira.memory import PairMemory
from agent.pairs.moira.policy import PolicyOutcome, consolidate, warmup
from agent.pairs.moira.principles import PrincipleValidator
from agent.pairs.moira.trace import TraceLog
from localfin.errors import ConfigError
from serving.chat.types import ChatRequest, ChatResult

__all__ = [
    "RunSpec",
    "RunOutcome",
    "warmup_key",
    "training_key",
    "training_groups",
    "training_rounds",
    "moira_program",
    "moira_group_program",
    "write_run",
]

Gen = Generator[list[ChatRequest], list[ChatResult], Any]


@dataclass(frozen=True)
class RunSpec:
    """Identity of one run of an experiment."""

    run_id: str
    variant: Variant
    exposure: str
    seed: int


@dataclass
class RunOutcome:
    """Everything a finished run produced."""

    spec: RunSpec
    policy: PolicyOutcome
    test: WindowResult
    trace: TraceLog
    execution: ExecutionSettings = PAPER
    #: closes and opens of every ticker the test decisions name, on the test sessions
    prices: PriceTape | None = field(default=None, repr=False)
    #: the prompts named the stocks by aliases (memorization control)
    anonymized: bool = False
    #: the run ids that share this run's training phase (itself included)
    training_group: tuple[str, ...] = ()
    #: the run ids that share this run's warmup (itself included; a superset of the above)
    warmup_group: tuple[str, ...] = ()
    #: what the runs of a seed under the two exposures share (experiment.pairing)
    pairing: str = "paired"

    def metrics(self) -> Any:
        steps = self.test.steps
        return compute_metrics(
            [s.realized for s in steps],
            actions=[s.action for s in steps],
            matched=[s.matched for s in steps],
            pairs=[s.pair or None for s in steps],
        )

    def extra(self) -> dict[str, Any]:
        test = self.test.stats.to_dict()
        train = self.policy.stats.to_dict()
        tokens: dict[str, dict[str, int]] = {}
        for part in (train["tokens_by_call_type"], test["tokens_by_call_type"]):
            for k, v in part.items():
                t = tokens.setdefault(k, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
                for key in t:
                    t[key] += v[key]
        return {
            "variant": self.spec.variant.name,
            "initial_pair": self.test.initial_pair,
            "pairs_held": sorted({p for p in self.test.pairs_held if p}),
            "principles": list(self.policy.principles),
            "accepted_policy_updates": self.policy.accepted_updates,
            "training_cycles": len(self.policy.cycles) - 1,
            "training_stop": self.policy.stop_reason,
            "training_best_return": self.policy.best_return,
            "test": test,
            "train": train,
            "tokens_by_call_type": tokens,
            "fallbacks_total": test["invalid_replies"] + train["invalid_replies"],
            "screens_short": test["screens_short"] + train["screens_short"],
            "screens_empty": test["screens_empty"] + train["screens_empty"],
            "execution": self.execution.to_dict(),
            "anonymized": self.anonymized,
            "lifecycle": self.lifecycle(),
            "training_shared_with": list(self.training_group),
            "warmup_shared_with": list(self.warmup_group),
            "warmup_principles": list(self.policy.warmup_principles),
            "pairing": self.pairing,
        }

    def lifecycle(self) -> dict[str, Any]:
        """The test window's lifecycle figures (the paper's Table 7): the share of transitions
        per lifecycle state of the held pair, the validation boundaries, the boundaries that
        decided BREAK, the boundary re-screens and the replacements."""
        t = self.test.stats
        return {
            "state_shares": lifecycle_shares([s.lifecycle for s in self.test.steps]),
            "boundaries": t.boundaries,
            "boundary_breaks": t.boundary_breaks,
            "rescreens": t.rescreens,
            "replacements": t.replacements,
        }


def warmup_key(spec: RunSpec, pairing: str = "paired") -> tuple[Any, ...]:
    """What a run's warmup depends on: its seed, the policy settings the warmup reads
    (:meth:`PolicyConfig.warmup_part`) and its selection fallback (training always uses No-Beta
    sizing, lifecycle reselection and a model-selected pair, so exposure, ``reselection`` and
    ``fixed_pair`` do not enter); with ``pairing`` ``independent`` also its exposure (each
    exposure trains on its own seed stream)."""
    own = spec.exposure if pairing == "independent" else ""
    return (spec.seed, own, spec.variant.policy.warmup_part(), spec.variant.selection.fallback)


def training_key(spec: RunSpec, pairing: str = "paired") -> tuple[Any, ...]:
    """What a run's whole training depends on: its :func:`warmup_key` and its policy settings."""
    return (*warmup_key(spec, pairing), spec.variant.policy)


def training_groups(specs: list[RunSpec], pairing: str = "paired") -> list[list[RunSpec]]:
    """``specs`` grouped by :func:`warmup_key` (one program each: one warmup, then every
    training of the group), in the order of each group's first run."""
    groups: dict[tuple[Any, ...], list[RunSpec]] = {}
    for s in specs:
        groups.setdefault(warmup_key(s, pairing), []).append(s)
    return list(groups.values())


def training_rounds(group: list[RunSpec], pairing: str = "paired") -> int:
    """Training-window passes of one :func:`training_groups` group at most: the shared warmup
    round plus ``max_cycles`` replays for each of its trainings that consolidates (none for
    the A3 control; the warmup's own reflection memory is measured by the first replay)."""
    trainings = {training_key(s, pairing): s.variant.policy for s in group}
    return 1 + sum(p.max_cycles for p in trainings.values() if p.consolidation)


def moira_program(
    spec: RunSpec,
    cfg: ExperimentConfig,
    view: MarketView,
    *,
    on_session: Callable[[], None] = lambda: None,
) -> Gen:
    """The generator of one run; returns a :class:`RunOutcome` (a group of one)."""
    outcomes = yield from moira_group_program([spec], cfg, view, on_session=on_session)
    return outcomes[0]


def moira_group_program(
    specs: list[RunSpec],
    cfg: ExperimentConfig,
    view: MarketView,
    *,
    on_session: Callable[[], None] = lambda: None,
) -> Gen:
    """One warmup for ``specs`` (runs of one :func:`warmup_key`), one consolidation per
    :func:`training_key` among them, then their test windows side by side; returns their
    :class:`RunOutcome` in order. With ``anonymize`` every request goes to the model with the
    pool's aliases and every reply comes back mapped to real names."""
    keys = {warmup_key(s, cfg.pairing) for s in specs}
    if len(keys) != 1:
        raise ConfigError(
            f"runs {[s.run_id for s in specs]} do not share one warmup (seed, warmup policy, fallback"
            + (", exposure" if cfg.pairing == "independent" else "")
            + ")"
        )
    if not cfg.anonymize:
        return (yield from _group_program(specs, cfg, view, on_session, None))
    aliases = Aliases.for_pool(view.pool, view.companies)
    return (yield from anonymized(_group_program(specs, cfg, view, on_session, aliases), aliases))


def _together(programs: list[Gen]) -> Gen:
    """Run lockstep programs side by side inside one program: each round yields their pending
    requests together (program order) and hands each its own results; returns their outcomes."""
    outcomes: list[Any] = [None] * len(programs)
    pending: dict[int, list[ChatRequest]] = {}
    for i, p in enumerate(programs):
        try:
            pending[i] = next(p)
        except StopIteration as stop:
            outcomes[i] = stop.value
    while pending:
        order = sorted(pending)
        results = yield [r for i in order for r in pending[i]]
        k, nxt = 0, {}
        for i in order:
            n = len(pending[i])
            try:
                nxt[i] = programs[i].send(list(results[k : k + n]))
            except StopIteration as stop:
                outcomes[i] = stop.value
            k += n
        pending = nxt
    return outcomes


def _context(
    spec: RunSpec, cfg: ExperimentConfig, view: MarketView, trace: TraceLog, on_session: Any
) -> RunContext:
    return RunContext(
        run_id=spec.run_id,
        view=view,
        settings=CallSettings(
            model=cfg.model.backbone,
            sampling=cfg.model.sampling(cfg.request_seed(spec.seed, spec.exposure)),
            max_tokens=cfg.model.max_tokens,
            prompt=cfg.prompt,
            decoding=cfg.model.decoding,
        ),
        prompt=cfg.prompt,
        selection=spec.variant.selection,
        lifecycle=cfg.lifecycle,
        trace=trace,
        on_session=on_session,
        no_beta_legs=cfg.no_beta_legs,
        execution=cfg.execution_settings(),
        beta_window=cfg.beta_window,
    )


def _copy_training(src: TraceLog, dst: TraceLog) -> None:
    """The shared training rows (trace and provenance) under ``dst``'s run id, numbered on from
    ``dst``'s last event (the warmup's and the consolidation's own numbers both start at 0)."""
    start = len(dst.events)
    dst.events += [replace(e, run_id=dst.run_id, seq=start + i) for i, e in enumerate(src.events)]
    dst.provenance.rows += [replace(r, run_id=dst.run_id) for r in src.provenance.rows]


def _group_program(
    specs: list[RunSpec],
    cfg: ExperimentConfig,
    view: MarketView,
    on_session: Callable[[], None],
    aliases: Any,
) -> Gen:
    w = cfg.windows
    train = tuple(view.sessions(w.train_start, w.train_end))
    test = tuple(view.sessions(w.test_start, w.test_end))
    for name, sessions in (("training", train), ("test", test)):
        if len(sessions) < 2:
            raise ConfigError(
                f"the {name} window has {len(sessions)} session(s) of the pool calendar; allowed: >= 2 "
                "(check windows.* against the store's dates)"
            )
    rewrite = aliases.request if aliases is not None else None

    def trace_of(run_id: str) -> TraceLog:
        t = TraceLog(run_id)
        t.provenance.rewrite = rewrite
        return t

    def train_ctx(spec: RunSpec, trace: TraceLog) -> RunContext:
        # the full agent's training: reselection on and the model's own first pair, whatever the
        # members do in their test windows (A4 changes only the test: paper §4.3.4)
        sel = replace(spec.variant.selection, reselection=True, fixed_pair="")
        full = replace(spec, variant=replace(spec.variant, selection=sel))
        return _context(full, cfg, view, trace, on_session)

    def validator_of(policy: Any) -> PrincipleValidator:
        return PrincipleValidator(
            view.pool,
            {t: c.name for t, c in view.companies.items()},
            max_chars=cfg.prompt.principle_max_chars,
            min_chars=cfg.prompt.principle_min_chars,
            min_words=policy.principle_min_words,
            direction_rule=policy.direction_rule,
            rules=policy.principle_rules,
        )

    lead = specs[0]
    warm_trace = trace_of(lead.run_id)
    validator = validator_of(lead.variant.policy)
    warm = yield from warmup(train_ctx(lead, warm_trace), train, lead.variant.policy, validator)
    subgroups: dict[tuple[Any, ...], list[RunSpec]] = {}
    for s in specs:
        subgroups.setdefault(training_key(s, cfg.pairing), []).append(s)
    sub_traces = [trace_of(g[0].run_id) for g in subgroups.values()]
    policies = yield from _together(
        [
            consolidate(train_ctx(g[0], t), train, g[0].variant.policy, validator, warm)
            for g, t in zip(subgroups.values(), sub_traces)
        ]
    )
    trained: dict[str, tuple[PolicyOutcome, TraceLog, tuple[str, ...]]] = {}
    for g, t, pol in zip(subgroups.values(), sub_traces, policies):
        for s in g:
            trained[s.run_id] = (pol, t, tuple(x.run_id for x in g))
    traces, tests = [], []
    for spec in specs:
        policy, sub, _ = trained[spec.run_id]
        trace = trace_of(spec.run_id)
        _copy_training(warm_trace, trace)
        _copy_training(sub, trace)
        traces.append(trace)
        memory = policy.pair_memory if spec.variant.policy.carry_pair_memory else PairMemory()
        window = WindowSpec(
            "test",
            0,
            test,
            spec.exposure,
            policy.principles,
            memory.copy(),
            spec.variant.selection.fixed_pair,
        )
        tests.append(run_window(_context(spec, cfg, view, trace, on_session), window))
    results = yield from _together(tests)
    group = tuple(s.run_id for s in specs)
    out = []
    for spec, trace, result in zip(specs, traces, results):
        policy, _, shared = trained[spec.run_id]
        tickers = {t for d in result.decisions for t in d.tickers()}
        out.append(
            RunOutcome(
                spec,
                policy,
                result,
                trace,
                cfg.execution_settings(),
                view.price_tape(tickers, test),
                aliases is not None,
                shared,
                group,
                cfg.pairing,
            )
        )
    return out


def write_run(run_dir: str | Path, outcome: RunOutcome) -> dict[str, Any]:
    """Write the run folder; returns the ``metrics.json`` document."""
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    write_steps(d / "steps.parquet", outcome.test.steps)
    write_decisions(d / DECISIONS_FILE, outcome.test.decisions)
    if outcome.prices is not None:
        write_prices(d / PRICES_FILE, outcome.prices)
    outcome.trace.write(d / "trace.parquet")
    outcome.trace.provenance.write(d / PROVENANCE_FILE)
    write_json(
        d / "training.json",
        {
            "run_id": outcome.spec.run_id,
            "principles": list(outcome.policy.principles),
            "stop_reason": outcome.policy.stop_reason,
            "best_return": outcome.policy.best_return,
            "cycles": [c.to_dict() for c in outcome.policy.cycles],
        },
    )
    doc = run_summary(
        run_id=outcome.spec.run_id,
        kind="moira",
        method="moira",
        exposure=outcome.spec.exposure,
        seed=outcome.spec.seed,
        metrics=outcome.metrics(),
        extra=outcome.extra(),
    )
    write_json(d / "metrics.json", doc)
    return doc
