"""`localfin data ...`: import files into the market store, show what it holds, write the
synthetic market."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from localfin_cli._common import note, progress_for, quiet_run, result

if TYPE_CHECKING:
    from agent.data.store import ImportReport

__all__ = ["app"]

app = typer.Typer(help="Market data store: import, info, synthetic market.", no_args_is_help=True)

_STORE_HELP = "SQLite market store (default: $LOCALFIN_STORE or $LOCALFIN_DATA_DIR/market.sqlite)."


def _store_path(store: Path | None) -> Path:
    from localfin import env

    return store if store is not None else env.default_store_path()


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


_REASONS = {
    "outside_pool": "outside the pool",
    "repeated": "repeated (date, ticker, headline)",
    "already_stored": "already in the store",
    "alias_duplicate": "renamed beside the target's own row",
}


def _skip_lines(report: ImportReport) -> list[str]:
    """One line per file with skipped or renamed rows."""
    lines = []
    for path in dict.fromkeys([*report.skipped_by_file, *report.renamed_by_file]):
        skipped = report.skipped_by_file.get(path, {})
        renamed = report.renamed_by_file.get(path, {})
        parts = [f"{n:,} {_REASONS.get(r, r)}" for r, n in skipped.items()]
        parts += [f"{n:,} renamed by {a}" for a, n in renamed.items()]
        lines.append(f"  {Path(path).name}: " + ", ".join(parts))
    return ["rows skipped or renamed, per file:", *lines] if lines else []


@app.command("import")
def import_(
    ctx: typer.Context,
    prices: list[Path] = typer.Option(
        [], "--prices", help="Long prices CSV/Parquet (date,ticker,close,...); repeatable."
    ),
    news: list[Path] = typer.Option(
        [], "--news", help="News CSV/JSONL (date,ticker,headline[,summary]); repeatable."
    ),
    companies: list[Path] = typer.Option(
        [], "--companies", help="Companies CSV (ticker,name,sector,description); repeatable."
    ),
    filings: list[Path] = typer.Option(
        [],
        "--filings",
        help="Filings in Herculean's filings.parquet layout (symbol, date, document_type, mda_content, "
        "risk_content); repeatable.",
    ),
    herculean: Path | None = typer.Option(
        None, "--herculean", help="Herculean directory (data/prices.parquet, ...)."
    ),
    store: Path | None = typer.Option(None, "--store", help=_STORE_HELP),
    replace: bool = typer.Option(False, "--replace", help="Overwrite price rows already in the store."),
    pool: str | None = typer.Option(
        None,
        "--pool",
        help="Comma-separated tickers to import: rows of other tickers in every file (prices, news, "
        "companies, filings) are skipped and counted per file.",
    ),
    aliases: list[str] = typer.Option(
        [],
        "--alias",
        help="Rename a ticker as files are read, SOURCE=TARGET (every file) or KIND:SOURCE=TARGET "
        "(prices, news, companies or filings files only), e.g. news:GOOG=GOOGL; repeatable. "
        "Applied before --pool. Two price rows on one (date, ticker) after renaming are an error.",
    ),
    max_gap_days: int = typer.Option(10, help="Largest calendar-day gap between two rows of a ticker."),
    max_missing_frac: float = typer.Option(
        0.02, help="Largest fraction of pool sessions a ticker may miss in its span."
    ),
    strict_companies: bool = typer.Option(
        False, help="Reject company rows of tickers without prices (default: skip)."
    ),
    ohlc_tolerance: float = typer.Option(
        0.001, help="How far open/close may lie outside [low, high], as a fraction of the bound."
    ),
    max_daily_factor: float = typer.Option(
        3.0, help="A close moving more than this factor from the previous close is a jump."
    ),
    strict_jumps: bool = typer.Option(
        False, help="Reject the import at the first jump (default: import and list the jumps)."
    ),
    maps: list[str] = typer.Option(
        [], "--map", help="Column map KIND.CANONICAL=COLUMN, e.g. companies.description=about."
    ),
) -> None:
    """Validate the files and import them in one transaction (all or nothing)."""
    from agent.data.aliases import parse_alias
    from agent.data.validate import ImportConfig
    from agent.data.workflows import import_into

    if not (prices or news or companies or filings or herculean):
        raise typer.BadParameter("give at least one of --prices, --news, --companies, --filings, --herculean")
    cfg = ImportConfig(
        max_gap_days=max_gap_days,
        max_missing_frac=max_missing_frac,
        on_conflict="replace" if replace else "error",
        companies_outside_pool="error" if strict_companies else "skip",
        pool=tuple(t.strip() for t in pool.split(",") if t.strip()) if pool else None,
        ohlc_tolerance=ohlc_tolerance,
        max_daily_factor=max_daily_factor,
        on_jump="error" if strict_jumps else "report",
        aliases=tuple(parse_alias(a) for a in aliases),
    )
    column_maps = _parse_maps(maps)
    path = _store_path(store)
    with quiet_run(ctx, "data-import", announce=False) as rl:
        report = import_into(
            path,
            prices=prices,
            news=news,
            companies=companies,
            filings=filings,
            herculean=herculean,
            column_maps=column_maps,
            config=cfg,
            progress=progress_for(rl),
        )
        lines = [f"imported into {path}: " + ", ".join(f"{k} {v}" for k, v in report.written.items())]
        lines += _skip_lines(report)
        gaps = {k: v for k, v in report.missing_sessions.items() if v}
        if gaps:
            lines.append(
                "sessions missing inside a ticker's span (left as gaps): "
                + ", ".join(f"{k} {v}" for k, v in gaps.items())
            )
        if report.jumps:
            lines.append(
                f"{len(report.jumps)} close moves beyond max_daily_factor={max_daily_factor:g} "
                "(imported; check units and split adjustment, or use --strict-jumps to reject):"
            )
            lines += [f"  {j.describe()}" for j in report.jumps]
        result(rl, "\n".join(lines))
        if prices or herculean:
            warning = _adj_close_warning(path)
            if warning:
                note(rl, warning)


def _adj_close_warning(path: Path) -> str:
    """A warning when price rows of the store lack ``adj_close`` (a close-only file): the screen
    and every experiment read it by default and refuse such rows ("" when every row has it)."""
    from agent.data.store import MarketStore

    with MarketStore(path, create=False) as db:
        have = db.field_coverage(db.tickers(), "adj_close")
    lacking = {t: (rows, n) for t, (rows, n) in have.items() if n < rows}
    if not lacking:
        return ""
    shown = ", ".join(f"{t} {rows - n:,} of {rows:,}" for t, (rows, n) in list(lacking.items())[:6])
    more = f" and {len(lacking) - 6} more tickers" if len(lacking) > 6 else ""
    return (
        f"warning: price rows without adj_close in {path} ({shown}{more} rows): the pair screen and "
        "every experiment read adj_close by default and will refuse them; screen the close instead "
        '(localfin pairs screen --price-field close; [screen] price_field = "close" in an experiment) '
        "or import a price file with an adj_close column"
    )


@app.command("info")
def info(store: Path | None = typer.Option(None, "--store", help=_STORE_HELP)) -> None:
    """Show counts, calendar span and per-ticker coverage of the store."""
    from rich.console import Console
    from rich.table import Table

    from agent.data.workflows import store_overview

    inf, comp = store_overview(_store_path(store))
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
    ctx: typer.Context,
    out: Path = typer.Option(
        None,
        "--out",
        help="Directory for the market files (default: a folder synthetic beside the store, "
        "$LOCALFIN_DATA_DIR/synthetic without --store).",
    ),
    seed: int = typer.Option(7, "--seed", help="Generator seed."),
    n_sessions: int = typer.Option(2770, "--sessions", help="Sessions to generate (~252 a year)."),
    do_import: bool = typer.Option(False, "--import", help="Also import the files into --store."),
    store: Path | None = typer.Option(None, "--store", help=_STORE_HELP),
) -> None:
    """Write the seeded synthetic market (prices.csv, news.jsonl, companies.csv, filings.parquet,
    truth.json)."""
    from agent.data.workflows import synth_market

    # the files go beside the store they are imported into, not into the working directory
    out_dir = out if out is not None else _store_path(store).parent / "synthetic"
    with quiet_run(ctx, "data-synth", announce=False) as rl:
        res = synth_market(
            out_dir,
            seed=seed,
            n_sessions=n_sessions,
            store_path=_store_path(store) if do_import else None,
            progress=progress_for(rl),
        )
        lines = [f"wrote {', '.join(str(p) for p in res.files.values())}"]
        if res.report is not None:
            lines.append(
                f"imported into {res.store}: " + ", ".join(f"{k} {v}" for k, v in res.report.written.items())
            )
        result(rl, "\n".join(lines))
