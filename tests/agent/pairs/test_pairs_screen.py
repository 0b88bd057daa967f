"""The causal pair screen: statsmodels oracle, per-pair calendar alignment, candidates,
precision against the synthetic truth, causality (perturbing the future changes nothing), the
exclusion reasons and the optional cuts. Real shared data: test_pairs_screen_real.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from statsmodels.tsa.stattools import coint

from agent.data.errors import DataConfigError
from agent.data.importer import import_files
from agent.data.schema import PriceHistory
from agent.data.store import MarketStore
from agent.pairs.screen.causal import (
    DEGENERATE,
    EXCLUDED,
    NO_PRICE_TODAY,
    NOT_REVERTING,
    TOO_FEW,
    PairCandidate,
    ScreenConfig,
    screen_pairs,
    screen_store,
)
from agent.pairs.screen.evaluate import evaluate_screen, evaluation_dates, planted_pairs


@pytest.fixture(scope="module")
def store(synthetic_store_path: Path) -> MarketStore:
    with MarketStore(synthetic_store_path) as s:
        yield s


def _bits(obj: object) -> object:
    """Exact, NaN-safe fingerprint of a result: every float as its hex representation."""
    if dataclasses.is_dataclass(obj):
        return tuple((f.name, _bits(getattr(obj, f.name))) for f in dataclasses.fields(obj))
    if isinstance(obj, tuple):
        return tuple(_bits(o) for o in obj)
    if isinstance(obj, float):
        return float(obj).hex()
    return obj


def test_matches_statsmodels_and_numpy(store: MarketStore) -> None:
    day = "2019-06-28"
    res = screen_store(
        store, day, pool=["CIRQ", "GRNF", "HRBK", "LMNS", "MLWD"], config=ScreenConfig(lookback=1000)
    )
    h = store.prices(["CIRQ", "GRNF", "HRBK", "LMNS", "MLWD"], end=day)
    assert len(res.pairs) == 10
    for p in res.pairs[:4]:
        y, x = np.log(h.column(p.ticker_a)[-1000:]), np.log(h.column(p.ticker_b)[-1000:])
        stat, pvalue, _ = coint(y, x, trend="c", autolag="aic")
        assert p.adf_stat == pytest.approx(stat, rel=1e-8) and p.pvalue == pytest.approx(
            pvalue, rel=1e-6, abs=1e-300
        )
        beta, alpha = np.polyfit(x, y, 1)
        assert p.hedge_ratio == pytest.approx(beta, rel=1e-9) and p.alpha == pytest.approx(
            alpha, rel=1e-9, abs=1e-12
        )
        s = y - alpha - beta * x
        slope = np.polyfit(s[:-1], np.diff(s), 1)[0]
        assert p.half_life == pytest.approx(-math.log(2) / slope, rel=1e-8)
        assert p.z_long == pytest.approx((s[-1] - s.mean()) / s.std(ddof=1), rel=1e-8)
        assert p.z_trade == pytest.approx((s[-1] - s[-20:].mean()) / s[-20:].std(ddof=1), rel=1e-8)
        assert p.correlation == pytest.approx(np.corrcoef(np.diff(y), np.diff(x))[0, 1], rel=1e-8)
        assert p.n_obs == 1000 and p.ticker_a < p.ticker_b


TRADEABILITY = (NO_PRICE_TODAY, TOO_FEW, DEGENERATE, NOT_REVERTING)


def test_ranking_and_candidates(store: MarketStore) -> None:
    """By default every tradeable pair is ranked by p-value, whatever its half-life."""
    res = screen_store(store, "2021-01-04")
    assert len(res.pairs) == 66 and len(res.candidates) == 5
    eligible = [p for p in res.pairs if p.eligible]
    assert [p.pvalue for p in eligible] == sorted(p.pvalue for p in eligible)
    assert all(p.reason.startswith(TRADEABILITY) for p in res.pairs if not p.eligible)
    assert all(not p.reason for p in eligible)
    assert any(p.half_life > 60.0 for p in eligible)  # the old band's pairs are ranked too
    assert [(c.ticker_a, c.ticker_b) for c in res.candidates] == [
        (p.ticker_a, p.ticker_b) for p in eligible[:5]
    ]
    top = res.candidates[0]
    assert (top.rank, top.ticker_a, top.name_a) == (
        1,
        eligible[0].ticker_a,
        store.company(eligible[0].ticker_a).name,
    )
    assert top.sector_a == store.company(top.ticker_a).sector
    fields = {f.name for f in dataclasses.fields(PairCandidate)}
    assert fields == {
        "rank",
        "ticker_a",
        "ticker_b",
        "name_a",
        "name_b",
        "sector_a",
        "sector_b",
        "pvalue",
        "hedge_ratio",
        "half_life",
        "z_long",
        "z_trade",
        "correlation",
        "n_obs",
    }
    assert not any(
        isinstance(getattr(top, f), (dt.date, np.datetime64)) for f in fields
    )  # masking-safe: no dates
    again = screen_store(store, "2021-01-04", exclude=[(top.ticker_b, top.ticker_a)])
    assert (top.ticker_a, top.ticker_b) not in {(c.ticker_a, c.ticker_b) for c in again.candidates}
    assert next(
        p for p in again.pairs if (p.ticker_a, p.ticker_b) == (top.ticker_a, top.ticker_b)
    ).reason == (EXCLUDED)
    assert (
        again.candidates[0].ticker_a == res.candidates[1].ticker_a
        and again.candidates[0].pvalue == res.candidates[1].pvalue
    )


def test_per_pair_alignment(store: MarketStore, synthetic_truth: dict) -> None:
    info = {t["ticker"]: t for t in synthetic_truth["tickers"]}
    cal = store.calendar()
    first = int(np.searchsorted(cal, np.datetime64(info["VTRX"]["first_date"])))
    early = screen_store(store, cal[first + 100].item())  # VTRX has 101 sessions: too few
    vt = [p for p in early.pairs if "VTRX" in (p.ticker_a, p.ticker_b)]
    assert all(not p.eligible and p.reason.startswith(TOO_FEW) and p.n_obs == 101 for p in vt)
    later = screen_store(store, cal[first + 400].item())
    other = next(p for p in later.pairs if {p.ticker_a, p.ticker_b} == {"CIRQ", "VTRX"})
    full = next(p for p in later.pairs if {p.ticker_a, p.ticker_b} == {"CIRQ", "LMNS"})
    assert other.n_obs == 401 and full.n_obs == first + 401 and np.isfinite(other.pvalue)
    halt = info["PNDR"]["halts"][0]
    on_halt = screen_store(store, halt)
    assert all(p.reason == NO_PRICE_TODAY for p in on_halt.pairs if "PNDR" in (p.ticker_a, p.ticker_b))


def test_ffill_limit_bridges_the_halt(store: MarketStore, synthetic_truth: dict) -> None:
    halts = next(t for t in synthetic_truth["tickers"] if t["ticker"] == "PNDR")["halts"]
    cal = store.calendar()
    day = cal[int(np.searchsorted(cal, np.datetime64(halts[-1]))) + 300].item()
    short = screen_store(store, day, pool=["PNDR", "GRNF"], config=ScreenConfig(ffill_limit=2))
    filled = screen_store(store, day, pool=["PNDR", "GRNF"], config=ScreenConfig(ffill_limit=3))
    none = screen_store(store, day, pool=["PNDR", "GRNF"])
    assert (
        short.pairs[0].n_obs == none.pairs[0].n_obs == filled.pairs[0].n_obs - 3
    )  # a 3-session halt: limit 2 fills none


def test_precision_against_truth(store: MarketStore, synthetic_truth: dict) -> None:
    assert len(planted_pairs(synthetic_truth)) == 5
    assert len(planted_pairs(synthetic_truth, store.calendar()[-1].item())) == 3  # two planted breaks
    days = evaluation_dates(store, 8, first_session=1000)
    ev = evaluate_screen(store, synthetic_truth, days)
    assert ev.precision_planted >= 0.7 and ev.auc_active >= 0.95
    # negative control: the same scoring against 5 random non-planted pairs finds almost nothing
    fake = {
        "pairs": [
            {"pair": [a, b], "break": None}
            for a, b in [
                ("GRNF", "KSTR"),
                ("MLWD", "VTRX"),
                ("NRGX", "OKSN"),
                ("CIRQ", "PNDR"),
                ("HRBK", "SLTN"),
            ]
        ]
    }
    assert evaluate_screen(store, fake, days).precision_planted <= 0.2


@pytest.mark.slow
def test_precision_report_50_dates(store: MarketStore, synthetic_truth: dict) -> None:
    days = evaluation_dates(store, 50)
    ev = evaluate_screen(store, synthetic_truth, days)
    print(
        f"\nscreen precision over {len(days)} dates {days[0]}..{days[-1]}: precision@5 planted "
        f"{ev.precision_planted:.3f}, active {ev.precision_active:.3f}, recall active "
        f"{ev.recall_active:.3f}, "
        f"AUC {ev.auc_active:.4f}"
    )
    assert ev.precision_planted >= 0.7 and ev.auc_active >= 0.95


def test_future_perturbation_leaves_result_bit_identical(synthetic_store_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    shutil.copy(synthetic_store_path, path)
    day = "2020-03-16"
    with MarketStore(path) as s:
        before = _bits(screen_store(s, day))
        before_short = _bits(screen_store(s, day, config=ScreenConfig(lookback=300, min_sessions=252)))
    rng = np.random.default_rng(0)
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT ticker, date FROM prices WHERE date > ?", (day,)).fetchall()
        factors = rng.uniform(0.01, 100.0, len(rows))  # huge and random, all positive
        con.executemany(
            "UPDATE prices SET close = close * ?, adj_close = adj_close * ? WHERE ticker = ? AND date = ?",
            [(f, f, t, d) for f, (t, d) in zip(factors, rows)],
        )
        con.execute("DELETE FROM prices WHERE ticker = 'GRNF' AND date > '2021-01-01'")
        con.execute(
            "INSERT INTO prices (ticker, date, close) VALUES ('NEWC', '2020-03-17', 10.0)"
        )  # a later listing
    with MarketStore(path) as s:
        assert _bits(screen_store(s, day)) == before
        assert (
            _bits(screen_store(s, day, config=ScreenConfig(lookback=300, min_sessions=252))) == before_short
        )
        # the sessions up to the date are the same objects: changing one of them does change the result
        s._conn.execute(
            "UPDATE prices SET adj_close = adj_close * 1.5 WHERE ticker = 'HRBK' AND date = ?", (day,)
        )
        assert _bits(screen_store(s, day)) != before


def test_history_with_future_rows_is_cut(store: MarketStore) -> None:
    full = store.prices(store.tickers())
    day = "2018-05-01"
    assert _bits(screen_pairs(full, day)) == _bits(screen_pairs(full.until(day), day))


def test_the_demo_selection_sees_its_planted_pairs(store: MarketStore, synthetic_truth: dict) -> None:
    """The demo's selection dates (training and test step 001 of agent/pairs/configs/demo.toml)
    on the same market: the five candidates are the five planted pairs, as under the old band."""
    planted = planted_pairs(synthetic_truth)
    for day in ("2022-08-05", "2022-08-12"):
        res = screen_store(store, day)
        assert {(c.ticker_a, c.ticker_b) for c in res.candidates} == planted
        band = screen_store(store, day, config=ScreenConfig(half_life_min=1, half_life_max=60))
        assert band.candidates == res.candidates


def test_optional_band_and_pvalue_cut(store: MarketStore) -> None:
    """The half-life band and the p-value cut are off by default; set, they exclude with a reason."""
    free = screen_store(store, "2021-01-04")
    band = screen_store(store, "2021-01-04", config=ScreenConfig(half_life_min=1.0, half_life_max=60.0))
    assert all(1.0 <= p.half_life <= 60.0 for p in band.pairs if p.eligible)
    outside = [p for p in free.pairs if p.eligible and p.half_life > 60.0]
    again = {(p.ticker_a, p.ticker_b): p for p in band.pairs}
    assert outside and all(
        "outside the band [1, 60]" in again[p.ticker_a, p.ticker_b].reason for p in outside
    )
    upper = screen_store(store, "2021-01-04", config=ScreenConfig(half_life_max=60.0))
    assert {p.reason.split(" ")[2] for p in upper.pairs if "half_life_max" in p.reason} == {">"}
    cut = screen_store(store, "2021-01-04", config=ScreenConfig(max_pvalue=0.01))
    assert all(p.pvalue <= 0.01 for p in cut.pairs if p.eligible)
    assert any("> max_pvalue 0.01" in p.reason for p in cut.pairs)


def _two_legs(y: np.ndarray, x: np.ndarray) -> PriceHistory:
    dates = np.arange(np.datetime64("2010-01-04"), np.datetime64("2010-01-04") + len(y)).astype(
        "datetime64[D]"
    )
    return PriceHistory(dates, ("AAA", "BBB"), np.exp(np.column_stack([y, x])), "adj_close")


def test_untradeable_spreads_are_excluded_with_their_reason() -> None:
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(0, 0.01, 600))
    explosive = 1e-3 * 1.01 ** np.arange(600)  # the spread runs away: slope of its change > 0
    res = screen_pairs(_two_legs(x + explosive, x), "2012-01-01", config=ScreenConfig(lookback=600))
    (p,) = res.pairs
    assert p.half_life == math.inf and p.reason.startswith(NOT_REVERTING) and not res.candidates
    flat = screen_pairs(_two_legs(x, np.zeros(600)), "2012-01-01", config=ScreenConfig(lookback=600))
    assert flat.pairs[0].reason.startswith(DEGENERATE) and not flat.candidates
    reverting = x + 0.02 * rng.normal(size=600)
    ok = screen_pairs(_two_legs(reverting, x), "2012-01-01", config=ScreenConfig(lookback=600))
    assert ok.pairs[0].eligible and ok.pairs[0].half_life < 5 and len(ok.candidates) == 1


def test_a_constant_rescaling_of_a_leg_changes_only_alpha(store: MarketStore) -> None:
    """Why the adjusted close is causal: a later dividend back-adjusts a leg's whole window by
    one factor, which the regression's intercept absorbs; every statistic shown is unchanged."""
    day = "2021-01-04"
    h = store.prices(store.tickers(until=day), end=day, field="adj_close")
    k = h.tickers.index("HRBK")
    scaled = h.values.copy()
    scaled[:, k] *= 0.93
    a = screen_pairs(h, day)
    b = screen_pairs(PriceHistory(h.dates, h.tickers, scaled, h.field), day)
    for p, q in zip(a.pairs, b.pairs, strict=True):
        assert (p.ticker_a, p.ticker_b, p.n_obs, p.lag) == (q.ticker_a, q.ticker_b, q.n_obs, q.lag)
        for f in ("pvalue", "adf_stat", "hedge_ratio", "half_life", "z_long", "z_trade", "correlation"):
            assert getattr(q, f) == pytest.approx(getattr(p, f), rel=1e-7, abs=1e-12), f
        if not np.isfinite(p.alpha):
            continue
        shift = math.log(0.93) * (
            1.0 if p.ticker_a == "HRBK" else -p.hedge_ratio if p.ticker_b == "HRBK" else 0.0
        )
        assert q.alpha == pytest.approx(p.alpha + shift, rel=1e-9, abs=1e-9)


