"""A seeded synthetic market: the bundled default data of the demo and the tests.

Price model (log prices, one row per session of a weekday calendar with holidays):
* every ticker's return = market factor + its sector's factor + an idiosyncratic shock, all
  Student-t (df 4, scaled to unit variance: fat tails), plus rare idiosyncratic jumps;
* a planted pair (y, x): log y = alpha + beta * log x + s, where the spread s is AR(1) with
  coefficient phi = 0.5 ** (1 / half_life), so a deviation halves in ``half_life`` sessions;
  all other pairs (same-sector ones included) share factors but not a stochastic trend;
* a planted break at session b: from b on, y takes a jump and then follows its own factor
  random walk, so the pair is no longer cointegrated; structural news (rumour before,
  announcement on b, follow-up after) sits around b.

News: routine items (p per ticker and session), sentiment items on large idiosyncratic moves,
structural events near breaks and a few immaterial "decoy" items that contain event keywords.
Filings: every ticker's 10-K and 10-Q reports of the last ``filing_years`` years of the market
(:mod:`agent.data.filings_text`: management discussion and risk factors of realistic length,
generated from the seed).
:func:`write_market` writes prices.csv, news.jsonl, companies.csv, filings.parquet (Herculean's
layout) and truth.json.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from agent.data.calendar import business_sessions
from agent.data.errors import DataConfigError

__all__ = [
    "TickerSpec",
    "PairSpec",
    "BreakSpec",
    "SyntheticConfig",
    "SyntheticMarket",
    "generate_market",
    "write_market",
    "DEFAULT_TICKERS",
    "DEFAULT_PAIRS",
    "DEFAULT_BREAKS",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TickerSpec:
    """One fictional company. ``first_session``: index of its first trading session (a late
    listing); ``halts``: session indices without a row (trading halts; those past the last
    session of a shorter market are ignored)."""

    ticker: str
    name: str
    sector: str
    start_price: float
    first_session: int = 0
    halts: tuple[int, ...] = ()


@dataclass(frozen=True)
class PairSpec:
    """A cointegrated pair: log y = alpha + beta log x + s, s AR(1) with the given half-life
    (sessions) and stationary standard deviation ``spread_sd`` (log units)."""

    y: str
    x: str
    half_life: float
    beta: float
    spread_sd: float = 0.04


@dataclass(frozen=True)
class BreakSpec:
    """At ``session``, ``ticker`` (the y leg of its pair) decouples after a structural event
    (``acquisition`` or ``restatement``) with a log-price ``jump``."""

    ticker: str
    session: int
    event: str
    jump: float


DEFAULT_TICKERS: tuple[TickerSpec, ...] = (
    TickerSpec("GRNF", "Granfield Foods", "Consumer Staples", 42.0),
    TickerSpec("HRBK", "Harbrook Beverages", "Consumer Staples", 38.0),
    TickerSpec("MLWD", "Millwood Brands", "Consumer Staples", 66.0),
    TickerSpec("OKSN", "Oakson Household", "Consumer Staples", 51.0),
    TickerSpec("PNDR", "Pinder Snacks", "Consumer Staples", 27.0, halts=(1203, 1204, 1205)),
    TickerSpec("KSTR", "Kestrel Drilling", "Energy", 33.0),
    TickerSpec("NRGX", "Northridge Energy", "Energy", 74.0),
    TickerSpec("PTRV", "Petravale Oil", "Energy", 58.0),
    TickerSpec("SLTN", "Saltone Resources", "Energy", 29.0),
    TickerSpec("CIRQ", "Cirquent Systems", "Information Technology", 88.0),
    TickerSpec("LMNS", "Lumenis Software", "Information Technology", 47.0),
    TickerSpec("VTRX", "Vertrax Semiconductors", "Information Technology", 21.0, first_session=420),
)
DEFAULT_PAIRS: tuple[PairSpec, ...] = (
    PairSpec("HRBK", "GRNF", half_life=8.0, beta=1.0),
    PairSpec("OKSN", "MLWD", half_life=20.0, beta=0.8),
    PairSpec("PTRV", "NRGX", half_life=12.0, beta=1.2),
    PairSpec("SLTN", "KSTR", half_life=35.0, beta=0.9, spread_sd=0.05),
    PairSpec("LMNS", "CIRQ", half_life=5.0, beta=1.1, spread_sd=0.03),
)
DEFAULT_BREAKS: tuple[BreakSpec, ...] = (
    BreakSpec("PTRV", 2150, "acquisition", 0.25),
    BreakSpec("LMNS", 2500, "restatement", -0.30),
)

_EVENT_TEXT = {
    "acquisition": (
        (
            "{name} said to explore strategic options, including a sale",
            "People familiar with the matter say {name} ({t}) has hired advisers to review options, "
            "including a sale of the company.",
        ),
        (
            "{name} agrees to be acquired by Halvorsen Capital in all-cash deal",
            "{name} ({t}) agreed to an acquisition by Halvorsen Capital at a {pct}% premium; the merger is "
            "expected to close within two quarters.",
        ),
        (
            "{name} shareholders back merger; shares to be delisted after closing",
            "Shareholders of {name} ({t}) approved the merger; the company expects delisting once the deal "
            "closes.",
        ),
    ),
    "restatement": (
        (
            "{name} delays annual report filing",
            "{name} ({t}) said it will not file its annual report on time while its audit committee reviews "
            "revenue recognition.",
        ),
        (
            "{name} to restate three years of results after accounting review",
            "{name} ({t}) announced a restatement of previously issued financial statements; the auditor "
            "flagged a material weakness and possible fraud by former managers.",
        ),
        (
            "{name} warns of going concern doubt, faces lender talks",
            "{name} ({t}) disclosed substantial doubt about its ability to continue as a going concern and "
            "began talks with lenders.",
        ),
    ),
}
_ROUTINE = (
    (
        "{name} declares quarterly dividend",
        "{name} ({t}) declared a regular quarterly dividend, payable next month.",
    ),
    (
        "{name} to present at industry conference on {day}",
        "{name} ({t}) management will present at an investor conference on {day}.",
    ),
    (
        "Analyst reiterates rating on {name}",
        "A sell-side analyst kept its rating and price target on {name} ({t}) unchanged.",
    ),
    (
        "{name} announces executive appointment",
        "{name} ({t}) named a new head of operations, effective {day}.",
    ),
    (
        "{name} schedules quarterly results release for {day}",
        "{name} ({t}) will report quarterly results on {day}, before the market opens.",
    ),
    ("{name} launches new product line", "{name} ({t}) introduced a new product line in its core market."),
)
_UP = (
    "{name} shares jump as demand beats expectations",
    "{name} rallies after upbeat guidance",
    "Investors cheer {name} margin gains",
)
_DOWN = (
    "{name} shares slide after guidance cut",
    "{name} falls as costs weigh on outlook",
    "{name} drops on weak quarterly sales",
)
_DECOYS = (
    (
        "{name} denies merger speculation",
        "{name} ({t}) said it is not in talks about any merger or acquisition and is focused on its plan.",
    ),
    (
        "{name} completes small bolt-on acquisition of a regional brand",
        "{name} ({t}) closed the acquisition of a small regional brand; the deal is immaterial to results.",
    ),
)
_DESCRIPTIONS = {
    "Consumer Staples": (
        "{name} makes and sells branded packaged goods (food, beverages and household products) "
        "through grocery, mass-market and convenience channels, mainly in North America."
    ),
    "Energy": (
        "{name} explores for, produces and markets crude oil and natural gas from onshore and "
        "offshore fields, and operates midstream assets."
    ),
    "Information Technology": (
        "{name} designs software, chips and systems for enterprise customers, sold through direct "
        "sales and cloud subscriptions worldwide."
    ),
}


@dataclass(frozen=True)
class SyntheticConfig:
    """Generator settings. Volatilities are daily log-return standard deviations."""

    seed: int = 7
    start: str = "2013-01-02"
    n_sessions: int = 2770  # about 11 years of sessions
    tickers: tuple[TickerSpec, ...] = DEFAULT_TICKERS
    pairs: tuple[PairSpec, ...] = DEFAULT_PAIRS
    breaks: tuple[BreakSpec, ...] = DEFAULT_BREAKS
    market_vol: float = 0.009
    sector_vol: float = 0.007
    idio_vol: float = 0.011
    tail_df: float = 4.0  # Student-t degrees of freedom of every shock (fat tails)
    jump_prob: float = 0.004  # per ticker and session
    jump_vol: float = 0.04
    drift: float = 0.0002  # per session
    routine_news_prob: float = 0.12  # per ticker and session
    sentiment_z: float = 2.5  # idiosyncratic moves beyond this many sigmas get a news item
    n_decoys: int = 4
    #: years of 10-K and 10-Q filings written, counted back from the last session (0: none)
    filing_years: int = 3
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        names = [t.ticker for t in self.tickers]
        if len(set(names)) != len(names):
            raise DataConfigError(f"tickers must be unique, got {names}")
        if isinstance(self.filing_years, bool) or not 0 <= self.filing_years <= 50:
            raise DataConfigError(f"filing_years={self.filing_years!r}; allowed: 0..50 years")
        if self.n_sessions < 300:
            raise DataConfigError(f"n_sessions={self.n_sessions} must be >= 300")
        used: set[str] = set()
        for p in self.pairs:
            for leg in (p.y, p.x):
                if leg not in names:
                    raise DataConfigError(f"pair leg {leg!r} not among tickers {names}")
            if p.y in used or p.x in used:
                raise DataConfigError(
                    f"ticker in two pairs ({p.y}, {p.x}); each ticker joins at most one pair"
                )
            used |= {p.y, p.x}
            if not 1.0 <= p.half_life <= 250.0:
                raise DataConfigError(
                    f"half_life={p.half_life} of pair {p.y}/{p.x} must be in [1, 250] sessions"
                )
        for t in self.tickers:
            if not 0 <= t.first_session < self.n_sessions:
                raise DataConfigError(
                    f"first_session={t.first_session} of {t.ticker} must be in [0, "
                    f"n_sessions={self.n_sessions})"
                )
        ys = {p.y for p in self.pairs}
        for b in self.breaks:
            if b.ticker not in ys:
                raise DataConfigError(f"break ticker {b.ticker!r} must be the y leg of a pair {sorted(ys)}")
            if not 0 < b.session < self.n_sessions:
                raise DataConfigError(f"break session {b.session} must be in (0, {self.n_sessions})")
            if b.event not in _EVENT_TEXT:
                raise DataConfigError(f"break event {b.event!r}; allowed: {sorted(_EVENT_TEXT)}")


@dataclass(frozen=True, eq=False)
class SyntheticMarket:
    """The generated market: long prices, news items, companies, the ground truth (a dict) and
    the filings (``date, ticker, document_type, mda, risk``; empty with ``filing_years`` 0)."""

    config: SyntheticConfig
    dates: np.ndarray
    prices: pd.DataFrame
    news: pd.DataFrame
    companies: pd.DataFrame
    truth: dict
    filings: pd.DataFrame = field(default_factory=pd.DataFrame)


def _t_shocks(rng: np.random.Generator, df: float, size: tuple[int, ...]) -> np.ndarray:
    return rng.standard_t(df, size=size) / np.sqrt(df / (df - 2.0))


def generate_market(config: SyntheticConfig | None = None) -> SyntheticMarket:
    """Generate the whole market from ``config.seed`` (same seed -> identical output)."""
    cfg = config or SyntheticConfig()
    rng = np.random.default_rng(cfg.seed)
    n_t, specs = cfg.n_sessions, cfg.tickers
    dates = business_sessions(cfg.start, n_t)
    sectors = sorted({s.sector for s in specs})
    mkt = cfg.market_vol * _t_shocks(rng, cfg.tail_df, (n_t,))
    sec = {s: cfg.sector_vol * _t_shocks(rng, cfg.tail_df, (n_t,)) for s in sectors}
    idio = cfg.idio_vol * _t_shocks(rng, cfg.tail_df, (n_t, len(specs)))
    jumps = (rng.random((n_t, len(specs))) < cfg.jump_prob) * rng.normal(0.0, cfg.jump_vol, (n_t, len(specs)))
    loadings = rng.uniform(0.7, 1.3, size=(len(specs), 2))
    idx = {s.ticker: k for k, s in enumerate(specs)}
    rets = np.empty((n_t, len(specs)))
    for k, s in enumerate(specs):
        rets[:, k] = (
            cfg.drift + loadings[k, 0] * mkt + loadings[k, 1] * sec[s.sector] + idio[:, k] + jumps[:, k]
        )
    rets[0] = 0.0
    logp = np.log([s.start_price for s in specs]) + np.cumsum(rets, axis=0)

    pair_truth = []
    breaks = {b.ticker: b for b in cfg.breaks}
    for p in cfg.pairs:
        ky, kx = idx[p.y], idx[p.x]
        phi = 0.5 ** (1.0 / p.half_life)
        eps = p.spread_sd * np.sqrt(1.0 - phi**2) * _t_shocks(rng, cfg.tail_df, (n_t,))
        s = np.empty(n_t)
        s[0] = eps[0] / np.sqrt(1.0 - phi**2)
        for t in range(1, n_t):
            s[t] = phi * s[t - 1] + eps[t]
        alpha = np.log(specs[ky].start_price) - p.beta * np.log(specs[kx].start_price)
        coupled = alpha + p.beta * logp[:, kx] + s
        brk = breaks.get(p.y)
        if brk is not None:
            b = brk.session
            # after the break y walks on its own factor returns from the jumped level
            coupled[b:] = coupled[b - 1] + brk.jump + np.cumsum(rets[b:, ky])
        logp[:, ky] = coupled
        pair_truth.append(
            {
                "y": p.y,
                "x": p.x,
                "pair": sorted([p.y, p.x]),
                "half_life": p.half_life,
                "phi": phi,
                "beta": p.beta,
                "alpha": float(alpha),
                "spread_sd": p.spread_sd,
                "break": None
                if brk is None
                else {
                    "session": brk.session,
                    "date": str(dates[brk.session]),
                    "event": brk.event,
                    "ticker": brk.ticker,
                    "jump": brk.jump,
                },
            }
        )

    prices = _price_rows(rng, dates, specs, logp)
    news, events = _news_rows(rng, cfg, dates, idio, idx)
    companies = pd.DataFrame(
        [
            {
                "ticker": s.ticker,
                "name": s.name,
                "sector": s.sector,
                "description": _DESCRIPTIONS[s.sector].format(name=s.name),
            }
            for s in specs
        ]
    )
    truth = {
        "seed": cfg.seed,
        "calendar": {"start": str(dates[0]), "end": str(dates[-1]), "n_sessions": n_t},
        "tickers": [
            {
                "ticker": s.ticker,
                "name": s.name,
                "sector": s.sector,
                "first_date": str(dates[s.first_session]),
                "halts": [str(dates[h]) for h in s.halts if h < n_t],
            }
            for s in specs
        ],
        "pairs": pair_truth,
        "breaks": [p["break"] | {"pair": p["pair"]} for p in pair_truth if p["break"] is not None],
        "events": events,
        "half_life_note": "half_life = sessions for an AR(1) deviation to halve, -ln2/ln(phi); the screen's "
        "estimator -ln2/(phi-1) reads slightly higher",
    }
    from agent.data.filings_text import market_filings

    filings = market_filings(
        [(t.ticker, t.name, t.sector, t.first_session) for t in specs], dates, cfg.filing_years, cfg.seed
    )
    log.info(
        "synthetic market: %d sessions, %d tickers, %d news items, %d filings",
        n_t,
        len(specs),
        len(news),
        len(filings),
    )
    return SyntheticMarket(cfg, dates, prices, news, companies, truth, filings)


def _price_rows(
    rng: np.random.Generator, dates: np.ndarray, specs: tuple[TickerSpec, ...], logp: np.ndarray
) -> pd.DataFrame:
    n_t, n_k = logp.shape
    close = np.round(np.exp(logp), 2)
    prev = np.vstack([close[:1], close[:-1]])
    open_ = np.round(prev * np.exp(rng.normal(0.0, 0.004, (n_t, n_k))), 2)
    high = np.round(np.maximum(open_, close) * (1.0 + np.abs(rng.normal(0.0, 0.006, (n_t, n_k)))), 2)
    low = np.round(np.minimum(open_, close) * (1.0 - np.abs(rng.normal(0.0, 0.006, (n_t, n_k)))), 2)
    volume = np.round(np.exp(rng.normal(13.5, 0.5, (n_t, n_k))))
    frames = []
    for k, s in enumerate(specs):
        keep = np.ones(n_t, dtype=bool)
        keep[: s.first_session] = False
        keep[[h for h in s.halts if h < n_t]] = False
        frames.append(
            pd.DataFrame(
                {
                    "date": np.datetime_as_string(dates[keep], unit="D"),
                    "ticker": s.ticker,
                    "open": open_[keep, k],
                    "high": high[keep, k],
                    "low": low[keep, k],
                    "close": close[keep, k],
                    "adj_close": close[keep, k],
                    "volume": volume[keep, k].astype(np.int64),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _news_rows(
    rng: np.random.Generator, cfg: SyntheticConfig, dates: np.ndarray, idio: np.ndarray, idx: dict[str, int]
) -> tuple[pd.DataFrame, list[dict]]:
    rows: list[dict] = []
    events: list[dict] = []
    n_t = len(dates)

    def add(t: int, spec: TickerSpec, head: str, summ: str, kind: str) -> None:
        day = str(dates[min(t + 5, n_t - 1)])
        fmt = {"name": spec.name, "t": spec.ticker, "day": day, "pct": 30}
        rows.append(
            {
                "date": str(dates[t]),
                "ticker": spec.ticker,
                "headline": head.format(**fmt),
                "summary": summ.format(**fmt),
                "source": "synthetic",
                "kind": kind,
                "_t": t,
            }
        )

    for k, spec in enumerate(cfg.tickers):
        live = np.zeros(n_t, dtype=bool)
        live[spec.first_session :] = True
        live[[h for h in spec.halts if h < n_t]] = False
        routine = np.flatnonzero(live & (rng.random(n_t) < cfg.routine_news_prob))
        for t in routine:
            head, summ = _ROUTINE[int(rng.integers(len(_ROUTINE)))]
            add(int(t), spec, head, summ, "routine")
        z = idio[:, k] / cfg.idio_vol
        for t in np.flatnonzero(live & (np.abs(z) > cfg.sentiment_z)):
            pool = _UP if z[t] > 0 else _DOWN
            add(
                int(t),
                spec,
                pool[int(rng.integers(len(pool)))],
                "Shares of {name} ({t}) moved sharply on company news.",
                "sentiment",
            )
    by_ticker = {s.ticker: s for s in cfg.tickers}
    for b in cfg.breaks:
        spec = by_ticker[b.ticker]
        before, on, after = _EVENT_TEXT[b.event]
        for t, (head, summ), phase in (
            (b.session - int(rng.integers(3, 9)), before, "rumour"),
            (b.session, on, "announcement"),
            (min(b.session + int(rng.integers(5, 15)), n_t - 1), after, "follow_up"),
        ):
            add(t, spec, head, summ, "structural")
            events.append(
                {
                    "date": str(dates[t]),
                    "ticker": b.ticker,
                    "event": b.event,
                    "phase": phase,
                    "material": True,
                }
            )
    broken = {b.ticker for b in cfg.breaks}
    calm = [s for s in cfg.tickers if s.ticker not in broken]
    for _ in range(cfg.n_decoys):
        spec = calm[int(rng.integers(len(calm)))]
        # decoys fall after the first 300 sessions; a market of exactly 300 gets them on its last
        t = int(rng.integers(min(max(spec.first_session, 300), n_t - 1), n_t))
        while t in spec.halts:
            t = min(t + 1, n_t - 1)
        head, summ = _DECOYS[int(rng.integers(len(_DECOYS)))]
        add(t, spec, head, summ, "decoy")
        events.append(
            {
                "date": str(dates[t]),
                "ticker": spec.ticker,
                "event": "decoy",
                "phase": "decoy",
                "material": False,
            }
        )
    news = (
        pd.DataFrame(rows).sort_values(["_t", "ticker", "kind", "headline"], kind="stable").drop(columns="_t")
    )
    news = news.drop_duplicates(["date", "ticker", "headline"]).reset_index(drop=True)
    events.sort(key=lambda e: (e["date"], e["ticker"]))
    return news, events


def write_market(market: SyntheticMarket, out_dir: str | Path) -> dict[str, Path]:
    """Write prices.csv, news.jsonl, companies.csv, truth.json and, when the market has
    filings, filings.parquet (the loaders' formats; filings in Herculean's layout)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        k: out / n
        for k, n in (
            ("prices", "prices.csv"),
            ("news", "news.jsonl"),
            ("companies", "companies.csv"),
            ("truth", "truth.json"),
        )
    }
    market.prices.to_csv(paths["prices"], index=False)
    market.news.to_json(paths["news"], orient="records", lines=True)
    market.companies.to_csv(paths["companies"], index=False)
    cfg = asdict(market.config)
    cfg.pop("extra", None)
    paths["truth"].write_text(json.dumps(market.truth | {"config": cfg}, indent=1, default=str))
    if len(market.filings):
        from agent.data.filings_text import herculean_frame

        paths["filings"] = out / "filings.parquet"
        herculean_frame(market.filings).to_parquet(paths["filings"], index=False)
    return paths
