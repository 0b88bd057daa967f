"""`localfin data ...`: import files into the market store, show what it holds, write the
synthetic market."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["app"]

app = typer.Typer(help="Market data store: import, info, synthetic market.", no_args_is_help=True)

_STORE_HELP = "SQLite market store (default ./localfin_data/market.sqlite)."


def _store_path(store: Path | None) -> Path:
    from agent.data.store import DEFAULT_STORE_PATH

    return store if store is not None else DEFAULT_STORE_PATH


def _fail(exc: Exception) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
    raise typer.Exit(code=2)


def _parse_maps(items: list[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, col = item.partition("=")
        kind, dot, canon = key.partition(".")
        if not sep or not dot or kind not in ("prices", "news", "companies"):
            raise typer.BadParameter(
                f"--map {item!r}: expected KIND.CANONICAL=COLUMN with KIND in prices, news, companies"
            )
        out.setdefault(kind, {})[canon] = col
    return out


@app.command("import")
def import_(
    prices: list[Path] = typer.Option(
        [], "--prices", help="Long prices CSV/Parquet (date,ticker,close,...); repeatable."
    ),
    news: list[Path] = typer.Option(
        [], "--news", help="News CSV/JSONL (date,ticker,headline[,summary]); repeatable."
    ),
    companies: list[Path] = typer.Option(
        [], "--companies", help="Companies CSV (ticker,name,sector,description); repeatable."
    ),
    herculean: Path | None = typer.Option(
        None, "--herculean", help="Herculean directory (data/prices.parquet, ...)."
    ),
    store: Path | None = typer.Option(None, "--store", help=_STORE_HELP),
    replace: bool = typer.Option(False, "--replace", help="Overwrite price rows already in the store."),
    pool: str | None = typer.Option(
        None, "--pool", help="Comma-separated tickers to import (others skipped)."
    ),
    max_gap_days: int = typer.Option(10, help="Largest calendar-day gap between two rows of a ticker."),
    max_missing_frac: float = typer.Option(
        0.02, help="Largest fraction of pool sessions a ticker may miss in its span."
    ),
    strict_companies: bool = typer.Option(
        False, help="Reject company rows of tickers without prices (default: skip)."
    ),
    maps: list[str] = typer.Option(
        [], "--map", help="Column map KIND.CANONICAL=COLUMN, e.g. companies.description=about."
    ),
) -> None:
    """Validate the files and import them in one transaction (all or nothing)."""
    from agent.data.errors import DataError
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.validate import ImportConfig

    if not (prices or news or companies or herculean):
        raise typer.BadParameter("give at least one of --prices, --news, --companies, --herculean")
    try:
        cfg = ImportConfig(
            max_gap_days=max_gap_days,
            max_missing_frac=max_missing_frac,
            on_conflict="replace" if replace else "error",
            companies_outside_pool="error" if strict_companies else "skip",
            pool=tuple(t.strip() for t in pool.split(",") if t.strip()) if pool else None,
        )
        with MarketStore(_store_path(store)) as db:
            report = import_files(
                db,
                prices=prices,
                news=news,
                companies=companies,
                herculean=herculean,
                column_maps=_parse_maps(maps),
                config=cfg,
            )
    except DataError as exc:
        _fail(exc)
        return
    typer.echo(
        f"imported into {_store_path(store)}: " + ", ".join(f"{k} {v}" for k, v in report.written.items())
    )
    if report.skipped:
        typer.echo("skipped: " + ", ".join(f"{k} {v}" for k, v in report.skipped.items()))
    gaps = {k: v for k, v in report.missing_sessions.items() if v}
    if gaps:
        typer.echo(
            "sessions missing inside a ticker's span (left as gaps): "
            + ", ".join(f"{k} {v}" for k, v in gaps.items())
        )


@app.command("info")
def info(store: Path | None = typer.Option(None, "--store", help=_STORE_HELP)) -> None:
    """Show counts, calendar span and per-ticker coverage of the store."""
    from rich.console import Console
    from rich.table import Table

    from agent.data.errors import DataError
    from agent.data.store import MarketStore

    try:
        with MarketStore(_store_path(store), create=False) as db:
            inf = db.info()
            comp = db.companies()
    except DataError as exc:
        _fail(exc)
        return
    con = Console()
    con.print(
        f"store {inf.path}: {inf.n_price_rows} price rows, {inf.n_sessions} sessions "
        f"({inf.calendar_start} .. {inf.calendar_end}), {inf.n_news} news, {inf.n_companies} companies, "
        f"{inf.n_filings} filings",
        highlight=False,
    )
    table = Table("ticker", "name", "sector", "first", "last", "rows", "missing")
    for t in inf.tickers:
        c = comp.get(t.ticker)
        table.add_row(
            t.ticker,
            c.name if c else "",
            c.sector if c else "",
            str(t.first),
            str(t.last),
            str(t.n_rows),
            str(t.n_missing),
        )
    con.print(table)


@app.command("synth")
def synth(
    out: Path = typer.Option(
        Path("localfin_data") / "synthetic", "--out", help="Directory for the market files."
    ),
    seed: int = typer.Option(7, "--seed", help="Generator seed."),
    n_sessions: int = typer.Option(2770, "--sessions", help="Sessions to generate (~252 a year)."),
    do_import: bool = typer.Option(False, "--import", help="Also import the files into --store."),
    store: Path | None = typer.Option(None, "--store", help=_STORE_HELP),
) -> None:
    """Write the seeded synthetic market (prices.csv, news.jsonl, companies.csv, truth.json)."""
    from dataclasses import replace

    from agent.data.errors import DataError
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.synthetic import (
        DEFAULT_BREAKS,
        DEFAULT_TICKERS,
        SyntheticConfig,
        generate_market,
        write_market,
    )

    try:
        # a shorter market keeps the planted breaks inside it and lists late tickers by its first third
        breaks = tuple(b for b in DEFAULT_BREAKS if b.session < n_sessions)
        tickers = tuple(
            replace(t, first_session=min(t.first_session, n_sessions // 3)) for t in DEFAULT_TICKERS
        )
        market = generate_market(
            SyntheticConfig(seed=seed, n_sessions=n_sessions, tickers=tickers, breaks=breaks)
        )
        paths = write_market(market, out)
        typer.echo(f"wrote {', '.join(str(p) for p in paths.values())}")
        if do_import:
            with MarketStore(_store_path(store)) as db:
                rep = import_files(
                    db, prices=[paths["prices"]], news=[paths["news"]], companies=[paths["companies"]]
                )
            typer.echo(
                f"imported into {_store_path(store)}: "
                + ", ".join(f"{k} {v}" for k, v in rep.written.items())
            )
    except DataError as exc:
        _fail(exc)
