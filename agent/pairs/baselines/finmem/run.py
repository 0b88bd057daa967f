"""The FinMem-style baseline (Moira paper §4.1): an LLM trader with FinMem's
layered memory and risk character on the screen's top pair, with news and business context
after selection.

Protocol (same screen, calendar, settlement and metrics as every baseline):

* the pair is the screen's top candidate at test step 001 (:func:`~agent.pairs.baselines.common.select_pair`);
* training, on the training window (must end before step 001), No-Beta sizing by default: each
  session the agent stores the day's items (news of both legs, the price observation, a digest
  every ``digest_every`` sessions), decides (``finmem_decision``), and once that decision has
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
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agent.pairs.baselines.finmem.memory import CharacterConfig, EmbeddingCache, MemoryConfig, TextEmbedder
from agent.pairs.baselines.finmem.trader import run_agent
from agent.pairs.market.masking import StepCalendar
from agent.pairs.market.provenance import PROVENANCE_FILE, ProvenanceLog
from agent.pairs.market.records import write_json
from agent.pairs.market.settlement import EXPOSURES
from bank.embedder import MiniLMEmbedder
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.chat.lockstep import Program, run_lockstep
from serving.chat.types import Sampling

if TYPE_CHECKING:  # the screen and the baselines' common code load numba: imported where used
    from agent.data.schema import Company, NewsItem
    from agent.data.store import MarketStore
    from agent.pairs.baselines.common import PairSeries, Selection, Window
    from agent.pairs.baselines.ledger import Ledger
    from agent.pairs.baselines.runner import RunSettings
    from agent.pairs.screen.causal import PairStats

__all__ = [
    "METHOD",
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


@dataclass(frozen=True)
class FinMemConfig:
    """The FinMem-style baseline.

    memory: layered memory (``[baselines.finmem.memory]``).
    character: risk character (``[baselines.finmem.character]``).
    model: registry key of the backbone (the backend must serve it). In an experiment it is the
        run's backbone unless ``[baselines.finmem] model`` fixes one (the paper's single FinMem
        row on one model, whatever the agent's backbone).
    base_url: the server of a fixed FinMem model when ``[model] backend`` is ``openai``.
    temperature: sampling temperature (0: greedy; None: unset, greedy unless server_default);
    top_p: None = unset; repetition_penalty: None = the registry's; thinking: Qwen3-style
    thinking switch (None: the model's default); server_default: leave the unset sampling fields
    to the engine (the model's generation config).
    max_tokens_decision, max_tokens_reflection: completion budgets in tokens (0: the longest
        compact reply the schema allows, + 8, which a thinking model's reasoning overruns;
        None: in an experiment, ``[model.max_tokens]``'s ``direction`` and ``reflection``, so a
        GPU config's 16,384 reaches FinMem too; on its own, 0).
    reason_max_chars, reflection_max_chars: maxLength of the decision's reason and the lesson
        (0: no bound; the call's budget must then be set: max_tokens_decision /
        max_tokens_reflection, or in an experiment ``[model.max_tokens]``).
    cite_max: most memory ids a reply may cite.
    news_per_leg: news items per leg and session stored (newest first; 0: no news; in an
        experiment ``[prompt] news_per_leg`` unless this table sets it).
    news_max_chars: length of a stored news line in compact mode (``news_token_budget`` 0);
        description_max_chars: of a business description (in an experiment ``[prompt]``'s
        unless this table sets it).
    news_token_budget: 0 = compact news lines (``news_max_chars``); > 0 = news items stored
        whole, and each decision shows its recalled news items newest first while their
        estimated tokens fit this budget (the rest are left out and counted,
        ``news_budget_cuts``): the per-prompt budget of the agent's prompts (in an experiment
        ``[prompt] news_token_budget`` unless this table sets it).
    prompt_dir: a folder of the user's prompt files (``pairs_finmem_decision.yaml``,
        ``pairs_finmem_reflection.yaml`` of the packaged format; in an experiment ``[prompt] dir``);
        empty: the packaged ones.
    hedge_window: sessions of the OLS hedge behind the observation's z-scores, ending at the
        session (the screen's lookback, 2,520; fewer when history is shorter);
    hedge_min_sessions: fewest common sessions for that hedge (below: no z is shown);
    z_window: sessions of the trading-window z (20).
    rel_move_sessions: common sessions of the observation's relative move of A against B (the
        payload's ``rel_move_<n>_pct``; 5).
    digest_every: a periodic digest of the pair's moves goes to the mid layer every this many
        sessions (FinMem's mid layer holds periodic reports).
    train_reflection: run the reflection call on settled training decisions (FinMem's training).
    test_reflection: also run it in the test window (FinMem does not; costs one call per session).
    train_exposure: sizing of the training settlements (Moira trains with No-Beta).
    """

    memory: MemoryConfig = field(default_factory=MemoryConfig)
    character: CharacterConfig = field(default_factory=CharacterConfig)
    model: str = "smollm2-135m"
    base_url: str = ""
    temperature: float | None = 0.0
    top_p: float | None = None
    repetition_penalty: float | None = None
    thinking: bool | None = None
    server_default: bool = False
    max_tokens_decision: int | None = None
    max_tokens_reflection: int | None = None
    reason_max_chars: int = 120
    reflection_max_chars: int = 200
    cite_max: int = 3
    news_per_leg: int = 3
    news_max_chars: int = 160
    description_max_chars: int = 240
    news_token_budget: int = 0
    prompt_dir: str = ""
    hedge_window: int = 2520
    hedge_min_sessions: int = 60
    z_window: int = 20
    rel_move_sessions: int = 5
    digest_every: int = 5
    train_reflection: bool = True
    test_reflection: bool = False
    train_exposure: str = "no_beta"

    def __post_init__(self) -> None:
        if not isinstance(self.memory, MemoryConfig):
            raise ConfigError(f"memory must be a MemoryConfig, got {type(self.memory).__name__}")
        if not isinstance(self.character, CharacterConfig):
            raise ConfigError(f"character must be a CharacterConfig, got {type(self.character).__name__}")
        if not self.model:
            raise ConfigError("model must be a registry key (e.g. 'smollm2-135m'), got an empty string")
        if self.temperature is not None and not (
            math.isfinite(self.temperature) and 0.0 <= self.temperature <= 5.0
        ):
            raise ConfigError(f"temperature={self.temperature}; allowed: 0..5 or unset")
        for name in ("max_tokens_decision", "max_tokens_reflection"):
            v = getattr(self, name)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 16 <= v <= 131_072)
            ):
                raise ConfigError(f"{name}={v!r}; allowed: 0 (the schema's size), 16..131072, or unset")
        for name in ("reason_max_chars", "reflection_max_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 10 <= v <= 4000):
                raise ConfigError(f"{name}={v!r}; allowed: 0 (no bound) or an integer in 10..4000")
        for name, lo, hi in (
            ("cite_max", 0, 20),
            ("news_per_leg", 0, 50),
            ("news_max_chars", 20, 4000),
            ("description_max_chars", 0, 5000),
            ("news_token_budget", 0, 100_000),
            ("z_window", 3, 1000),
            ("rel_move_sessions", 1, 250),
            ("hedge_min_sessions", 3, 5000),
            ("digest_every", 1, 250),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"{name}={v!r}; allowed: an integer in {lo}..{hi}")
        if isinstance(self.hedge_window, bool) or not self.z_window <= self.hedge_window <= 5000:
            raise ConfigError(
                f"hedge_window={self.hedge_window}; allowed: z_window={self.z_window}..5000 sessions"
            )
        for name, budget in (
            ("reason_max_chars", "max_tokens_decision"),
            ("reflection_max_chars", "max_tokens_reflection"),
        ):
            if getattr(self, name) == 0 and not getattr(self, budget):
                raise ConfigError(
                    f"{name}=0 (no bound) needs an explicit {budget} (an automatic budget is the "
                    "longest reply the schema allows, and an unbounded reason has none)"
                )
        if self.train_exposure not in EXPOSURES:
            raise ConfigError(f"train_exposure={self.train_exposure!r}; allowed: {', '.join(EXPOSURES)}")

    def sampling(self, seed: int) -> Sampling:
        """The sampling of every call of a FinMem run with ``seed``."""
        return Sampling.of(self, seed)


@dataclass(frozen=True, eq=False)
class FinMemMarket:
    """What every FinMem run of one window reads, loaded once and shared (read-only).

    ``series`` runs from the pool calendar's first session to the test end; ``train_idx`` /
    ``test_idx`` are the sessions of each window as indices into it; ``news`` maps an index to
    the items of both legs dated after the previous pool session and up to it; ``calendar``
    labels the sessions from the first training session to the test end."""

    pool: tuple[str, ...]
    train: Window
    test: Window
    selection: Selection
    settings: RunSettings
    series: PairSeries | None = None
    betas: np.ndarray | None = None
    train_idx: tuple[int, ...] = ()
    test_idx: tuple[int, ...] = ()
    news: dict[int, tuple[NewsItem, ...]] = field(default_factory=dict)
    companies: dict[str, Company] = field(default_factory=dict)
    train_screen: PairStats | None = None
    calendar: Any = None

    def label(self, index: int) -> str:
        return self.calendar.label(self.series.dates[index].item())  # type: ignore[union-attr]


def prepare_finmem(
    store: MarketStore,
    *,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    settings: RunSettings | None = None,
) -> FinMemMarket:
    """Select the pair at test step 001 and read its prices, news and companies once."""
    from agent.pairs.baselines.common import as_window, load_pair, pair_betas, select_pair
    from agent.pairs.baselines.runner import RunSettings
    from agent.pairs.screen.causal import screen_store

    cfg = settings or RunSettings()
    pool_t = tuple(sorted(set(pool)))
    if len(pool_t) < 2 or len(pool_t) != len(pool):
        raise ConfigError(f"pool={list(pool)}; allowed: at least 2 distinct tickers")
    train_w, test_w = as_window(train, "train"), as_window(test, "test")
    sel = select_pair(store, pool_t, test_w, cfg.screen)
    if train_w.end >= sel.session:
        raise ConfigError(
            f"train window {train_w.label()} must end before step 001 of the test window ({sel.session})"
        )
    if sel.candidate is None:
        log.info("no candidate pair at %s in pool %s: %s", sel.session, list(pool_t), sel.reason)
        return FinMemMarket(pool_t, train_w, test_w, sel, cfg)
    series = load_pair(store, pool_t, sel, cfg.screen.price_field)
    dates = series.dates
    lo = int(np.searchsorted(dates, np.datetime64(train_w.start, "D"), side="left"))
    hi = series.index_of(train_w.end)
    train_idx = tuple(range(lo, hi + 1))
    if len(train_idx) < 2:
        raise ConfigError(
            f"train window {train_w.label()} holds {len(train_idx)} session(s) of the pool calendar; "
            "allowed: >= 2"
        )
    test_idx = tuple(range(series.first, len(dates)))
    a, b = series.ticker_a, series.ticker_b
    first_day = dates[max(lo - 1, 0)].item()
    raw = {t: store.news_window(t, first_day, dates[-1].item()) for t in (a, b)}
    news: dict[int, tuple[NewsItem, ...]] = {}
    for g in train_idx + test_idx:
        prev = dates[g - 1].item() if g > 0 else None
        day = dates[g].item()
        news[g] = tuple(
            n for t in (a, b) for n in raw[t] if n.date <= day and (prev is None or n.date > prev)
        )
    if not any(news.values()):
        log.warning(
            "no news for %s or %s in %s..%s: FinMem's memory holds only price observations, digests, "
            "the screen's statistics and its own reflections",
            a,
            b,
            dates[lo].item(),
            dates[-1].item(),
        )
    shot = screen_store(store, dates[lo].item(), pool=(a, b), config=cfg.screen)
    stats = shot.pairs[0] if shot.pairs and math.isfinite(shot.pairs[0].pvalue) else None
    calendar = StepCalendar.from_sessions([d.item() for d in dates[lo:]])
    return FinMemMarket(
        pool_t,
        train_w,
        test_w,
        sel,
        cfg,
        series,
        pair_betas(series, cfg.beta_window),
        train_idx,
        test_idx,
        news,
        store.companies([a, b]),
        stats,
        calendar,
    )


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
) -> Program[FinMemOutcome]:
    """One run (training + test) as a lockstep program; returns a :class:`FinMemOutcome`.

    ``embedder``: the bank's embedder (``MiniLMEmbedder`` in runs; wrap it in an
    :class:`~agent.pairs.baselines.finmem.memory.EmbeddingCache` shared by the runs of a window).
    ``aliases``: an anonymized run's (:class:`agent.pairs.market.anonymize.Aliases`; the caller
    wraps the program in :func:`~agent.pairs.market.anonymize.anonymized`), for the provenance keys."""
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
        market, config, exposure=exposure, seed=seed, embedder=embedder, run_id=rid, aliases=aliases
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
    market = prepare_finmem(store, pool=pool, train=train, test=test, settings=settings)
    specs = [(e, s) for e in exposures for s in seeds]
    programs = [finmem_program(market, cfg, exposure=e, seed=s, embedder=shared) for e, s in specs]
    with progress.task(f"finmem {market.test.label()}", total=len(programs)) as task:
        outcomes = run_lockstep(programs, backend, on_round=lambda info: task.update(completed=info.finished))
    out = []
    for o in outcomes:
        run_dir = write_finmem_run(out_dir, o)
        out.append(FinMemResult(o.run_id, o.exposure, o.seed, market.selection.pair, run_dir, o))
    return out
