"""The FinMem-style baseline (Moira paper §4.1): an LLM trader with FinMem's
layered memory and risk character on the screen's top pair, with news and business context
after selection.

Protocol (same screen, calendar, settlement and metrics as every baseline):

* the pair is the screen's top candidate at test step 001 (:func:`~agent.pairs.baselines.common.select_pair`);
* memory as FinMem's code fills it: the day's news of both legs in the short layer, each leg's
  quarterly report (10-Q) in the mid layer and annual report (10-K) in the long layer from the
  first session after its filing date, the decisions' lessons and reasons in the reflection layer
  (the store's filings, :meth:`agent.data.store.MarketStore.filings`; a store without filings
  for the pair runs with mid and long holding only what rises from short, and the run's summary
  says so);
* training, on the training window (must end before step 001), No-Beta sizing by default: each
  session the agent stores the day's items, decides (``finmem_decision``), and once that decision has
  settled at the next session, feedback raises or lowers the importance of the memory items it
  cited and a reflection call (``finmem_reflection``) writes a lesson into the reflection layer;
* test, on the test window under the run's exposure: the same daily loop without the reflection
  call; each settled decision is written into the reflection layer as an outcome note (FinMem
  keeps learning at test time through its access counters and stored reasoning);
* the decision at session t reads memory built from data up to t and settled outcomes up to t;
  the action is held from close t to close t+1 (N sessions, N - 1 transitions); a session where
  the pair is not tradable is FLAT without a call; a cut or invalid reply is FLAT, recorded.

Model-visible step labels count from the first training session through the test window (one
calendar: memory outlives the phase change, so each remembered item keeps a unique label).
The pair itself is chosen at test step 001, after the training window; like EG-DDQN's, the
training phase therefore runs on a pair picked with hindsight of the training window (it is not
scored); every number a training prompt shows is computed from data up to its own session.

A run is a :mod:`serving.chat.lockstep` program: :func:`finmem_program` yields request lists and
returns a :class:`FinMemOutcome`; :func:`run_finmem` runs seeds x exposures in lockstep on the
caller's backend (a :class:`serving.journal.JournaledBackend`, so a killed run resumes) and
writes ``runs/<run_id>/steps.parquet``, ``metrics.json`` (kind baseline, method finmem) and
``memory_trace.json`` and ``provenance.parquet`` (what each call's payload drew from, for
``localfin audit``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.pairs.baselines.finmem.config import PRIOR_FILINGS, FinMemConfig
from agent.pairs.baselines.finmem.context import PromptBudget, prompt_budget
from agent.pairs.baselines.finmem.market import FinMemMarket, filings_summary, prepare_finmem, say_filings
from agent.pairs.baselines.finmem.memory import EmbeddingCache, TextEmbedder
from agent.pairs.baselines.finmem.trader import run_agent
from agent.pairs.market.provenance import PROVENANCE_FILE, ProvenanceLog
from agent.pairs.market.records import write_json
from agent.pairs.market.settlement import EXPOSURES
from bank.embedder import MiniLMEmbedder
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.chat.lockstep import Program, run_lockstep

if TYPE_CHECKING:  # the screen and the baselines' common code load numba: imported where used
    from agent.data.store import MarketStore
    from agent.pairs.baselines.common import Window
    from agent.pairs.baselines.ledger import Ledger
    from agent.pairs.baselines.runner import RunSettings

__all__ = [
    "METHOD",
    "PRIOR_FILINGS",
    "filings_summary",
    "FinMemConfig",
    "FinMemMarket",
    "FinMemOutcome",
    "FinMemResult",
    "prepare_finmem",
    "finmem_program",
    "write_finmem_run",
    "run_finmem",
]

log = logging.getLogger(__name__)

METHOD = "finmem"


@dataclass
class FinMemOutcome:
    """A finished run: identity, the settled test ledger, counters, the memory trace and the
    realized return of every decision the loop settled (training, then test), oldest first."""

    run_id: str
    exposure: str
    seed: int
    ledger: Ledger
    extra: dict[str, Any]
    trace: list[dict[str, Any]]
    settled_returns: list[float] = field(default_factory=list)
    #: every model call (phase, call type, request key), written to memory_trace.json
    calls: list[dict[str, str]] = field(default_factory=list)
    #: what each call's payload drew from (None: a run without a pair, no call made)
    provenance: ProvenanceLog | None = None


def finmem_program(
    market: FinMemMarket,
    config: FinMemConfig,
    *,
    exposure: str,
    seed: int,
    embedder: TextEmbedder,
    run_id: str | None = None,
    aliases: Any = None,
    budget: PromptBudget | None = None,
) -> Program[FinMemOutcome]:
    """One run (training + test) as a lockstep program; returns a :class:`FinMemOutcome`.

    ``embedder``: the bank's embedder (``MiniLMEmbedder`` in runs; wrap it in an
    :class:`~agent.pairs.baselines.finmem.memory.EmbeddingCache` shared by the runs of a window).
    ``aliases``: an anonymized run's (:class:`agent.pairs.market.anonymize.Aliases`; the caller
    wraps the program in :func:`~agent.pairs.market.anonymize.anonymized`), for the provenance keys.
    ``budget``: the served context every request is checked against before it is sent
    (:func:`~agent.pairs.baselines.finmem.context.prompt_budget`; None: unchecked)."""
    from agent.pairs.baselines.common import check_exposure
    from agent.pairs.baselines.ledger import flat_records, settle_actions

    check_exposure(exposure)
    rid = run_id or f"{METHOD}-{exposure}-seed{seed}"
    extra = _base_extra(market, config) | {"anonymized": aliases is not None}
    if market.series is None:
        ledger = flat_records(market.selection.sessions, "no candidate pair")
        extra |= {"n_missing": 0, "n_no_beta": 0, "tokens_by_call_type": {}, "fallbacks": {"total": 0}}
        return FinMemOutcome(rid, exposure, seed, ledger, extra, [])
    state = yield from run_agent(
        market,
        config,
        exposure=exposure,
        seed=seed,
        embedder=embedder,
        run_id=rid,
        aliases=aliases,
        budget=budget,
    )
    ledger = settle_actions(
        market.series,
        state.actions,
        exposure,
        betas=market.betas,
        execution=market.settings.execution_settings(),
        notes=state.notes,
        no_beta_legs=market.settings.no_beta_legs,
    )
    recs = tuple(replace(r, fallback=f) for r, f in zip(ledger.records, state.fallback_steps))
    decisions = tuple(replace(d, request_key=k) for d, k in zip(ledger.decisions, state.test_keys))
    ledger = replace(ledger, records=recs, decisions=decisions)
    extra |= state.summary(len(recs)) | {"n_missing": ledger.n_missing, "n_no_beta": ledger.n_no_beta}
    return FinMemOutcome(
        rid, exposure, seed, ledger, extra, state.trace, state.settled_returns, state.calls, state.provenance
    )


def _base_extra(market: FinMemMarket, config: FinMemConfig) -> dict[str, Any]:
    sel = market.selection
    s = market.settings
    return {
        "pool": list(market.pool),
        "test_window": [str(sel.sessions[0]), str(sel.sessions[-1])],
        "n_sessions": len(sel.sessions),
        "train_window": [market.train.start.isoformat(), market.train.end.isoformat()],
        "n_train_sessions": len(market.train_idx),
        **sel.describe(),
        "n_news_items": sum(len(v) for v in market.news.values()),
        "filings": filings_summary(market, config),
        "config": asdict(config),
        "settings": {
            "beta_window": s.beta_window,
            "cost_bps": s.cost_bps,
            "no_beta_legs": s.no_beta_legs,
            "price_field": s.screen.price_field,
            "screen_lookback": s.screen.lookback,
        },
        "execution": s.execution_settings().to_dict(),
    }


def write_finmem_run(out_dir: str | Path, outcome: FinMemOutcome) -> Path:
    """Write ``<out_dir>/runs/<run_id>/`` (steps.parquet, metrics.json, memory_trace.json,
    provenance.parquet)."""
    from agent.pairs.baselines.ledger import write_run

    run_dir = write_run(
        out_dir,
        outcome.run_id,
        method=METHOD,
        exposure=outcome.exposure,
        seed=outcome.seed,
        ledger=outcome.ledger,
        metrics=outcome.ledger.metrics(),
        extra=outcome.extra,
    )
    write_json(
        run_dir / "memory_trace.json",
        {"run_id": outcome.run_id, "sessions": outcome.trace, "calls": outcome.calls},
    )
    (outcome.provenance or ProvenanceLog(outcome.run_id)).write(run_dir / PROVENANCE_FILE)
    return run_dir


@dataclass(frozen=True)
class FinMemResult:
    """One written run."""

    run_id: str
    exposure: str
    seed: int
    pair: str
    run_dir: Path
    outcome: FinMemOutcome


def run_finmem(
    store: MarketStore,
    backend: Backend,
    *,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    out_dir: str | Path,
    exposures: Sequence[str] = EXPOSURES,
    seeds: Sequence[int] = (0,),
    config: FinMemConfig | None = None,
    settings: RunSettings | None = None,
    embedder: TextEmbedder | None = None,
    progress: Progress = NULL_PROGRESS,
) -> list[FinMemResult]:
    """Every (exposure, seed) run on one window, in lockstep on ``backend`` (pass a
    JournaledBackend); run ids ``finmem-<exposure>-seed<seed>``. ``embedder`` defaults to MiniLM."""
    from agent.pairs.baselines.common import check_exposure

    cfg = config or FinMemConfig()
    for e in exposures:
        check_exposure(e)
    if not exposures or not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(
            f"exposures={list(exposures)}, seeds={list(seeds)}; allowed: non-empty, distinct seeds"
        )
    if embedder is None:
        embedder = MiniLMEmbedder()
    shared = embedder if isinstance(embedder, EmbeddingCache) else EmbeddingCache(embedder)
    market = prepare_finmem(
        store, pool=pool, train=train, test=test, settings=settings, prior_filings=cfg.prior_filings
    )
    say_filings(market, cfg)
    budget = prompt_budget(cfg.model, cfg.max_model_len) if market.series is not None else None
    specs = [(e, s) for e in exposures for s in seeds]
    programs = [
        finmem_program(market, cfg, exposure=e, seed=s, embedder=shared, budget=budget) for e, s in specs
    ]
    with progress.task(f"finmem {market.test.label()}", total=len(programs)) as task:
        outcomes = run_lockstep(programs, backend, on_round=lambda info: task.update(completed=info.finished))
    out = []
    for o in outcomes:
        run_dir = write_finmem_run(out_dir, o)
        out.append(FinMemResult(o.run_id, o.exposure, o.seed, market.selection.pair, run_dir, o))
    return out
