"""Seeded synthetic filings: 10-K and 10-Q text with a management discussion (MD&A) and a
risk-factor section of realistic length, for the synthetic market and the rehearsal stand-ins.

Schedule (per company): a fiscal year ending in one of March, June, September or December
(drawn from the seed, most often December); the annual report (10-K) is filed 55-75 days after
the fiscal year ends, a quarterly report (10-Q) 35-44 days after each of the other three quarter
ends, on a weekday. Figures: revenue starts from a seeded base and grows by a seeded rate that
drifts from year to year; margins, expenses, cash flows and segment shares follow from it, so
each period's text states figures that agree with one another and with the prior period's.

Text: the sentences of :mod:`agent.data.filing_phrases` (our own words), filled with the
company's sector words and the period's figures. A 10-K's MD&A holds every section and compares
two years (about 30,000 characters), its risk factors every factor of the pool (about 25,000);
a 10-Q's MD&A compares the quarter and the year to date (about 15,000), its risk factors three
updated factors (about 3,500). The same seed gives the same filings.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agent.data.filing_phrases import MDA, QUARTER_RISK_INTRO, RISK_INTRO, RISK_TAILS, RISKS, SECTOR_WORDS

__all__ = [
    "FORMS",
    "FilingCompany",
    "filing_schedule",
    "filing_sections",
    "synthetic_filings",
    "market_filings",
    "herculean_frame",
]

#: The filing forms written: annual and quarterly reports.
FORMS = ("10-K", "10-Q")
_FY_MONTHS = (12, 12, 12, 12, 6, 9, 3)
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_TONES = ("steady", "firm", "mixed across regions", "softer than a year earlier", "strong in most markets")
_COST_TONES = ("eased from the prior year's peaks", "remained elevated", "rose further", "stabilized")
_SEG_DRIVERS = (
    "higher volumes and favorable mix",
    "price increases that more than offset lower volumes",
    "new customer wins and the ramp of recently launched products",
    "lower volumes in mature product lines, partly offset by pricing",
    "the timing of large orders and inventory changes at customers",
)
_SEG_WHY = (
    "volume changes moved the absorption of fixed costs",
    "the balance of input costs and prices shifted",
    "productivity savings and wage inflation moved in opposite directions",
    "depreciation of new capacity changed the cost base",
)
_GM_WHY = (
    "favorable product mix and pricing actions",
    "higher input and freight costs, partly offset by productivity",
    "lower utilization in two plants and unfavorable mix",
    "savings from the network consolidation completed last year",
)


@dataclass(frozen=True)
class FilingCompany:
    """A company that files: ticker, name and sector (a key of the sector words; others use the
    technology words)."""

    ticker: str
    name: str
    sector: str


def _seed(*parts: object) -> int:
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _month_end(year: int, month: int) -> dt.date:
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return nxt - dt.timedelta(days=1)


def _weekday(d: dt.date) -> dt.date:
    while d.weekday() >= 5:
        d += dt.timedelta(days=1)
    return d


def filing_schedule(
    company: FilingCompany, first: dt.date, last: dt.date, seed: int
) -> list[tuple[dt.date, str, dt.date, int]]:
    """``(filing date, form, period end, fiscal quarter 1-4)`` of every report ``company``
    files in ``[first, last]`` (module docstring), oldest first."""
    rng = np.random.default_rng(_seed(seed, company.ticker, "schedule"))
    fy_month = int(_FY_MONTHS[int(rng.integers(len(_FY_MONTHS)))])
    out = []
    for year in range(first.year - 1, last.year + 1):
        for q in range(1, 5):
            month = (fy_month + 3 * q - 1) % 12 + 1
            end_year = year + (1 if fy_month + 3 * q > 12 else 0)
            end = _month_end(end_year, month)
            form = "10-K" if q == 4 else "10-Q"
            lag = int(rng.integers(55, 76)) if q == 4 else int(rng.integers(35, 45))
            day = _weekday(end + dt.timedelta(days=lag))
            if first <= day <= last:
                out.append((day, form, end, q))
    return sorted(out)


def _words(sector: str) -> dict[str, tuple[str, ...]]:
    return SECTOR_WORDS.get(sector, SECTOR_WORDS["Information Technology"])


def _pct(x: float) -> str:
    return f"{abs(100.0 * x):.1f}"


def _dir(x: float, up: str = "increased", down: str = "decreased") -> str:
    return up if x >= 0 else down


class _Figures:
    """One company's figures by period (annual revenue path, seeded)."""

    def __init__(self, company: FilingCompany, seed: int) -> None:
        self.rng = np.random.default_rng(_seed(seed, company.ticker, "figures"))
        self.base = float(self.rng.uniform(2_000, 40_000))  # annual revenue, $ millions
        self.growth0 = float(self.rng.normal(0.05, 0.04))
        self.gross = float(self.rng.uniform(0.30, 0.65))
        self.shares = float(self.rng.uniform(150, 2_500))  # millions

    def revenue(self, year: int, quarter: int) -> float:
        """Revenue of fiscal ``year``'s ``quarter`` (0: the whole year)."""
        r = np.random.default_rng(_seed(self.base, year))
        level = self.base * (1.0 + self.growth0) ** (year - 2015) * (1.0 + 0.03 * r.standard_normal())
        if quarter == 0:
            return level
        return (
            level
            / 4.0
            * (1.0 + 0.04 * np.random.default_rng(_seed(self.base, year, quarter)).standard_normal())
        )


