"""The bundled demo QA set, generated at run time from the seeded synthetic market.

:func:`build_demo_set` writes ``items.jsonl`` and ``images/*.png`` into a folder (and
``image_truth.json``: the numbers each image prints, for measuring OCR only); the files
are a pure function of the seed (PNG bytes included: matplotlib's Agg renderer, its bundled
DejaVu font, fixed style and no timestamp in the metadata). Nothing generated is committed.

Per company of :func:`agent.data.synthetic.generate_market` (12 fictional tickers, 760
sessions from 2013-01-02) it derives:

* an income statement for FY2014 and FY2015 (text, $ millions): revenue = the year's mean
  close times a company-specific unit volume; cost of sales, operating expenses and tax from
  company-specific ratios; every line shown with one decimal and every subtotal computed from
  the shown figures, so the statement adds up exactly;
* a daily price table of eight consecutive 2015 sessions (text: date, open, high, low, close);
* the twelve 2015 month-end closes (text table);
* a bar chart of six 2015 month-end closes with the value printed on each bar (PNG);
* a table of four 2015 quarterly revenues in $ millions (PNG, bordered cells).

and one question of each kind (gold computed from the figures shown, then rounded to the
decimals the question asks for):

============ ============================================================= ===============
kind         question                                                      answer
============ ============================================================= ===============
growth       % change of revenue FY2014 -> FY2015 (statement)              percent, 2 dp
ratio        gross profit / operating expenses in FY2015 (statement)       number, 3 dp
table_diff   close on the last minus close on the first session (table)    dollars, 2 dp
chart_value  a month-end close read off the bar chart (image)              dollars, 2 dp
table_sum    total of the four quarterly revenues (table image)            $ millions, 1 dp
count        months of 2015 closing above a threshold (table)              integer
============ ============================================================= ===============

Kinds that compute never have their gold written in their own context (checked while
building). The 72 questions are dealt kind by kind in a seeded order to train and test, so
both splits hold every kind while n_train + n_test <= 72. Scoring (kind ``demo``): within
``abs_tol`` = half a unit of the asked decimals (inclusive), counts exactly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from agent.data.synthetic import SyntheticConfig, generate_market
from localfin.errors import ConfigError

__all__ = ["DEMO_KINDS", "build_demo_set", "DEMO_SESSIONS"]

log = logging.getLogger(__name__)

DEMO_KINDS = ("growth", "ratio", "table_diff", "chart_value", "table_sum", "count")
DEMO_SESSIONS = 760
_DECIMALS = {"growth": 2, "ratio": 3, "table_diff": 2, "chart_value": 2, "table_sum": 1, "count": 0}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class _Company:
    ticker: str
    name: str
    sector: str
    description: str
    dates: np.ndarray  # datetime64[D] of its sessions
    close: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray


def _companies(seed: int) -> list[_Company]:

    market = generate_market(SyntheticConfig(seed=seed, n_sessions=DEMO_SESSIONS, breaks=()))
    out = []
    for row in market.companies.itertuples(index=False):
        px = market.prices[market.prices["ticker"] == row.ticker]
        out.append(
            _Company(
                row.ticker,
                row.name,
                row.sector,
                row.description,
                px["date"].to_numpy().astype("datetime64[D]"),
                px["close"].to_numpy(dtype=float),
                px["open"].to_numpy(dtype=float),
                px["high"].to_numpy(dtype=float),
                px["low"].to_numpy(dtype=float),
            )
        )
    return out


def _year_mask(c: _Company, year: int) -> np.ndarray:
    years = c.dates.astype("datetime64[Y]").astype(int) + 1970
    return years == year


def _month_ends(c: _Company, year: int) -> list[tuple[str, float]]:
    m = _year_mask(c, year)
    dates, close = c.dates[m], c.close[m]
    months = dates.astype("datetime64[M]").astype(int) % 12
    return [(f"{_MONTHS[k]} {year}", float(close[months == k][-1])) for k in range(12) if np.any(months == k)]


def _r1(x: float) -> float:
    return round(x + 0.0, 1)


def _statement(c: _Company, rng: np.random.Generator) -> tuple[dict[str, dict[int, float]], str]:
    units = rng.uniform(20.0, 80.0)
    cost_ratio, opex_ratio = rng.uniform(0.45, 0.65), rng.uniform(0.10, 0.22)
    lines: dict[str, dict[int, float]] = {k: {} for k in ("rev", "cost", "gross", "opex", "op", "tax", "net")}
    for year in (2014, 2015):
        rev = _r1(float(c.close[_year_mask(c, year)].mean()) * units)
        cost = _r1(rev * (cost_ratio + rng.uniform(-0.03, 0.03)))
        gross = _r1(rev - cost)
        opex = _r1(rev * (opex_ratio + rng.uniform(-0.02, 0.02)))
        op = _r1(gross - opex)
        tax = _r1(max(op, 0.0) * 0.21)
        for k, v in zip(lines, (rev, cost, gross, opex, op, tax, op - tax)):
            lines[k][year] = _r1(v)
    names = {
        "rev": "Revenue",
        "cost": "Cost of sales",
        "gross": "Gross profit",
        "opex": "Operating expenses",
        "op": "Operating income",
        "tax": "Income tax",
        "net": "Net income",
    }
    rows = ["| Item | FY2014 | FY2015 |"] + [
        f"| {names[k]} | {v[2014]:,.1f} | {v[2015]:,.1f} |" for k, v in lines.items()
    ]
    text = f"Income statement of {c.name} ({c.ticker}), in $ millions:\n" + "\n".join(rows)
    return lines, text


def _savefig(fig: Any, path: Path) -> None:
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})


def _chart(c: _Company, points: list[tuple[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.style.context("default"), matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 11}):
        fig, ax = plt.subplots(figsize=(7.0, 3.8))
        labels = [p[0] for p in points]
        values = [p[1] for p in points]
        bars = ax.bar(labels, values, color="#4C72B0")
        # values in one row above the plot, each over its bar: OCR reads them as one line
        # aligned with the month labels (no y ticks to confuse them with)
        for b, v in zip(bars, values):
            ax.text(
                b.get_x() + b.get_width() / 2,
                1.03,
                f"{v:.2f}",
                ha="center",
                va="bottom",
                fontsize=12,
                transform=ax.get_xaxis_transform(),
            )
        ax.set_yticks([])
        ax.set_ylim(0, max(values) * 1.05)
        ax.set_title(f"{c.ticker} month-end close (USD)", pad=28)
        fig.tight_layout()
        _savefig(fig, path)
        plt.close(fig)


def _table_png(rows: list[list[str]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.style.context("default"), matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 12}):
        fig, ax = plt.subplots(figsize=(5.6, 2.4))
        ax.axis("off")
        table = ax.table(cellText=rows[1:], colLabels=rows[0], loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(12)
        table.scale(1.0, 1.6)
        ax.set_title(title)
        _savefig(fig, path)
        plt.close(fig)


def _poss(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _company_questions(c: _Company, rng: np.random.Generator, img_dir: Path) -> list[dict[str, Any]]:
    owner = _poss(c.name)
    head = f"{c.name} ({c.ticker}), {c.sector}. {c.description}"
    lines, statement = _statement(c, rng)
    qs: list[dict[str, Any]] = []

    def add(
        kind: str,
        question: str,
        context: str,
        answer: float,
        images: tuple[str, ...] = (),
        render: tuple[Callable[[], None], ...] = (),
        drawn: tuple[str, ...] = (),
    ) -> None:
        d = _DECIMALS[kind]
        qs.append(
            {
                "kind": kind,
                "ticker": c.ticker,
                "question": question,
                "context": context,
                "images": list(images),
                "answer": round(answer) if d == 0 else round(answer + 0.0, d),
                "answer_type": "count" if kind == "count" else "number",
                "decimals": d,
                "_render": render,  # drawn only if the question is chosen
                "_drawn": drawn,  # the numbers printed on its image, for OCR measurement
            }
        )

    rev = lines["rev"]
    add(
        "growth",
        f"By what percentage did {owner} revenue change from FY2014 to FY2015? Round to two decimal places.",
        f"{head}\n\n{statement}",
        (rev[2015] - rev[2014]) / rev[2014] * 100.0,
    )
    add(
        "ratio",
        f"What was the ratio of {owner} gross profit to its operating expenses in FY2015? "
        "Round to three decimal places.",
        f"{head}\n\n{statement}",
        lines["gross"][2015] / lines["opex"][2015],
    )
    m15 = np.flatnonzero(_year_mask(c, 2015))
    for _ in range(20):
        start = int(rng.integers(m15[0], m15[-1] - 8))
        sl = slice(start, start + 8)
        table = ["| Date | Open | High | Low | Close |"] + [
            f"| {d} | {o:.2f} | {h:.2f} | {lo:.2f} | {cl:.2f} |"
            for d, o, h, lo, cl in zip(c.dates[sl], c.open[sl], c.high[sl], c.low[sl], c.close[sl])
        ]
        diff = round(float(c.close[sl][-1]) - float(c.close[sl][0]), 2)
        if f"{diff:.2f}" not in "\n".join(table):
            break
    first, last = str(c.dates[sl][0]), str(c.dates[sl][-1])
    add(
        "table_diff",
        f"By how many dollars did {c.ticker}'s close on {last} differ from its close on {first} "
        "(later minus earlier)? Round to two decimal places.",
        f"{head}\n\nDaily prices of {c.ticker} (USD):\n" + "\n".join(table),
        diff,
    )
    ends = _month_ends(c, 2015)
    k0 = int(rng.integers(0, len(ends) - 6 + 1))
    shown = ends[k0 : k0 + 6]
    chart = f"{c.ticker}_chart.png"
    month, value = shown[int(rng.integers(0, len(shown)))]
    add(
        "chart_value",
        f"According to the chart in image 1, what was {owner} month-end close in {month}? "
        "Answer in dollars to two decimal places.",
        f"{head}\n\n<image 1>\nChart: month-end closing prices of {c.ticker}.",
        value,
        (f"images/{chart}",),
        (partial(_chart, c, shown, img_dir / chart),),
        tuple(f"{v:.2f}" for _, v in shown),
    )
    units = rng.uniform(20.0, 80.0) / 4.0
    q_mask = (c.dates[m15].astype("datetime64[M]").astype(int) % 12) // 3
    quarters = [_r1(float(c.close[m15][q_mask == q].mean()) * units) for q in range(4)]
    table_img = f"{c.ticker}_quarters.png"
    add(
        "table_sum",
        f"Using the table in image 1, what was {owner} total revenue over the four quarters of 2015, "
        "in millions? Round to one decimal place.",
        f"{head}\n\n<image 1>\nTable: quarterly revenue of {c.ticker} in 2015.",
        sum(quarters),
        (f"images/{table_img}",),
        (
            partial(
                _table_png,
                [
                    ["Quarter", "Q1 2015", "Q2 2015", "Q3 2015", "Q4 2015"],
                    ["Revenue", *[f"{v:,.1f}" for v in quarters]],
                ],
                f"{c.ticker} quarterly revenue ($ millions)",
                img_dir / table_img,
            ),
        ),
        tuple(f"{v:,.1f}" for v in quarters),
    )
    closes = [v for _, v in ends]
    threshold = float(np.floor(np.median(closes)) + 0.5)
    month_table = ["| Month | Close |"] + [f"| {m} | {v:.2f} |" for m, v in ends]
    add(
        "count",
        f"In how many months of 2015 did {c.ticker} end the month with a close above ${threshold:.2f}?",
        f"{head}\n\nMonth-end closes of {c.ticker} in 2015 (USD):\n" + "\n".join(month_table),
        float(sum(v > threshold for v in closes)),
    )
    return qs


def build_demo_set(out_dir: Path, *, seed: int = 0, n_train: int = 24, n_test: int = 24) -> Path:
    """Write the demo set (``items.jsonl`` + ``images/``) into ``out_dir`` and return it.

    Args:
        out_dir: folder to create or overwrite (its ``items.jsonl`` and ``images/*.png``).
        seed: seed of the synthetic market and of every choice made here.
        n_train: train items (>= 1); n_test: test items (>= 1); n_train + n_test <= 72.
    """
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{name}={v!r}; allowed: a whole number >= 1")
    total = 12 * len(DEMO_KINDS)
    if n_train + n_test > total:
        raise ConfigError(f"n_train + n_test = {n_train + n_test}; allowed: at most {total}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed={seed!r}; allowed: a whole number >= 0")
    out = Path(out_dir)
    img_dir = out / "images"
    img_dir.mkdir(parents=True, exist_ok=True)
    for old in img_dir.glob("*.png"):
        old.unlink()
    rng = np.random.default_rng(seed)
    questions = [q for c in _companies(seed) for q in _company_questions(c, rng, img_dir)]
    by_kind = {k: [q for q in questions if q["kind"] == k] for k in DEMO_KINDS}
    for k in DEMO_KINDS:
        order = rng.permutation(len(by_kind[k]))
        by_kind[k] = [by_kind[k][i] for i in order]
    dealt = [q for rank in range(12) for k in DEMO_KINDS for q in by_kind[k][rank : rank + 1]]
    chosen = dealt[: n_train + n_test]
    rows: list[dict[str, Any]] = []
    caps = {"train": n_train, "test": n_test}
    truth: dict[str, list[str]] = {}
    toggle = dict.fromkeys(DEMO_KINDS, 0)
    for n, q in enumerate(chosen):
        want = ("train", "test")[(toggle[q["kind"]] + DEMO_KINDS.index(q["kind"])) % 2]
        toggle[q["kind"]] += 1
        if sum(r["split"] == want for r in rows) >= caps[want]:
            want = "test" if want == "train" else "train"
        for job in q.pop("_render"):
            job()
        drawn = q.pop("_drawn")
        if q["images"]:
            truth[q["images"][0]] = list(drawn)
        rows.append({"id": f"demo-{seed}-{n:03d}", "split": want, **q})
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]
    (out / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # what each image prints, for measuring OCR (bench/agents/ocr.py); never shown to a solver
    (out / "image_truth.json").write_text(
        json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    log.info("demo QA set: %d train + %d test items in %s", n_train, n_test, out)
    return out
