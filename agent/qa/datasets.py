"""Benchmark loaders: one entry point, :func:`load_items`, for every QA set FinAcumen runs on.

``load_items(dataset, path)`` reads a local file or folder (nothing is downloaded, ever) and
returns :class:`LoadedItems`: the items it could build and, for every record it could not, a
:class:`SkippedItem` with the file, the line (1-based line of a JSONL file, or 1-based
position in a JSON array or a parquet table), the item id when known and the reason. A file
that cannot be read at all (missing, not JSON, not parquet) raises
:class:`localfin.errors.InputError` naming it.

Datasets (the layout each loader reads is documented in its module under
:mod:`agent.qa.loaders`):

========== ================================================================================
tatqa      TAT-QA in the shared JSONL layout (one question per line)
finmmr     FinMMR: the shared JSONL layout, or the released repository layout
           (``data/{validation,test}/{easy,medium,hard}_*.json`` + ``images/``)
bizbench   BizBench SEC-NUM: the released parquet files (``data/{train,test}-*.parquet``)
           or a JSON/JSONL export with the same columns
fintmmbench FinTMMBench: the released repository layout (``QA.json`` + ``data/``)
finmme     FinMME: the released parquet files (``data/*.parquet``) or a JSON export
demo       the project's own demo set (:mod:`agent.qa.demo_set`)
========== ================================================================================

``Question.answer_format`` always comes from the question text (and per-item fields the
benchmark shows every solver), never from the gold: see :mod:`agent.qa.answer_format`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.items import SPLITS, QAItem
from localfin.errors import ConfigError, InputError

__all__ = ["DATASETS", "SkippedItem", "LoadedItems", "load_items", "Row", "iter_json_rows"]

DATASETS = ("tatqa", "finmmr", "bizbench", "fintmmbench", "finmme", "demo")


@dataclass(frozen=True)
class SkippedItem:
    """A record that could not become an item.

    Attributes:
        path: the file it is in.
        line: 1-based line (JSONL) or 1-based position (JSON array, parquet table).
        item_id: its id when one could be read, else "".
        reason: what was wrong, in words.
    """

    path: str
    line: int
    item_id: str
    reason: str


@dataclass(frozen=True)
class LoadedItems:
    """What :func:`load_items` read: the items, and every record it had to skip."""

    items: tuple[QAItem, ...]
    skipped: tuple[SkippedItem, ...]

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class Row:
    """One raw record of a benchmark file, with where it came from."""

    path: Path
    line: int
    data: Any


def _read_text(path: Path) -> str:
    if not path.exists():
        raise InputError(f"benchmark file not found: {path}")
    if not path.is_file():
        raise InputError(f"benchmark path {path} is not a file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read benchmark file {path}: {exc}") from exc


def iter_json_rows(path: Path) -> Iterator[Row | tuple[Path, int, str]]:
    """Records of a JSONL file (one per non-blank line) or of a JSON file holding an array
    (or an object whose ``data`` is one). A line that is not valid JSON comes out as a
    ``(path, line, reason)`` tuple so the caller can list it as skipped."""
    text = _read_text(path)
    if path.suffix.lower() == ".jsonl":
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield Row(path, n, json.loads(line))
            except json.JSONDecodeError as exc:
                yield (path, n, f"invalid JSON: {exc.msg} at column {exc.colno}")
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"benchmark file {path} is not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise InputError(
            f"benchmark file {path} holds a JSON {type(data).__name__}; expected an array of items"
        )
    for n, rec in enumerate(data, start=1):
        yield Row(path, n, rec)


def _collect(produced: Iterable[QAItem | SkippedItem], split: str | None, limit: int | None) -> LoadedItems:
    items: list[QAItem] = []
    skipped: list[SkippedItem] = []
    for obj in produced:
        if isinstance(obj, SkippedItem):
            skipped.append(obj)
            continue
        if split is not None and obj.split != split:
            continue
        items.append(obj)
        if limit is not None and len(items) >= limit:
            break
    seen: set[str] = set()
    for it in items:
        if it.item_id in seen:
            raise InputError(f"item id {it.item_id!r} occurs twice; item ids must be unique within a dataset")
        seen.add(it.item_id)
    return LoadedItems(tuple(items), tuple(skipped))


def load_items(
    dataset: str,
    path: str | Path,
    *,
    split: str | None = None,
    limit: int | None = None,
    subset: str | None = None,
    require_images: bool = True,
    oracle_context: bool = False,
    image_cache: str | Path | None = None,
) -> LoadedItems:
    """Load the items of ``dataset`` from the local file or folder ``path``.

    Args:
        dataset: one of :data:`DATASETS`.
        path: a file or folder in the dataset's layout (see its loader module).
        split: keep only items of this split (one of :data:`agent.qa.items.SPLITS`).
        limit: stop after this many items (>= 1); skipped records seen so far are reported.
        subset: dataset-specific part: FinMMR difficulty (``easy``/``medium``/``hard``) in the
            released layout; BizBench task (default ``SEC-NUM``).
        require_images: skip (and list) items whose image files are missing; False keeps them
            with the missing paths dropped (for scoring-only uses such as gold-vs-gold checks).
        oracle_context: FinTMMBench only: put the rows the gold annotation cites into the
            context (oracle retrieval; not the benchmark's protocol, off by default).
        image_cache: FinMME only: folder for the images its files carry inline (default
            ``$LOCALFIN_HOME/qa_images/finmme``).
    """
    if dataset not in DATASETS:
        raise ConfigError(f"dataset={dataset!r}; allowed: {', '.join(DATASETS)}")
    if split is not None and split not in SPLITS:
        raise ConfigError(f"split={split!r}; allowed: {', '.join(SPLITS)} or None")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit={limit!r}; allowed: a whole number >= 1 or None")
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError(f"{dataset} data not found at {p}")
    if dataset == "tatqa":
        from agent.qa.loaders.tatqa import iter_tatqa

        produced = iter_tatqa(p)
    elif dataset == "finmmr":
        from agent.qa.loaders.finmmr import iter_finmmr

        produced = iter_finmmr(p, subset=subset, split=split, require_images=require_images)
    elif dataset == "bizbench":
        from agent.qa.loaders.bizbench import iter_bizbench

        produced = iter_bizbench(p, task=subset or "SEC-NUM", split=split)
    elif dataset == "fintmmbench":
        from agent.qa.loaders.fintmm import iter_fintmm

        produced = iter_fintmm(p, oracle_context=oracle_context, require_images=require_images)
    elif dataset == "finmme":
        from agent.qa.loaders.finmme import iter_finmme

        produced = iter_finmme(p, split=split, image_cache=image_cache)
    else:
        from agent.qa.loaders.demo import iter_demo

        produced = iter_demo(p, require_images=require_images)
    return _collect(produced, split, limit)