def _period_values(
    fig: _Figures, words: dict[str, tuple[str, ...]], year: int, quarter: int
) -> dict[str, object]:
    """Every number and phrase of one period's text (``quarter`` 0: the fiscal year)."""
    rng = np.random.default_rng(_seed(fig.base, year, quarter, "values"))
    rev = fig.revenue(year, quarter)
    prior = fig.revenue(year - 1, quarter)
    growth = rev / prior - 1.0
    gm = fig.gross + 0.02 * rng.standard_normal()
    gm_prior = fig.gross + 0.02 * rng.standard_normal()
    rnd, sga = rev * rng.uniform(0.04, 0.14), rev * rng.uniform(0.10, 0.22)
    op = rev * gm - rnd - sga
    tax = rng.uniform(0.13, 0.24)
    net = op * (1.0 - tax) + rev * rng.uniform(-0.005, 0.01)
    cfo = net * rng.uniform(1.05, 1.45)
    capex = rev * rng.uniform(0.03, 0.09)
    buyback, dividends = cfo * rng.uniform(0.1, 0.4), cfo * rng.uniform(0.1, 0.3)
    fx = rng.normal(0.0, 0.012)
    segs = words["segments"]
    r = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731 - a one-line picker
    return {
        "revenue": round(rev),
        "revenue_prior": round(prior),
        "rev_dir": _dir(growth),
        "rev_up": _dir(growth, "up", "down"),
        "rev_pct": _pct(growth),
        "gm": f"{100 * gm:.1f}",
        "gm_prior": f"{100 * gm_prior:.1f}",
        "gm_dir": _dir(gm - gm_prior, "up", "down"),
        "gm_bps": abs(round(10_000 * (gm - gm_prior))),
        "gm_why": r(_GM_WHY),
        "op_income": round(op),
        "net_income": round(net),
        "eps": f"{net / fig.shares:.2f}",
        "cfo": round(cfo),
        "cfo_prior": round(cfo * rng.uniform(0.8, 1.15)),
        "returned": round(buyback + dividends),
        "vol_pts": f"{abs(100 * growth) * rng.uniform(0.3, 0.7):.1f}",
        "price_pts": f"{abs(100 * growth) * rng.uniform(0.2, 0.6):.1f}",
        "fx_dir": _dir(fx, "raised", "reduced"),
        "fx_pts": _pct(fx),
        "fx_word": "weaker" if fx > 0 else "stronger",
        "cust_share": int(rng.integers(25, 55)),
        "cust_share_prior": int(rng.integers(25, 55)),
        "top_customer": int(rng.integers(6, 15)),
        "intl_share": int(rng.integers(20, 60)),
        "seg_tone": r(("strengthened", "held up", "recovered", "improved steadily")),
        "input_bps": int(rng.integers(20, 160)),
        "rnd": round(rnd),
        "rnd_prior": round(rnd * rng.uniform(0.85, 1.05)),
        "rnd_pct": f"{100 * rnd / rev:.1f}",
        "sga": round(sga),
        "sga_prior": round(sga * rng.uniform(0.9, 1.05)),
        "sga_pct": f"{100 * sga / rev:.1f}",
        "restructuring": round(rev * rng.uniform(0.0, 0.01)),
        "other_income": round(rev * rng.uniform(-0.01, 0.02)),
        "tax_rate": f"{100 * tax:.1f}",
        "tax_rate_prior": f"{100 * rng.uniform(0.13, 0.24):.1f}",
        "cash": round(rev * rng.uniform(0.2, 0.9)),
        "cash_prior": round(rev * rng.uniform(0.2, 0.9)),
        "cfi": round(capex * rng.uniform(1.0, 1.8)),
        "capex": round(capex),
        "cff": round((buyback + dividends) * rng.uniform(1.0, 1.3)),
        "buyback_shares": f"{buyback / (net / fig.shares * 20):.1f}" if net > 0 else "0.0",
        "buyback": round(buyback),
        "dividends": round(dividends),
        "authorization": round(buyback * rng.uniform(2, 8)),
        "debt": round(rev * rng.uniform(0.2, 0.8)),
        "debt_years": int(rng.integers(8, 31)),
        "revolver": int(rng.integers(2, 10)) * 500,
        "purchase_obligations": round(rev * rng.uniform(0.05, 0.3)),
        "outlook_tone": r(("modest", "steady", "gradually improving", "uneven")),
        "orders_tone": r(("ahead of shipments", "in line with shipments", "below shipments")),
        "backlog": round(rev * rng.uniform(0.1, 0.5)),
        "seg_headcount": r(("rose modestly", "was little changed", "declined slightly")),
        "rate_effect": r(("a small gain", "roughly neutral", "a modest benefit")),
        "adj_op_income": round(op + rev * rng.uniform(0.002, 0.015)),
        "fcf": round(cfo - capex),
        "fx_sensitivity": round(abs(net) * rng.uniform(0.02, 0.08)),
        "rate_sensitivity": round(rev * rng.uniform(0.005, 0.03)),
        "commodity_sensitivity": round(rev * rng.uniform(0.003, 0.02)),
        "segment_shares": rng.dirichlet(np.ones(len(segs)) * 3.0),
        "segment_growth": growth + 0.04 * rng.standard_normal(len(segs)),
        "segment_margin": rng.uniform(0.08, 0.35, len(segs)),
    }


