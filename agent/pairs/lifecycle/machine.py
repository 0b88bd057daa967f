"""Lifecycle monitoring of the active pair (Moira paper §3.2.3).

Each session t the monitor computes six statistical factors of the held pair from data up to
the close of t only (:func:`pair_factors`; thresholds in :class:`LifecycleConfig`): rolling
correlation of returns, spread half-life, ADF p-value of the spread, Engle-Granger p-value over
a recent window, |z| of today's spread, spread volatility ratio. Each breached threshold is a
deterioration factor. The news path (:mod:`agent.pairs.lifecycle.news`) adds verified events
and, at validation boundaries, the model's break assessment.

The state machine is pure (frozen value in, new value out), so a replay from the journal
rebuilds it exactly:

* :class:`CycleEvidence` holds one *cycle*: the pair, the session it opened at (selection or
  the last validation) and every held session since (``observe``), with the news verdicts
  received (``add_news``). A cycle's sessions are those after its opening session; the
  opening session's own factors are kept as ``latest_report`` (they inform the state shown
  on the selection day) but are not counted.
* :func:`assess` turns evidence into a :class:`LifecycleState`.

Rules (every number is a config field; defaults in brackets):

Session level (the state shown to the direction call; context, never a forced action):
  statistical level = BREAK with >= ``break_factors`` [3] breached factors, WARNING with
  >= ``warning_factors`` [2], else HEALTHY; news level = BREAK once a *verified critical event*
  (news_verify: affects the pair, severity in ``break_severities`` [HIGH, CRITICAL]) occurred in
  the cycle, WARNING for ``news_window`` [7] sessions after a verified lesser event (severity in
  ``warning_severities`` [MEDIUM]) and on a boundary whose break assessment says WARNING or
  BREAK; the level is the more severe of the two.
Break score (for the break-score plot): max(min(1, breached / break_factors), news score), news
  score 1 for a verified critical event, warning_factors / break_factors for a news warning.
  So score >= warning_factors / break_factors <=> at least WARNING, score == 1 <=> BREAK.
Boundary decision (after ``validation_period`` [23] held sessions), the cycle's accumulated
  evidence: let share_break / share_warning be the shares of the cycle's sessions whose
  statistical level was BREAK / at least WARNING. The cycle's statistical level is BREAK if
  share_break >= ``break_share`` [0.3], else WARNING if share_warning >= ``warning_share``
  [0.3], else HEALTHY. Replace the pair iff
    (a) a verified critical event occurred in the cycle, or
    (b) the cycle's statistical level is BREAK, or
    (c) the break assessment's effective level is BREAK and the statistics are at least
        WARNING (the cycle's level or the boundary session's own level).
  Why: a single day with three breached factors happens to healthy pairs (a jump day alone
  trips z, correlation and volatility), so (b) asks for persistence (about 7 of 23 sessions);
  the model's news reading is evidence, not a verdict (paper A.4: "the final BREAK is
  enforced by code"), so (c) needs the statistics to agree; a verified critical event is a
  break by itself. A fallback reply counts as no evidence: the state is kept.
After a kept boundary call :meth:`CycleEvidence.next_cycle`; after a replacement open a new
cycle for the new pair (the caller re-screens without the broken pair).

:class:`LifecycleMonitor` wires it together for an agent written as a lockstep program
(:mod:`serving.chat.lockstep`): ``outcome = yield from monitor.session(...)`` runs one session's
keyword match, the verification calls, the boundary call and the assessment, yielding at most
two request lists (verifications, then the boundary assessment).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from agent.pairs.lifecycle.calls import (
    BreakAssessment,
    NewsVerification,
    build_break_check_request,
    build_news_verify_request,
    parse_break_check,
    parse_news_verify,
    reply_char_bound,
    reply_schema,
)
from agent.pairs.lifecycle.config import (
    BREAK,
    DEFAULT_NEWS_KEYWORDS,
    HEALTHY,
    LEVELS,
    WARNING,
    LifecycleConfig,
    level_max,
)
from agent.pairs.lifecycle.factors import FACTOR_NAMES, Factor, FactorReport, pair_factors, statistical_level
from agent.pairs.lifecycle.news import (
    CandidateEvent,
    match_critical_news,
    news_summary,
    scan_news_keywords,
    summarize_news,
)
from agent.pairs.market.masking import StepCalendar
from agent.pairs.market.newsbudget import estimate_tokens
from localfin.errors import InputError
from serving.chat.types import ChatRequest, ChatResult, Sampling

__all__ = [
    "LEVELS",
    "HEALTHY",
    "WARNING",
    "BREAK",
    "FACTOR_NAMES",
    "DEFAULT_NEWS_KEYWORDS",
    "LifecycleConfig",
    "Factor",
    "FactorReport",
    "pair_factors",
    "SessionEvidence",
    "CycleEvidence",
    "LifecycleState",
    "assess",
    "statistical_level",
    "break_check_payload",
    "SessionOutcome",
    "LifecycleMonitor",
    "CandidateEvent",
    "NewsVerification",
    "BreakAssessment",
    "scan_news_keywords",
    "match_critical_news",
    "summarize_news",
    "build_news_verify_request",
    "parse_news_verify",
    "build_break_check_request",
    "parse_break_check",
    "reply_char_bound",
]

# --- evidence and state ---------------------------------------------------------------------


@dataclass(frozen=True)
class SessionEvidence:
    """What one observed session contributes: its index, breached factors and their count."""

    t: int
    n_breached: int
    breached: tuple[str, ...]

    @classmethod
    def from_report(cls, report: FactorReport) -> SessionEvidence:
        return cls(report.t, report.n_breached, report.breached)


@dataclass(frozen=True)
class CycleEvidence:
    """Accumulated evidence of one validation cycle of ``pair`` (see the module docstring).

    opened_at: session index of the selection or last validation; sessions: the held sessions
    observed since (t > opened_at, increasing); latest_report: the most recent factors (the
    opening session's until a held session is observed); verifications / assessments: the
    news verdicts received in the cycle; carried: verifications carried over from the previous
    cycle of the same pair (:meth:`next_cycle`).
    """

    pair: tuple[str, str]
    opened_at: int
    sessions: tuple[SessionEvidence, ...] = ()
    latest_report: FactorReport | None = None
    verifications: tuple[NewsVerification, ...] = ()
    assessments: tuple[BreakAssessment, ...] = ()
    carried: tuple[NewsVerification, ...] = ()

    @classmethod
    def open(cls, pair: Sequence[str], t: int, report: FactorReport | None = None) -> CycleEvidence:
        """A new cycle of ``pair`` opened at session ``t`` (selection or a kept boundary)."""
        if len(pair) != 2 or not all(isinstance(x, str) and x for x in pair):
            raise InputError(f"pair={pair!r}; allowed: two ticker strings")
        if report is not None and report.t != t:
            raise InputError(f"report.t={report.t} differs from the opening session t={t}")
        return cls((pair[0], pair[1]), int(t), latest_report=report)

    @property
    def t(self) -> int:
        """The latest session observed (the opening session when none is held yet)."""
        return self.sessions[-1].t if self.sessions else self.opened_at

    @property
    def n_sessions(self) -> int:
        """Held sessions in the cycle (``days_since_last_break_validation`` of the payload)."""
        return len(self.sessions)

    def at_boundary(self, config: LifecycleConfig = LifecycleConfig()) -> bool:
        """True once the cycle holds ``validation_period`` sessions: the latest is a boundary."""
        return len(self.sessions) >= config.validation_period

    def observe(
        self, report: FactorReport, news: Iterable[NewsVerification | BreakAssessment] = ()
    ) -> CycleEvidence:
        """The evidence with held session ``report.t`` (after the last one) and its news verdicts."""
        if report.t <= self.t:
            raise InputError(f"observe: session {report.t} is not after the cycle's latest session {self.t}")
        ev = replace(
            self, sessions=self.sessions + (SessionEvidence.from_report(report),), latest_report=report
        )
        return ev.add_news(news)

    def add_news(self, news: Iterable[NewsVerification | BreakAssessment]) -> CycleEvidence:
        """The evidence with news verdicts added (verifications and boundary assessments)."""
        ver, ass = list(self.verifications), list(self.assessments)
        for v in news:
            if isinstance(v, NewsVerification):
                ver.append(v)
            elif isinstance(v, BreakAssessment):
                ass.append(v)
            else:
                raise InputError(
                    f"news verdict of type {type(v).__name__}; allowed: NewsVerification, BreakAssessment"
                )
        return replace(self, verifications=tuple(ver), assessments=tuple(ass))

    def next_cycle(self, config: LifecycleConfig = LifecycleConfig()) -> CycleEvidence:
        """The cycle that follows a kept boundary: opened at the latest session, the latest
        factors kept; a verified critical event (the pair stays BREAK while it is held, e.g. in
        the no-reselection ablation) and lesser news warnings inside their ``news_window``
        carry over."""
        t = self.t
        carry = tuple(
            v
            for v in self.carried + self.verifications
            if v.level(config) == BREAK or (v.level(config) == WARNING and t - v.t < config.news_window)
        )
        return CycleEvidence(self.pair, t, latest_report=self.latest_report, carried=carry)


@dataclass(frozen=True)
class LifecycleState:
    """The lifecycle state at session ``t`` (context for the direction call; a trace row).

    level: HEALTHY / WARNING / BREAK; break_score in [0, 1] (module docstring); statistical_level
    and news_level: the two parts of ``level``; at_boundary / replace: a validation boundary and
    its decision (replace is False off boundaries); cycle_*: the accumulated evidence; reasons:
    why, in words; flags: recorded fallbacks of the news calls.
    """

    t: int
    pair: tuple[str, str]
    level: str
    break_score: float
    statistical_level: str
    news_level: str
    n_breached: int
    breached: tuple[str, ...]
    at_boundary: bool
    replace: bool
    cycle_sessions: int
    cycle_break_share: float
    cycle_warning_share: float
    cycle_statistical_level: str
    reasons: tuple[str, ...]
    flags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cycle_levels(ev: CycleEvidence, config: LifecycleConfig) -> tuple[float, float, str]:
    n = len(ev.sessions)
    if n == 0:
        return 0.0, 0.0, HEALTHY
    share_break = sum(s.n_breached >= config.break_factors for s in ev.sessions) / n
    share_warn = sum(s.n_breached >= config.warning_factors for s in ev.sessions) / n
    if share_break >= config.break_share:
        level = BREAK
    elif share_warn >= config.warning_share:
        level = WARNING
    else:
        level = HEALTHY
    return share_break, share_warn, level


def assess(
    evidence: CycleEvidence,
    news_verdicts: Iterable[NewsVerification | BreakAssessment] = (),
    config: LifecycleConfig = LifecycleConfig(),
) -> LifecycleState:
    """The :class:`LifecycleState` at the evidence's latest session (rules: module docstring).

    news_verdicts: verdicts of the latest session not yet added to ``evidence`` (e.g. the
    boundary's break assessment); they count here, but only ``evidence.add_news`` keeps them
    for later sessions.
    """
    ev = evidence.add_news(news_verdicts)
    t = ev.t
    report = ev.latest_report
    n_breached = report.n_breached if report is not None else 0
    breached = report.breached if report is not None else ()
    stat_level = statistical_level(n_breached, config)
    reasons: list[str] = []
    flags: list[str] = []
    if report is not None and breached:
        reasons.append("breached: " + "; ".join(report[name].describe() for name in breached))

    critical = [v for v in ev.carried + ev.verifications if v.level(config) == BREAK]
    recent_warn = [
        v
        for v in ev.carried + ev.verifications
        if v.level(config) == WARNING and 0 <= t - v.t < config.news_window
    ]
    today = [a for a in ev.assessments if a.t == t]
    news_level = HEALTHY
    if critical:
        news_level = BREAK
        v = critical[0]
        reasons.append(f"verified critical news on {v.ticker}: {v.event_type}, {v.severity}")
    elif recent_warn or any(a.effective_level != HEALTHY for a in today):
        news_level = WARNING
        reasons.append("news warning")
    for v in ev.verifications:
        if v.fallback:
            flags.append(f"news_verify fallback at t={v.t} ({v.ticker}): {v.fallback_reason}")
    for a in ev.assessments:
        if a.fallback:
            flags.append(f"break_check fallback at t={a.t}: {a.fallback_reason}")

    share_break, share_warn, cycle_level = _cycle_levels(ev, config)
    boundary = ev.at_boundary(config)
    do_replace = False
    if boundary:
        llm_break = any(a.effective_level == BREAK for a in today)
        stats_warn = LEVELS.index(level_max(cycle_level, stat_level)) >= LEVELS.index(WARNING)
        if critical:
            do_replace = True
        elif cycle_level == BREAK:
            do_replace = True
            reasons.append(f"{share_break:.0%} of the cycle's {ev.n_sessions} sessions were BREAK sessions")
        elif llm_break and stats_warn:
            do_replace = True
            reasons.append("break assessment BREAK confirmed by at least WARNING statistics")
        elif llm_break:
            reasons.append("break assessment BREAK not confirmed by the statistics: pair kept")
        reasons.append("boundary: replace" if do_replace else "boundary: keep")

    level = level_max(stat_level, news_level, BREAK if do_replace else HEALTHY)
    stat_score = min(1.0, n_breached / config.break_factors)
    news_score = {HEALTHY: 0.0, WARNING: config.warning_factors / config.break_factors, BREAK: 1.0}[
        news_level
    ]
    score = 1.0 if do_replace else max(stat_score, news_score)
    return LifecycleState(
        t=t,
        pair=ev.pair,
        level=level,
        break_score=round(score, 6),
        statistical_level=stat_level,
        news_level=news_level,
        n_breached=n_breached,
        breached=breached,
        at_boundary=boundary,
        replace=do_replace,
        cycle_sessions=ev.n_sessions,
        cycle_break_share=round(share_break, 6),
        cycle_warning_share=round(share_warn, 6),
        cycle_statistical_level=cycle_level,
        reasons=tuple(reasons),
        flags=tuple(flags),
    )


def _num(x: float) -> float | None:
    return float(f"{x:.4g}") if math.isfinite(x) else None


def break_check_payload(
    evidence: CycleEvidence,
    *,
    current_step: str,
    news_summary: str,
    config: LifecycleConfig = LifecycleConfig(),
    candidates: Sequence[CandidateEvent] = (),
) -> dict[str, Any]:
    """The A.6 observation of the ``break_check`` call at the evidence's latest session.

    current_step: the session's step label; news_summary: :func:`summarize_news` of the past
    week's news of both legs (``news_window_days`` calendar days; masked); candidates: live
    keyword candidates of those days (they set ``monitoring_event_type``). Non-finite numbers
    become null (an infinite half-life means no mean reversion; it is listed in
    statistical_deterioration).
    """
    report = evidence.latest_report
    if report is None:
        raise InputError("break_check_payload needs evidence with factors (observe a session first)")
    state = assess(evidence, (), config)
    return {
        "current_step": current_step,
        "pair": list(evidence.pair),
        "statistical_deterioration": [report[name].describe() for name in report.breached],
        "statistical_status": level_max(state.cycle_statistical_level, state.statistical_level),
        "recent_rolling_correlation": _num(report["rolling_correlation"].value),
        "half_life_days": _num(report["half_life"].value),
        "adf_pvalue": _num(report["adf_pvalue"].value),
        "cointegration_pvalue": _num(report["coint_pvalue"].value),
        "current_spread_z": _num(report["spread_z"].value),
        "spread_volatility_ratio": _num(report["spread_vol_ratio"].value),
        "code_news_break_level": state.news_level,
        "past_week_news_summary": news_summary,
        "monitoring_event_type": "critical_news_candidate" if candidates else "scheduled_validation",
        "days_since_last_break_validation": evidence.n_sessions,
    }


@dataclass(frozen=True)
class SessionOutcome:
    """What :meth:`LifecycleMonitor.session` did at one session.

    evidence: the evidence to carry to the next session (after a boundary: the next cycle of
    the same pair, which the caller replaces by a fresh cycle when it replaces the pair);
    state: the assessed state (``state.replace`` is the boundary decision); candidates: live
    keyword candidates of today's news; verifications / assessment: the parsed verdicts
    (fallbacks included, flagged); requests: model calls made; news_cuts: ``(call_type,
    items omitted)`` of each request whose news the budget cut.
    """

    evidence: CycleEvidence
    state: LifecycleState
    candidates: tuple[CandidateEvent, ...]
    verifications: tuple[NewsVerification, ...]
    assessment: BreakAssessment | None
    requests: int
    news_cuts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class LifecycleMonitor:
    """Lifecycle monitoring of a held pair as part of a lockstep program.

    model: registry key; verify_max_tokens / break_max_tokens: completion budgets of the two
    calls (``None``: the longest reply the prompt's schema allows, :func:`reply_char_bound`,
    plus 8, so that a bounded reply is never cut even at one character per token; a thinking
    model needs more); sampling: of every request (default greedy, seed 0).
    prompt_dir: a folder of the user's prompt files ("" = the packaged prompts).
    reason_max_chars: maxLength of the replies' reason (0: none; None: the prompt file's).
    news_token_budget: 0 = the compact past-week summary (the config's line and item bounds);
        > 0 = whole items, newest first, within this many estimated tokens per prompt (a
        verification's candidate event counts against it first).
    constrained: the reply schemas go to the engine as structured outputs (False: they only
        check the replies, ``[model] decoding = "prompt"``).
    """

    model: str
    config: LifecycleConfig = field(default_factory=LifecycleConfig)
    verify_max_tokens: int | None = None
    break_max_tokens: int | None = None
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.0, seed=0))
    prompt_dir: str = ""
    reason_max_chars: int | None = None
    news_token_budget: int = 0
    constrained: bool = True

    def open(self, pair: Sequence[str], t: int, report: FactorReport | None = None) -> CycleEvidence:
        """A cycle for ``pair`` selected (or validated) at session ``t``."""
        return CycleEvidence.open(pair, t, report)

    def max_tokens(self, call_type: str) -> int:
        """The completion budget of ``news_verify`` or ``break_check`` requests."""

        given = {"news_verify": self.verify_max_tokens, "break_check": self.break_max_tokens}
        if call_type not in given:
            raise InputError(f"call_type={call_type!r}; allowed: news_verify, break_check")
        if given[call_type]:
            return int(given[call_type])
        schema = reply_schema(call_type, prompt_dir=self.prompt_dir, reason_max_chars=self.reason_max_chars)
        try:
            return reply_char_bound(schema) + 8
        except InputError as exc:
            raise InputError(
                f"{call_type}: an unbounded reply needs an explicit model.max_tokens.{call_type} ({exc})"
            ) from None

    def _calls(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "seed": self.sampling.seed,
            "sampling": self.sampling,
            "prompt_dir": self.prompt_dir,
            "reason_max_chars": self.reason_max_chars,
            "constrained": self.constrained,
        }

    def session(
        self,
        evidence: CycleEvidence,
        report: FactorReport,
        *,
        current_step: str,
        calendar: StepCalendar,
        news_today: Sequence[Any],
        past_news: Sequence[Any],
        names: Mapping[str, str | Sequence[str]] | None = None,
    ) -> Generator[list[ChatRequest], list[ChatResult], SessionOutcome]:
        """One held session: verify today's candidates, observe, validate at a boundary, assess.

        report: :func:`pair_factors` at this session; current_step: its step label; news_today:
        both legs' items of this session; past_news: both legs' items of the past week
        (``news_window_days`` calendar days, or ``news_window`` sessions; today included),
        oldest first; names: ticker -> company name.
        """
        cfg, budget = self.config, self.news_token_budget
        candidates = match_critical_news(news_today, cfg, names=names)
        verifications: list[NewsVerification] = []
        cuts: list[tuple[str, int]] = []
        n_requests = 0
        if candidates:
            requests = []
            for c in candidates:
                shown = c.to_payload(calendar, whole=bool(budget))
                # the candidate is shown whole and spends the prompt's news budget first
                spent = estimate_tokens(shown["headline"]) + estimate_tokens(shown["text"])
                week = news_summary(past_news, calendar, cfg, budget=budget, reserved=spent)
                if week.cut.cut:
                    cuts.append(("news_verify", week.cut.omitted))
                requests.append(
                    build_news_verify_request(
                        max_tokens=self.max_tokens("news_verify"),
                        current_step=current_step,
                        pair=evidence.pair,
                        candidate=shown,
                        past_week_news=week.text,
                        **self._calls(),
                    )
                )
            results = yield requests
            _same_length(requests, results)
            n_requests += len(requests)
            verifications = [
                parse_news_verify(r, c, report.t) for r, c in zip(results, candidates, strict=True)
            ]
        ev = evidence.observe(report, verifications)
        assessment = None
        if ev.at_boundary(cfg):
            recent = match_critical_news(past_news, cfg, names=names)
            week = news_summary(past_news, calendar, cfg, budget=budget)
            if week.cut.cut:
                cuts.append(("break_check", week.cut.omitted))
            payload = break_check_payload(
                ev, current_step=current_step, news_summary=week.text, config=cfg, candidates=recent
            )
            request = build_break_check_request(
                max_tokens=self.max_tokens("break_check"), payload=payload, **self._calls()
            )
            results = yield [request]
            _same_length([request], results)
            n_requests += 1
            assessment = parse_break_check(results[0], report.t)
            ev = ev.add_news([assessment])
        state = assess(ev, (), cfg)
        carried = ev.next_cycle(cfg) if state.at_boundary else ev
        return SessionOutcome(
            carried, state, tuple(candidates), tuple(verifications), assessment, n_requests, tuple(cuts)
        )


def _same_length(requests: Sequence[ChatRequest], results: Sequence[ChatResult]) -> None:
    if len(results) != len(requests):
        raise InputError(f"lifecycle: sent {len(requests)} requests, received {len(results)} results")
