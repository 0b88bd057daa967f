"""Lifecycle monitoring of the held pair inside a window pass: the glue between the window runner
(:mod:`agent.pairs.moira.episode`) and :mod:`agent.pairs.lifecycle.machine`.

A :class:`PairMonitor` is opened when a pair is selected (session index ``g0`` of the market
calendar; the spread uses the screen's alpha and beta of that session) and runs
:meth:`LifecycleMonitor.session` at every later held session: the six statistical factors from
data up to that session, keyword-matched news of the day to ``news_verify``, and, once the
cycle holds ``validation_period`` sessions, the ``break_check`` call and the boundary decision
(``state.replace``). News of a session is what is dated after the previous session and up to
it (weekend items count on the next session); the past-week news is both legs' items of the
last ``news_window_days`` calendar days up to the session (or of the last ``news_window``
sessions with ``news_window_days`` 0). Every step is a trace row; fallbacks of the two calls are counted.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Generator
from typing import Any

from agent.pairs.lifecycle.machine import HEALTHY, LifecycleMonitor, pair_factors
from serving.chat.types import ChatRequest, ChatResult

__all__ = ["PairMonitor"]

Gen = Generator[list[ChatRequest], list[ChatResult], Any]


def _recording(gen: Gen, sink: list[ChatResult], on_requests: Any = None) -> Gen:
    """``yield from gen``, keeping every result it received (in order) in ``sink``; each batch
    of requests goes to ``on_requests`` first (the provenance record)."""
    try:
        reqs = next(gen)
    except StopIteration as stop:
        return stop.value
    while True:
        if on_requests is not None:
            on_requests(reqs)
        results = yield reqs
        sink.extend(results)
        try:
            reqs = gen.send(results)
        except StopIteration as stop:
            return stop.value


class PairMonitor:
    """Lifecycle state of one held pair, from the session it was selected.

    Args:
        ctx: the run context (market view, call settings, lifecycle config, trace).
        stats: the phase counters.
        calendar: the window's :class:`StepCalendar` (labels and masking).
        phase, round_: trace identity of the window pass.
        pair: (A, B) as the screen orients it (alphabetical).
        i0, g0: window index and market index of the selection session.
    """

    def __init__(
        self,
        ctx: Any,
        stats: Any,
        calendar: Any,
        phase: str,
        round_: int,
        pair: tuple[str, str],
        i0: int,
        g0: int,
    ) -> None:

        self.ctx, self.stats, self.calendar = ctx, stats, calendar
        self.phase, self.round = phase, round_
        self.pair, self.i0, self.g0 = pair, i0, g0
        view = ctx.view
        stats_row = self._screen_stats(view.dates[g0])
        self.alpha, self.beta = stats_row
        s = ctx.settings
        # 0 (auto) budgets are the reply schemas' bounds, computed by the monitor from the
        # schemas it sends (the prompt files in use, the configured reason bound)
        self.lifecycle = LifecycleMonitor(
            model=s.model,
            config=ctx.lifecycle,
            verify_max_tokens=s.max_tokens.news_verify or None,
            break_max_tokens=s.max_tokens.break_check or None,
            sampling=s.sampling,
            prompt_dir=ctx.prompt.dir,
            reason_max_chars=ctx.prompt.reason_max_chars,
            news_token_budget=ctx.prompt.news_token_budget,
            constrained=s.constrained,
        )
        self.names = {t: c.name for t, c in view.companies.items() if t in pair}
        report = self._factors(g0) if self.usable else None
        self.evidence = self.lifecycle.open(pair, g0, report) if self.usable else None
        self.state = HEALTHY
        self.last: Any = None

    # -- data ------------------------------------------------------------------------------
    def _screen_stats(self, day: dt.date) -> tuple[float, float]:
        """(alpha, beta) of the pair in the screen of ``day`` (all pairs are tested there)."""
        res = self.ctx.view.screen(day)
        for p in res.pairs:
            if (p.ticker_a, p.ticker_b) == self.pair:
                return float(p.alpha), float(p.hedge_ratio)
        return math.nan, math.nan

    @property
    def usable(self) -> bool:
        return math.isfinite(self.alpha) and math.isfinite(self.beta)

    def _factors(self, g: int) -> Any:

        view = self.ctx.view
        a, b = self.pair
        ya, yb = view.log_prices(a, g), view.log_prices(b, g)
        # the last session of each series the factors read (the calls' price provenance)
        self.price_days = [view.dates[len(ya) - 1], view.dates[len(yb) - 1]]
        return pair_factors(ya, yb, g, self.beta, self.alpha, self.ctx.lifecycle)

    def past_news_start(self, g: int) -> dt.date:
        """The first day of the past-week news at market session ``g``: ``news_window_days``
        calendar days back, the session's day included, or ``news_window`` sessions back."""
        cfg, dates = self.ctx.lifecycle, self.ctx.view.dates
        if cfg.news_window_days:
            return dates[g] - dt.timedelta(days=cfg.news_window_days - 1)
        return dates[max(0, g - cfg.news_window + 1)]

    def _news(self, first: dt.date, g: int) -> list[Any]:
        view = self.ctx.view
        items = [n for t in self.pair for n in view.news_until(t, first, g)]
        return sorted(items, key=lambda n: (n.date, n.ticker, n.headline))

    # -- sessions --------------------------------------------------------------------------
    def session(self, i: int, g: int, day: dt.date) -> Gen:
        """One held session; returns the :class:`LifecycleState` (``None`` without factors)."""
        if not self.usable:
            return None
        view = self.ctx.view
        report = self._factors(g)
        today = self._news(view.dates[g - 1] + dt.timedelta(days=1), g) if g > 0 else self._news(day, g)
        past = self._news(self.past_news_start(g), g)
        label = self.calendar.label_at(i)
        results: list[ChatResult] = []
        news_days = [n.date for n in today] + [n.date for n in past]

        def provenance(reqs: list[ChatRequest]) -> None:
            # both calls see the factors of this session and (at most) today's and the past
            # window's news of both legs
            for req in reqs:
                self.ctx.trace.provenance.record(
                    req,
                    phase=self.phase,
                    round=self.round,
                    step=i + 1,
                    decision_date=day,
                    prices=self.price_days,
                    news=news_days,
                )

        out = yield from _recording(
            self.lifecycle.session(
                self.evidence,
                report,
                current_step=label,
                calendar=self.calendar,
                news_today=today,
                past_news=past,
                names=self.names,
            ),
            results,
            provenance,
        )
        verify_results = [r for r in results if r.call_type == "news_verify"]
        break_results = [r for r in results if r.call_type == "break_check"]
        self.evidence = out.evidence
        for call_type, omitted in out.news_cuts:
            self.stats.count_news(call_type, omitted)
        st = out.state
        before, self.state, self.last = self.state, st.level, st
        self.stats.warning_days += st.level == "WARNING"
        self.stats.break_days += st.level == "BREAK"
        whole = bool(self.lifecycle.news_token_budget)
        for cand, ver, res in zip(out.candidates, out.verifications, verify_results):
            self.stats.news_verifications += 1
            self.stats.count_call(res, ver.fallback_reason if ver.fallback else None)
            self._trace(
                i,
                "news_verify",
                result=res,
                decision=ver.to_dict(),
                fallback=ver.fallback_reason if ver.fallback else None,
                detail={"candidate": cand.to_payload(self.calendar, whole=whole)},
            )
        if out.assessment is not None:
            a, res = out.assessment, break_results[0]
            self.stats.count_call(res, a.fallback_reason if a.fallback else None)
            self._trace(
                i,
                "break_check",
                result=res,
                decision=a.to_dict(),
                fallback=a.fallback_reason if a.fallback else None,
            )
        self._trace(
            i,
            "lifecycle",
            decision={"level": st.level, "break_score": st.break_score, "replace": st.replace},
            state_before=before,
            state_after=st.level,
            detail={
                "breached": list(st.breached),
                "reasons": list(st.reasons),
                "at_boundary": st.at_boundary,
            },
        )
        return st

    def _trace(self, i: int, kind: str, **kw: Any) -> None:
        self.ctx.trace.add(
            phase=self.phase,
            round=self.round,
            step=i + 1,
            date=self.calendar.sessions[i].isoformat(),
            kind=kind,
            pair=f"{self.pair[0]}/{self.pair[1]}",
            **kw,
        )