def _fill(template: str, values: dict[str, object]) -> str:
    return template.format_map(values)


def _period(form: str, end: dt.date, quarter: int, year_to_date: bool = False) -> str:
    when = f"{_MONTHS[end.month - 1]} {end.day}, {end.year}"
    if form == "10-K":
        return f"fiscal year ended {when}"
    if year_to_date:
        return f"{('three', 'six', 'nine')[quarter - 1]} months ended {when}"
    return f"three months ended {when}"


def _comparison(
    company: FilingCompany, fig: _Figures, base: dict[str, object], year: int, quarter: int, period: str
) -> list[str]:
    """One period's comparison: highlights, revenue, segments and margins (MD&A)."""
    words = _words(company.sector)
    vals = {**base, **_period_values(fig, words, year, quarter), "period": period}
    out = [
        f"{period[0].upper()}{period[1:]} compared with the prior-year period",
        _fill(MDA["highlights"][0], vals),
    ]
    out += [_fill(t, vals) for t in MDA["revenue"]]
    shares, growth, margin = vals["segment_shares"], vals["segment_growth"], vals["segment_margin"]
    rng = np.random.default_rng(_seed(fig.base, year, quarter, "segments"))
    table = [f"Segment results, {period} (in millions):"]
    for k, seg in enumerate(words["segments"]):
        seg_rev = float(vals["revenue"]) * float(shares[k])  # type: ignore[arg-type, index]
        g, m = float(growth[k]), float(margin[k])  # type: ignore[index]
        sv = {
            **vals,
            "segment": seg,
            "seg_revenue": round(seg_rev),
            "seg_dir": _dir(g),
            "seg_up": _dir(g, "up", "down"),
            "seg_pct": _pct(g),
            "seg_driver": _SEG_DRIVERS[int(rng.integers(len(_SEG_DRIVERS)))],
            "seg_income": round(seg_rev * m),
            "seg_margin": f"{100 * m:.1f}",
            "seg_margin_dir": "higher" if rng.random() < 0.5 else "lower",
            "seg_margin_why": _SEG_WHY[int(rng.integers(len(_SEG_WHY)))],
            "seg_tone2": ("little changed", "lower", "higher")[int(rng.integers(3))],
        }
        table.append(
            f"{seg}  revenue {round(seg_rev):,}  change {100 * g:+.1f}%  operating margin {100 * m:.1f}%"
        )
        out += [_fill(t, sv) for t in MDA["segment"]]
    out.insert(2, "\n".join(table))
    out += [_fill(t, vals) for t in MDA["margin"]]
    return out


