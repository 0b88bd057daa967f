"""One call per user-level task on a market store (what ``localfin data ...`` runs): write the
seeded synthetic market (and import it), describe a store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.data.schema import Company, StoreInfo
from agent.data.store import ImportReport, MarketStore
from localfin.progress import NULL_PROGRESS, Progress

if TYPE_CHECKING:
    from agent.data.loaders import ColumnMap
    from agent.data.validate import ImportConfig

__all__ = ["import_into", "SynthResult", "synth_market", "store_overview"]


def import_into(
    store_path: str | Path,
    *,
    prices: Sequence[str | Path] = (),
    news: Sequence[str | Path] = (),
    companies: Sequence[str | Path] = (),
    filings: Sequence[str | Path] = (),
    herculean: str | Path | None = None,
    column_maps: dict[str, ColumnMap] | None = None,
    config: ImportConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> ImportReport:
    """:func:`~agent.data.importer.import_files` into the store at ``store_path`` (created if
    absent): all files validated first, then written in one transaction. A failed import leaves
    an existing store as it was and removes a store (and folders) it created."""
    from agent.data.importer import import_files

    with _store_for_import(Path(store_path)) as db:
        return import_files(
            db,
            prices=prices,
            news=news,
            companies=companies,
            filings=filings,
            herculean=herculean,
            column_maps=column_maps,
            config=config,
            progress=progress,
        )


@contextmanager
def _store_for_import(path: Path) -> Iterator[MarketStore]:
    """The store at ``path``, opened (created if absent); when the block fails, the files and
    folders the opening created are removed again (SQLite's ``-wal`` / ``-shm`` beside it too),
    so a failed import into a new store leaves nothing behind."""
    made = [p for p in (path, *path.parents) if not p.exists()]  # the file, then new folders
    try:
        with MarketStore(path) as db:
            yield db
    except BaseException:
        if made and made[0] == path:
            for f in (path, *(path.with_name(path.name + x) for x in ("-wal", "-shm", "-journal"))):
                f.unlink(missing_ok=True)
            for folder in made[1:]:  # the deepest first; only as they were made: empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
        raise


@dataclass(frozen=True)
class SynthResult:
    """Files written (``prices``, ``news``, ``companies``, ``truth``, ``filings`` -> path) and, when imported,
    the store and its import report."""

    files: dict[str, Path]
    store: Path | None = None
    report: ImportReport | None = None


def synth_market(
    out_dir: str | Path,
    *,
    seed: int = 7,
    n_sessions: int = 2770,
    store_path: str | Path | None = None,
    breaks: tuple[Any, ...] | None = None,
    progress: Progress = NULL_PROGRESS,
) -> SynthResult:
    """Write the seeded synthetic market into ``out_dir``; import it into ``store_path`` if given.

    A market shorter than the default keeps the planted structural breaks that fall inside it
    and lists every ticker by its first third, so short markets still hold every pair.
    ``breaks``: the planted :class:`agent.data.synthetic.BreakSpec` (default: ``DEFAULT_BREAKS``;
    the demo plants its own).
    """
    from agent.data.importer import import_files
    from agent.data.synthetic import (
        DEFAULT_BREAKS,
        DEFAULT_TICKERS,
        SyntheticConfig,
        generate_market,
        write_market,
    )

    breaks = tuple(b for b in (DEFAULT_BREAKS if breaks is None else breaks) if b.session < n_sessions)
    tickers = tuple(replace(t, first_session=min(t.first_session, n_sessions // 3)) for t in DEFAULT_TICKERS)
    with progress.task(f"synthetic market: {n_sessions} sessions"):
        market = generate_market(
            SyntheticConfig(seed=seed, n_sessions=n_sessions, tickers=tickers, breaks=breaks)
        )
        files = write_market(market, Path(out_dir))
    if store_path is None:
        return SynthResult(files)
    with _store_for_import(Path(store_path)) as db:
        report = import_files(
            db,
            prices=[files["prices"]],
            news=[files["news"]],
            companies=[files["companies"]],
            filings=[files["filings"]] if "filings" in files else [],
            progress=progress,
        )
    return SynthResult(files, Path(store_path), report)


def store_overview(store_path: str | Path) -> tuple[StoreInfo, dict[str, Company]]:
    """Counts, calendar span and per-ticker coverage of an existing store, with each ticker's
    company context (absent tickers are missing from the mapping)."""
    with MarketStore(store_path, create=False) as db:
        info = db.info()
        return info, db.companies()