def test_adjusted_close_required_or_the_close_named(tmp_path: Path) -> None:
    days = [d for d in np.arange(np.datetime64("2020-01-01"), np.datetime64("2021-06-01")) if np.is_busday(d)]

    def write(path: Path, rows: list[int], adj: bool) -> Path:
        head = "date,ticker,close" + (",adj_close" if adj else "")
        cells = [
            f"{days[i]},{t},{c:.2f}" + (f",{c:.2f}" if adj else "")
            for i in rows
            for j, t in enumerate(("AAA", "BBB"))
            for c in [10 + i * 0.01 + j + 0.3 * np.sin(i)]
        ]
        path.write_text("\n".join([head, *cells]) + "\n")
        return path

    close_only = write(tmp_path / "old.csv", list(range(300)), adj=False)
    adjusted = write(tmp_path / "new.csv", list(range(300, len(days))), adj=True)
    with MarketStore(tmp_path / "m.sqlite") as s:
        import_files(s, prices=[close_only])
        with pytest.raises(DataConfigError, match=r"price_field='adj_close'.*AAA 300 of 300, BBB 300 of 300"):
            screen_store(s, days[299].item())
        import_files(s, prices=[adjusted])  # adjusted closes for the later sessions only
        with pytest.raises(DataConfigError, match=r"AAA 300 of \d+.*price_field = \"close\""):
            screen_store(s, days[-1].item())  # never a silently shorter window
        assert screen_store(s, days[-1].item(), config=ScreenConfig(price_field="close")).pairs[
            0
        ].n_obs == len(days)


def test_config_validation() -> None:
    with pytest.raises(DataConfigError, match="lookback"):
        ScreenConfig(lookback=100, min_sessions=252)
    with pytest.raises(DataConfigError, match="half-life band"):
        ScreenConfig(half_life_min=10, half_life_max=5)
    with pytest.raises(DataConfigError, match="half-life band"):
        ScreenConfig(half_life_max=0)
    with pytest.raises(DataConfigError, match="max_pvalue"):
        ScreenConfig(max_pvalue=0)
    with pytest.raises(DataConfigError, match="autolag"):
        ScreenConfig(autolag="hqic")
    assert ScreenConfig().half_life_min is ScreenConfig().max_pvalue is None