def _base_words(company: FilingCompany, seed: int) -> dict[str, object]:
    words = _words(company.sector)
    rng = np.random.default_rng(_seed(seed, company.ticker, "words"))

    def pick(key: str, k: int) -> list[str]:
        seq = list(words[key])
        return [seq[int(i)] for i in rng.permutation(len(seq))[:k]]

    customers, products, inputs, rivals = (
        pick("customers", 2),
        pick("products", 2),
        pick("inputs", 2),
        pick("rivals", 2),
    )
    segs = list(words["segments"])
    name = company.name
    return {
        "name": name,
        "name_s": name + ("'" if name.endswith("s") else "'s"),
        "segments": ", ".join(segs[:-1]) + " and " + segs[-1],
        "segment_a": segs[int(rng.integers(len(segs)))],
        "customers": customers[0],
        "customers2": customers[1],
        "countries": int(rng.integers(20, 120)),
        "product": products[0],
        "product2": products[1],
        "input": inputs[0],
        "input2": inputs[1],
        "rivals": rivals[0],
        "rivals2": rivals[1],
        "rivals_cap": rivals[0][0].upper() + rivals[0][1:],
        "channels": pick("channels", 1)[0],
        "regulators": pick("regulators", 1)[0],
        "market": pick("market", 1)[0],
        "market_cap": (m := pick("market", 1)[0])[0].upper() + m[1:],
        "tone": _TONES[int(rng.integers(len(_TONES)))],
        "cost_tone": _COST_TONES[int(rng.integers(len(_COST_TONES)))],
    }


def filing_sections(
    company: FilingCompany, form: str, period_end: dt.date, quarter: int, seed: int
) -> tuple[str, str]:
    """``(mda, risk)`` text of one report (module docstring)."""
    if form not in FORMS:
        raise ValueError(f"form={form!r}; allowed: {', '.join(FORMS)}")
    fig = _Figures(company, seed)
    base = _base_words(company, seed)
    year = period_end.year
    period = _period(form, period_end, quarter)
    vals = {**base, **_period_values(fig, _words(company.sector), year, 0 if form == "10-K" else quarter)}
    vals["period"] = period
    if form == "10-K":
        head = "ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS"
        parts = [head, _fill(MDA["intro"][0], vals), "Overview", *(_fill(t, vals) for t in MDA["overview"])]
        parts += _comparison(company, fig, base, year, 0, period)
        prior_end = period_end.replace(year=year - 1, day=min(period_end.day, 28))
        parts += _comparison(company, fig, base, year - 1, 0, _period(form, prior_end, 4))
        parts += ["Non-GAAP Financial Measures", *(_fill(t, vals) for t in MDA["non_gaap"])]
        parts += ["Seasonality", *(_fill(t, vals) for t in MDA["seasonality"])]
        parts += ["Inflation and Interest Rates", *(_fill(t, vals) for t in MDA["inflation"])]
        parts += ["Liquidity and Capital Resources", *(_fill(t, vals) for t in MDA["liquidity"])]
        parts += ["Critical Accounting Estimates", *(_fill(t, vals) for t in MDA["estimates"])]
        parts += ["Recent Accounting Pronouncements", *MDA["pronouncements"]]
        parts += ["Market Risk", *(_fill(t, vals) for t in MDA["market_risk"])]
        parts += ["Outlook and Known Trends", *(_fill(t, vals) for t in MDA["outlook"])]
        risks = [_fill(RISK_INTRO, vals)]
        category = ""
        rng = np.random.default_rng(_seed(seed, company.ticker, period_end, "risks"))
        for cat, heading, body in RISKS:
            if cat != category:
                risks.append(cat)
                category = cat
            tail = RISK_TAILS[int(rng.integers(len(RISK_TAILS)))]
            risks += [_fill(heading, vals), _fill(body, vals), _fill(tail, vals)]
    else:
        head = (
            "PART I, ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF "
            "OPERATIONS"
        )
        parts = [
            head,
            _fill(MDA["intro"][1], vals),
            "Overview",
            *(_fill(t, vals) for t in MDA["overview"][:3]),
        ]
        parts += _comparison(company, fig, base, year, quarter, period)
        if quarter > 1:
            parts += _comparison(
                company, fig, base, year, 10 + quarter, _period(form, period_end, quarter, True)
            )
        parts += ["Inflation and Interest Rates", *(_fill(t, vals) for t in MDA["inflation"])]
        parts += ["Liquidity and Capital Resources", *(_fill(t, vals) for t in MDA["liquidity"][:4])]
        parts += [
            "Critical Accounting Estimates",
            "There have been no material changes to the critical accounting estimates described in our most "
            "recent Annual Report on Form 10-K.",
        ]
        rng = np.random.default_rng(_seed(seed, company.ticker, period_end, "risks"))
        picked = sorted(int(i) for i in rng.permutation(len(RISKS))[:3])
        risks = [_fill(QUARTER_RISK_INTRO, vals)]
        for i in picked:
            _cat, heading, body = RISKS[i]
            tail = RISK_TAILS[int(rng.integers(len(RISK_TAILS)))]
            risks += [_fill(heading, vals), _fill(body, vals), _fill(tail, vals)]
    return "\n\n".join(parts), "\n\n".join(risks)


