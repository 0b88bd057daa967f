"""One pass of Moira over one window (a training round or the test window), as a lockstep program.

Timing: the window's sessions are steps 001..N. At step k the agent sees data up to
and including the close of that session; the action decided there is held to the next session's
close and settled then, so a window of N sessions has N-1 settlements and no decision is asked
for at its last session. Each session runs, in this order:

1. settle the previous decision (all three actions' returns, the best one, the match flag,
   a counterfactual record with a code-written lesson, the pair-quality memory);
2. lifecycle check of the held pair (:mod:`agent.pairs.lifecycle.monitor`: the six statistical factors;
   keyword-matched news goes to the ``news_verify`` call); once the pair's cycle holds
   ``validation_period`` sessions (a validation boundary: steps 024, 047, ... for a pair held
   from step 001) the ``break_check`` call and the cycle verdict; a replace verdict re-screens
   without the broken pair(s) and re-selects (unless reselection is off, ablation A4);
3. with no pair held, the selection is retried at every ``validation_period``-th session of
   the window (the same boundaries);
4. the ``direction`` call on the held pair (an unusable reply falls back to FLAT); with no pair
   held the step is FLAT without a call.

The pair is selected at step 001 from the screen of that session. A screen with no candidate
leaves the run without a pair (FLAT) until the next boundary retries; one with fewer candidates
than ``top_k`` is used as it is. Both are counted (dates listed in the metrics).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any

from agent.pairs.lifecycle.monitor import PairMonitor
from agent.pairs.market.execution import PAPER, Book, ExecutionSettings
from agent.pairs.market.masking import StepCalendar
from agent.pairs.market.records import StepRecord
from agent.pairs.market.settlement import FLAT, LegWeights, causal_betas, leg_weights, no_beta_weights
from agent.pairs.market.tape import Decision
from agent.pairs.market.view import MarketView
from agent.pairs.moira import calls, payloads
from agent.pairs.moira.config import PromptConfig, SelectionConfig
from agent.pairs.moira.memory import CounterfactualRecord, PairMemory, QualityRule, lesson_for
from agent.pairs.moira.stats import PhaseStats
from agent.pairs.moira.trace import TraceLog
from localfin.errors import ConfigError
from serving.chat.types import ChatRequest, ChatResult

__all__ = ["RunContext", "WindowSpec", "WindowResult", "run_window", "call"]

Gen = Generator[list[ChatRequest], list[ChatResult], Any]


@dataclass
class RunContext:
    """What every window of one run shares (one per run; never shared between runs)."""

    run_id: str
    view: MarketView
    settings: calls.CallSettings
    prompt: PromptConfig
    selection: SelectionConfig
    lifecycle: Any  # agent.pairs.lifecycle.machine.LifecycleConfig
    trace: TraceLog
    on_session: Callable[[], None] = lambda: None
    no_beta_legs: str = "dollar_neutral"
    #: fills and costs of every settlement (agent.pairs.market.execution; default the papers')
    execution: ExecutionSettings = PAPER
    #: sessions of the Beta exposure's rolling hedge ratio (paper §4.1: 20)
    beta_window: int = 20


@dataclass(frozen=True)
class WindowSpec:
    """One window pass: ``phase`` train/test, training ``round`` (0 = warmup), the sessions,
    the exposure used for sizing, the principles in the direction prompt, the pair-quality
    memory it starts with, and an optional fixed first pair (``"A/B"``, ablation A4)."""

    phase: str
    round: int
    sessions: tuple[dt.date, ...]
    exposure: str
    principles: tuple[str, ...] = ()
    pair_memory: PairMemory = field(default_factory=PairMemory)
    fixed_pair: str = ""


@dataclass
class WindowResult:
    """What a window pass produced (returns are the realized daily returns, fractions)."""

    spec: WindowSpec
    steps: list[StepRecord]
    records: list[CounterfactualRecord]
    returns: list[float]
    pair_memory: PairMemory
    stats: PhaseStats
    initial_pair: str
    pairs_held: list[str]
    #: the window's recorded decisions (the tape of agent.pairs.market.tape), one per step
    decisions: list[Decision] = field(default_factory=list)

    @property
    def total_return(self) -> float:
        """Cumulative training return as the policy gate uses it: the sum of daily returns."""
        return float(sum(self.returns))


def call(req: ChatRequest) -> Gen:
    """Yield one request and return its result (the caller counts it, since it knows whether
    the reply was usable)."""
    results = yield [req]
    return results[0]


@dataclass
class _Pending:
    """A decision waiting for its settlement."""

    step: int
    index: int
    pair: tuple[str, str] | None
    action: str
    weights: LegWeights
    z_trade: float
    rel_change: float
    lifecycle: str
    fallback: bool
    note: str
    request_key: str = ""


class _Window:
    def __init__(self, ctx: RunContext, spec: WindowSpec) -> None:

        self.ctx, self.spec = ctx, spec
        self.view = ctx.view
        self.sessions = spec.sessions
        self.cal = StepCalendar.from_sessions(spec.sessions)
        self.gidx = [self.view.index(d) for d in spec.sessions]
        self.stats = PhaseStats()
        self.memory = spec.pair_memory.copy()
        p = ctx.prompt
        self.quality_rule = QualityRule(
            p.pair_quality_min_held, p.pair_quality_reverting, p.pair_quality_weak
        )
        self.records: list[CounterfactualRecord] = []
        self.steps: list[StepRecord] = []
        self.decisions: list[Decision] = []
        self.returns: list[float] = []
        self.pairs_held: list[str] = []
        self.pair: tuple[str, str] | None = None
        self.monitor: Any = None
        self.broken: set[tuple[str, str]] = set()
        # the position carried between settlements; a pair change closes the old legs at the next
        # fill (their turnover is charged there, and under next_open their overnight move earned)
        self.book = Book(ctx.execution, self.view.quote)
        self.equity = 1.0
        self.pending: _Pending | None = None
        self.initial_pair = ""

    # -- helpers -----------------------------------------------------------------------------
    def label(self, step: int) -> str:
        return self.cal.label_at(step - 1)

    @property
    def pair_label(self) -> str:
        return f"{self.pair[0]}/{self.pair[1]}" if self.pair else ""

    def trace(self, i: int, kind: str, **kw: Any) -> None:
        self.ctx.trace.add(
            phase=self.spec.phase,
            round=self.spec.round,
            step=i + 1,
            date=self.sessions[i].isoformat(),
            kind=kind,
            pair=self.pair_label,
            **kw,
        )

    def _set_pair(self, i: int, pair: tuple[str, str] | None) -> None:
        self.pair = pair
        self.monitor = (
            PairMonitor(
                self.ctx, self.stats, self.cal, self.spec.phase, self.spec.round, pair, i, self.gidx[i]
            )
            if pair
            else None
        )
        if pair and not self.initial_pair:
            self.initial_pair = self.pair_label

    def provenance(self, req: ChatRequest, i: int, **sources: Any) -> None:
        """Record what ``req``'s payload drew from (:mod:`agent.pairs.market.provenance`)."""
        self.ctx.trace.provenance.record(
            req,
            phase=self.spec.phase,
            round=self.spec.round,
            step=i + 1,
            decision_date=self.sessions[i],
            **sources,
        )

    # -- what the calls see ------------------------------------------------------------------
    def recent_news(
        self, tickers: list[str], i: int, call_type: str
    ) -> tuple[dict[str, list[dict[str, str]]], list[dt.date]]:
        """Each ticker's latest news available within the last ``news_lookback_sessions``
        sessions up to session ``i`` (masked, newest first; one token budget for all of them),
        and the date of every item shown; the direction call with ``direction_news`` ``latest``
        shows each leg's newest item only. A budget cut is counted for ``call_type``."""
        g = self.gidx[i]
        cfg = self.ctx.prompt
        first = self.view.dates[max(0, g - cfg.news_lookback_sessions + 1)]
        items = [self.view.news_until(t, first, g) for t in tickers]
        if call_type == "direction" and cfg.direction_news == "latest":
            # A.2: the latest available news of each leg (one item a leg)
            cfg = replace(cfg, news_per_leg=min(1, cfg.news_per_leg))
        pick = payloads.pick_news(items, cfg, self.cal)
        self.stats.count_news(call_type, pick.budget.omitted)
        shown = pick.groups
        dates = [n.date for group, out in zip(items, shown) for n in list(group)[::-1][: len(out)]]
        return dict(zip(tickers, shown)), dates

    def known_states(self) -> dict[str, str]:
        """The lifecycle state the agent has for a pair: the held pair's current one, else the
        last one its pair-quality memory holds (pairs held before, this window or an earlier
        one whose memory it carries; BREAK for a pair that broke)."""
        out = self.memory.states()
        if self.monitor is not None:
            out[self.pair_label] = self.monitor.state
        return out

    # -- pair selection ------------------------------------------------------------------------
    def select(self, i: int, reason: str) -> Gen:
        """Screen at session ``i`` (without broken pairs) and let the model pick; returns the
        new pair, or the current one when the reply is unusable and the fallback is ``keep``,
        or None when the screen has no candidate."""
        ctx, day = self.ctx, self.sessions[i]
        fixed = self.spec.fixed_pair if i == 0 else ""
        if fixed:
            a, b = sorted(fixed.split("/"))
            fixed = f"{a}/{b}"
            self.trace(i, "select", decision={"pair": fixed, "why": "fixed initial pair"}, state_after=fixed)
            return (a, b)
        screen = self.view.screen(day, exclude=self.broken)
        cands = list(screen.candidates)
        self.stats.screens += 1
        if len(cands) < screen.config.top_k:
            self.stats.short_screen_dates.append(day.isoformat())
        if not cands:
            self.stats.empty_screen_dates.append(day.isoformat())
            self.trace(
                i,
                "no_candidates",
                decision={"pair": None, "why": reason},
                detail={
                    "excluded": sorted("/".join(p) for p in self.broken),
                    "pairs_tested": len(screen.pairs),
                },
                state_before=self.pair_label,
                state_after="",
            )
            return None
        labels = [f"{c.ticker_a}/{c.ticker_b}" for c in cands]
        tickers = [t for c in cands for t in (c.ticker_a, c.ticker_b)]
        news, news_dates = self.recent_news(list(dict.fromkeys(tickers)), i, "pair_selection")
        req = calls.selection_request(
            ctx.settings,
            payloads.selection_payload(self.label(i + 1), cands, news, self.known_states()),
            labels,
            payloads.company_lines(tickers, self.view.companies, ctx.prompt, self.cal),
            self.memory.lines(self.quality_rule),
            block_order=ctx.prompt.block_order,
        )
        # every candidate's statistics come from the screen's price window
        self.provenance(
            req, i, prices=[screen.session] * len(cands), news=news_dates, screen_end=screen.session
        )
        res = yield from call(req)
        parsed = calls.parse_selection(res, labels)
        self.stats.count_call(res, parsed.fallback)
        if parsed.fallback:
            new = self.pair if ctx.selection.fallback == "keep" else (cands[0].ticker_a, cands[0].ticker_b)
            decision = {"pair": "/".join(new) if new else None, "why": f"fallback ({ctx.selection.fallback})"}
        else:
            a, b = parsed.value["pair"].split("/")
            new = (a, b)
            decision = {"pair": parsed.value["pair"], "reason": parsed.value["reason"], "why": reason}
        self.trace(
            i,
            "select",
            result=res,
            decision=decision,
            fallback=parsed.fallback,
            state_before=self.pair_label,
            state_after="/".join(new) if new else "",
            detail={"candidates": labels, "short": len(cands) < screen.config.top_k},
        )
        return new

    # -- settlement ----------------------------------------------------------------------------
    def settle_pending(self, i: int) -> None:
        p = self.pending
        assert p is not None
        g0, g1 = p.index, self.gidx[i]
        view = self.view
        if g1 != g0 + 1:
            raise ConfigError(f"settling step {p.step}: sessions {g0} and {g1} are not consecutive")
        fill = self.book.settle(g0, p.pair, p.action, p.weights if p.pair else None)
        rets, best, matched, realized = dict(fill.returns), fill.best, fill.matched, fill.realized
        if p.pair is not None:
            a, b = p.pair
            label = f"{a}/{b}"
            rec = CounterfactualRecord(
                p.step,
                label,
                p.action,
                rets["LONG_SHORT"],
                rets["SHORT_LONG"],
                best,
                matched,
                p.z_trade,
                p.rel_change,
                lesson_for(p.action, rets, best, matched),
            )
            self.records.append(rec)
            z_next = view.pair_state(a, b, g1).z_trade
            if math.isfinite(z_next) and math.isfinite(p.z_trade):
                self.memory.observe(label, abs(z_next) < abs(p.z_trade))
        self.equity *= 1.0 + realized
        self.returns.append(realized)
        pair = "/".join(p.pair) if p.pair else ""
        nan = math.nan
        self.decisions.append(
            Decision(
                step=p.step,
                date=self.sessions[p.step - 1].isoformat(),
                settle_date=self.sessions[i].isoformat(),
                pair=pair,
                action=p.action,
                w_a=p.weights.w_a if p.pair else nan,
                w_b=p.weights.w_b if p.pair else nan,
                request_key=p.request_key,
            )
        )
        self.steps.append(
            StepRecord(
                step=p.step,
                date=self.sessions[p.step - 1].isoformat(),
                pair=pair,
                action=p.action,
                ret_long_short=rets["LONG_SHORT"],
                ret_short_long=rets["SHORT_LONG"],
                realized=realized,
                equity=self.equity,
                best=best,
                matched=bool(matched),
                lifecycle=p.lifecycle,
                fallback=p.fallback,
                note=p.note,
            )
        )
        self.trace(
            i,
            "settle",
            decision={"action": p.action, "realized": realized, "best": best, "matched": bool(matched)},
            detail={"returns": rets, "decided_at_step": p.step, "pair": pair, "cost": fill.cost},
        )
        self.pending = None

    # -- direction -----------------------------------------------------------------------------
    def weights(self, i: int) -> tuple[LegWeights, str]:
        if self.pair is None:
            return leg_weights("no_beta"), ""
        a, b = self.pair
        g = self.gidx[i]
        no_beta = no_beta_weights(self.ctx.no_beta_legs, self.view.price(a, g), self.view.price(b, g))
        if self.spec.exposure == "no_beta":
            return no_beta, ""
        window = self.ctx.beta_window
        beta = causal_betas(self.view.log_prices(a, g), self.view.log_prices(b, g), window)[-1]
        if not math.isfinite(beta):
            self.stats.beta_fallbacks += 1
            return no_beta, f"no {window}-session hedge ratio: No-Beta sizing"
        return leg_weights("beta", float(beta)), ""

    def decide(self, i: int) -> Gen:
        ctx, step = self.ctx, i + 1
        lifecycle = self.monitor.state if self.monitor is not None else ""
        if self.pair is None:
            self.stats.no_pair_steps += 1
            self.pending = _Pending(
                step,
                self.gidx[i],
                None,
                FLAT,
                leg_weights("no_beta"),
                math.nan,
                math.nan,
                "",
                False,
                "no pair held",
            )
            self.trace(i, "direction", decision={"action": FLAT, "why": "no pair held"})
            return
        a, b = self.pair
        g = self.gidx[i]
        state = self.view.pair_state(a, b, g)
        news, news_dates = self.recent_news([a, b], i, "direction")
        shown = self.records[-ctx.prompt.memory_records :] if ctx.prompt.memory_records else []
        payload = payloads.direction_payload(
            self.label(step),
            (a, b),
            state,
            news[a],
            news[b],
            lifecycle,
            payloads.memory_payload(shown, self.label),
            spread_z=(ctx.prompt.spread_far_z, ctx.prompt.spread_near_z),
        )
        req = calls.direction_request(
            ctx.settings,
            payload,
            payloads.company_lines([a, b], self.view.companies, ctx.prompt, self.cal),
            self.memory.lines(self.quality_rule),
            self.spec.principles,
            block_order=ctx.prompt.block_order,
        )
        # the spread state's session (both legs) and each memory record's settlement session
        state_day = self.view.dates[state.index]
        self.provenance(
            req, i, prices=[state_day, state_day] + [self.sessions[r.step] for r in shown], news=news_dates
        )
        res = yield from call(req)
        parsed = calls.parse_direction(res)
        self.stats.count_call(res, parsed.fallback)
        action = parsed.value["action"]
        weights, note = self.weights(i)
        rel = state.change_a - state.change_b
        self.pending = _Pending(
            step,
            g,
            (a, b),
            action,
            weights,
            state.z_trade,
            rel,
            lifecycle,
            bool(parsed.fallback),
            note or (f"fallback: {parsed.fallback}" if parsed.fallback else ""),
            res.request_key,
        )
        self.trace(
            i,
            "direction",
            result=res,
            decision={
                "action": action,
                "reason": parsed.value["reason"],
                "w_a": weights.w_a,
                "w_b": weights.w_b,
            },
            fallback=parsed.fallback,
            state_before=lifecycle,
            detail={"z_trade": payloads.num(state.z_trade, 4), "z_long": payloads.num(state.z_long, 4)},
        )

    # -- the window ------------------------------------------------------------------------------
    def run(self) -> Gen:
        n = len(self.sessions)
        period = int(self.ctx.lifecycle.validation_period)
        for i in range(n):
            if i == 0:
                new = yield from self.select(i, "window start")
                self._set_pair(i, new)
            else:
                self.settle_pending(i)
                if self.monitor is not None:
                    state = yield from self.monitor.session(i, self.gidx[i], self.sessions[i])
                    self.memory.set_state(self.pair_label, self.monitor.state)
                    if state is not None and state.at_boundary:
                        yield from self.boundary(i, state)
                elif i % period == 0:
                    self.stats.boundaries += 1
                    self.stats.rescreens += 1
                    new = yield from self.select(i, "retry: no pair held")
                    self._set_pair(i, new)
            if i < n - 1:
                yield from self.decide(i)
            self.pairs_held.append(self.pair_label)
            self.ctx.on_session()
        return WindowResult(
            self.spec,
            self.steps,
            self.records,
            self.returns,
            self.memory,
            self.stats,
            self.initial_pair,
            self.pairs_held,
            self.decisions,
        )

    def boundary(self, i: int, state: Any) -> Gen:
        """A validation boundary of the held pair: keep it, or (lifecycle decided replace)
        re-screen without the broken pair(s) and re-select."""
        self.stats.boundaries += 1
        detail = {"level": state.level, "break_score": state.break_score, "reasons": list(state.reasons)}
        if not state.replace:
            self.trace(i, "boundary", decision={"keep": True}, detail=detail)
            return
        self.stats.boundary_breaks += 1
        self.memory.mark_break(self.pair_label)
        if not self.ctx.selection.reselection:
            self.trace(i, "boundary", decision={"keep": True, "why": "reselection off (A4)"}, detail=detail)
            return
        old = self.pair
        self.broken.add(tuple(sorted(old)))
        self.trace(i, "boundary", decision={"keep": False}, detail=detail)
        self.stats.rescreens += 1
        new = yield from self.select(i, "replacement after BREAK")
        if new == old:  # an unusable reply with fallback "keep": the broken pair stays
            return
        if new is not None:
            self.stats.replacements += 1
        self._set_pair(i, new)  # None: no candidate left; FLAT until a boundary retry finds one


def run_window(ctx: RunContext, spec: WindowSpec) -> Gen:
    """Run one window pass; returns a :class:`WindowResult`."""
    if len(spec.sessions) < 2:
        raise ConfigError(f"a {spec.phase} window needs at least 2 sessions, got {len(spec.sessions)}")
    result = yield from _Window(ctx, spec).run()
    return result
