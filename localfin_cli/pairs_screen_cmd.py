"""`localfin pairs screen`: the causal pair screen at one date, as tables, or (`--json`, `--out
FILE`) as one JSON document: the date asked, the session screened, the column, the pool, the
candidates in rank order and, with `--all`, every other pair with the reason it is not a
candidate. An undefined number (a half-life of a spread that does not revert, a p-value of a pair
without enough sessions) is null."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from localfin_cli._common import result

__all__ = ["register", "screen", "screen_document", "write_screen"]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def screen_document(res: Any, price_field: str, show_all: bool) -> dict[str, Any]:
    """The JSON document of a :class:`~agent.pairs.screen.causal.ScreenResult` (module doc)."""
    n_ok = sum(p.eligible for p in res.pairs)
    doc: dict[str, Any] = {
        "date": str(res.date),
        "session": str(res.session),
        "price_field": price_field,
        "pool": list(res.pool),
        "pairs": len(res.pairs),
        "ranked": n_ok,
        "excluded": len(res.pairs) - n_ok,
        "candidates": [_clean(asdict(c)) for c in res.candidates],
    }
    if show_all:
        doc["others"] = [
            _clean({**asdict(p), "reason": p.reason or "ranked below top"})
            for p in res.pairs[len(res.candidates) :]
        ]
    return doc


def write_screen(doc: dict[str, Any], path: Path) -> Path:
    """Write ``doc`` to ``path`` (JSON, atomically: a failed write leaves what was there)."""
    from localfin.files import write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(doc, indent=1) + "\n")
    return path


def screen(
    date: str = typer.Option(..., "--date", help="Selection date YYYY-MM-DD (data up to its close only)."),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="SQLite market store (default: $LOCALFIN_STORE or $LOCALFIN_DATA_DIR/market.sqlite).",
    ),
    top: int = typer.Option(5, "--top", help="Candidates kept (top_k)."),
    pool: str | None = typer.Option(
        None, "--pool", help="Comma-separated tickers (default: all in the store)."
    ),
    lookback: int = typer.Option(2520, "--lookback", help="Sessions ending at the date."),
    min_sessions: int = typer.Option(
        252, "--min-sessions", help="Least common sessions a pair needs (capped at --lookback)."
    ),
    price_field: str = typer.Option(
        "adj_close", "--price-field", help="Store column screened: adj_close (default) or close."
    ),
    max_pvalue: float | None = typer.Option(
        None, "--max-pvalue", help="Optional p-value cut (default: none, rank only)."
    ),
    half_life_min: float | None = typer.Option(
        None, "--half-life-min", help="Optional half-life band, lower bound in sessions (default: none)."
    ),
    half_life_max: float | None = typer.Option(
        None, "--half-life-max", help="Optional half-life band, upper bound in sessions (default: none)."
    ),
    show_all: bool = typer.Option(False, "--all", help="Also list every non-candidate pair with the reason."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the screen as one JSON document instead of the tables."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Also write the screen to this file (the JSON document of --json)."
    ),
) -> None:
    """Rank all pairs of the pool by Engle-Granger p-value at DATE; pairs that cannot be traded
    as a spread are excluded with their reason (--all)."""
    from rich.console import Console
    from rich.table import Table

    from agent.data.coverage import check_date
    from agent.data.store import MarketStore
    from agent.pairs.screen.causal import ScreenConfig, screen_store
    from localfin import env

    cfg = ScreenConfig(
        top_k=top,
        lookback=lookback,
        min_sessions=min(min_sessions, lookback),
        price_field=price_field,
        max_pvalue=max_pvalue,
        half_life_min=half_life_min,
        half_life_max=half_life_max,
    )
    tickers = [t.strip() for t in pool.split(",") if t.strip()] if pool else None
    with MarketStore(store or env.default_store_path(), create=False) as db:
        # before, or after, the data there is nothing to screen at the date: say the data's range
        check_date(db, date, name="--date", tickers=tickers, pool_name="--pool")
        res = screen_store(db, date, pool=tickers, config=cfg)
    if as_json or out is not None:
        doc = screen_document(res, price_field, show_all)
        if out is not None:
            write_screen(doc, out)
        if as_json:
            result(None, json.dumps(doc))
            return
    con = Console()
    if not con.is_terminal:
        con = Console(width=150)  # piped output: do not squeeze the table into 80 columns
    n_ok = sum(p.eligible for p in res.pairs)
    con.print(
        f"screen at {res.date} (last session {res.session}, {price_field}), pool of {len(res.pool)}: "
        f"{len(res.pairs)} pairs, {n_ok} ranked, {len(res.pairs) - n_ok} excluded",
        highlight=False,
    )
    table = Table(
        "rank",
        "A",
        "B",
        "sectors",
        "p-value",
        "beta",
        "half-life",
        "z long",
        "z trade",
        "corr",
        "sessions",
        title=f"top {len(res.candidates)} candidates",
    )
    for c in res.candidates:
        sectors = c.sector_a if c.sector_a == c.sector_b else f"{c.sector_a} / {c.sector_b}"
        table.add_row(
            str(c.rank),
            c.ticker_a,
            c.ticker_b,
            sectors,
            f"{c.pvalue:.2e}",
            f"{c.hedge_ratio:.3f}",
            f"{c.half_life:.1f}",
            f"{c.z_long:+.2f}",
            f"{c.z_trade:+.2f}",
            f"{c.correlation:.2f}",
            str(c.n_obs),
        )
    con.print(table)
    if show_all:
        rest = Table("A", "B", "p-value", "half-life", "sessions", "reason", title="other pairs")
        for p in res.pairs[len(res.candidates) :]:
            rest.add_row(
                p.ticker_a,
                p.ticker_b,
                f"{p.pvalue:.2e}",
                f"{p.half_life:.1f}",
                str(p.n_obs),
                p.reason or "ranked below top",
            )
        con.print(rest)


def register(pairs_app: typer.Typer) -> None:
    """Add ``screen`` to the ``localfin pairs`` group."""
    pairs_app.command("screen")(screen)