def synthetic_filings(
    companies: Iterable[FilingCompany], first: dt.date, last: dt.date, *, seed: int
) -> pd.DataFrame:
    """Every 10-K and 10-Q the companies file in ``[first, last]``: columns ``date`` (ISO
    text), ``ticker``, ``document_type``, ``mda``, ``risk`` (the importer's filings table)."""
    rows = []
    for c in companies:
        for day, form, end, q in filing_schedule(c, first, last, seed):
            mda, risk = filing_sections(c, form, end, q, seed)
            rows.append(
                {"date": day.isoformat(), "ticker": c.ticker, "document_type": form, "mda": mda, "risk": risk}
            )
    cols = ["date", "ticker", "document_type", "mda", "risk"]
    return (
        pd.DataFrame(rows, columns=cols).sort_values(["date", "ticker"], kind="stable").reset_index(drop=True)
    )


def market_filings(
    tickers: Sequence[tuple[str, str, str, int]], dates: np.ndarray, years: int, seed: int
) -> pd.DataFrame:
    """The filings of a synthetic market: for each ``(ticker, name, sector, first session)``,
    its reports of the last ``years`` years of the calendar ``dates`` filed from its first
    session on (:func:`synthetic_filings`; ``years`` 0: none)."""
    cols = ["date", "ticker", "document_type", "mda", "risk"]
    if not years:
        return pd.DataFrame(columns=cols)
    last = dt.date.fromisoformat(str(dates[-1]))
    first = max(
        dt.date.fromisoformat(str(dates[0])), last.replace(year=last.year - years, day=min(last.day, 28))
    )
    parts = [
        synthetic_filings(
            [FilingCompany(t, name, sector)],
            max(first, dt.date.fromisoformat(str(dates[k]))),
            last,
            seed=seed,
        )
        for t, name, sector, k in tickers
    ]
    return (
        pd.concat(parts, ignore_index=True)
        .sort_values(["date", "ticker"], kind="stable")
        .reset_index(drop=True)
    )


def herculean_frame(filings: pd.DataFrame, dates: Sequence[str] | None = None) -> pd.DataFrame:
    """``filings`` (:func:`synthetic_filings`' columns) in Herculean's ``filings.parquet`` layout:
    ``id, symbol, date, document_type, mda_content, risk_content`` (``date`` a timestamp)."""
    out = pd.DataFrame(
        {
            "id": range(1, len(filings) + 1),
            "symbol": filings["ticker"].to_numpy(),
            "date": pd.to_datetime(filings["date"] if dates is None else list(dates)),
            "document_type": filings["document_type"].to_numpy(),
            "mda_content": filings["mda"].to_numpy(),
            "risk_content": filings["risk"].to_numpy(),
        }
    )
    return out
