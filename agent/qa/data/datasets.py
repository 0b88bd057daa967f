"""Benchmark loaders: one entry point, :func:`load_items`, for every QA set FinAcumen runs on.

``load_items(dataset, path)`` reads a local file or folder (nothing is downloaded, ever) and
returns :class:`LoadedItems`: the items it could build; for every record it could not, a
:class:`SkippedItem` with the file, the line (1-based line of a JSONL file, or 1-based
position in a JSON array or a parquet table), the item id when known and the reason; and for
every item that loaded with a part missing (an image file absent from this copy, kept because
``require_images=False``), an :class:`IncompleteItem` saying what. A file that cannot be read
at all (missing, not JSON, not parquet), or of which every record was skipped, raises
:class:`localfin.errors.InputError` naming it (and, for the latter, the commonest reason with
its count).

Datasets (the layouts each loader reads are documented in its module under
:mod:`agent.qa.loaders`):

=========== ===============================================================================
tatqa       TAT-QA: the released ``dataset_raw/tatqa_dataset_<split>.json`` (documents with
            their table, paragraphs and questions) or the shared JSONL (one question a line)
finmmr      FinMMR: the released repository layout (``data/{validation,test}/
            {easy,medium,hard}_<split>.json`` + ``images/``), one of its files, or the
            shared JSONL
bizbench    BizBench: the released parquet files (``data/{train,test}-*.parquet``) or a
            JSON/JSONL export with the same columns
fintmmbench FinTMMBench: the released repository layout (``QA.json`` + ``data/``)
finmme      FinMME: the released parquet files (inline image bytes) or a JSON export
demo        the project's own demo set (:mod:`agent.qa.data.demo_set`)
=========== ===============================================================================

Installed plugins add datasets (entry-point group ``localfin.qa_datasets``,
:mod:`agent.qa.data.extensions`): their own loader reads the path, their items go through the same
split, limit and duplicate checks, and they have no subsets.

Item ids are unique within a dataset. A release that repeats an id keeps every record, as the
FinAcumen authors' harness runs and counts every row of a file: the second record of id ``x``
becomes ``x#2``, the third ``x#3`` (in file order), each listed in
:attr:`LoadedItems.renamed` and logged.

Splits are taken as the data names them (a record's ``split`` field, else the file name, else
the ``split`` asked for; see :mod:`agent.qa.loaders.common`), so ``test_gold`` is a split like
any other; ``split=`` keeps the items of that split. ``subset=`` keeps one part of a benchmark
in every layout: FinMMR's difficulty (:data:`SUBSETS`) and BizBench's task (default
``SEC-NUM``; the allowed ones are the tasks its files hold). The other benchmarks have no
subsets. A split or subset that no item of the data has is an InputError naming those present.

``Question.answer_format`` always comes from the question text (and per-item fields the
benchmark shows every solver), never from the gold: see :mod:`agent.qa.core.answer_format`.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from agent.qa.core.items import QAItem, check_split_name
from agent.qa.data.extensions import BUILTIN_DATASETS, dataset_plugin, plugin_items
from agent.qa.loaders.finmmr import FINMMR_SUBSETS
from agent.qa.loaders.records import IncompleteItem, Produced, SkippedItem
from localfin.errors import ConfigError, InputError

__all__ = ["DATASETS", "SUBSETS", "SkippedItem", "IncompleteItem", "LoadedItems", "load_items"]

log = logging.getLogger(__name__)

#: localfin's own datasets; installed plugins may add more (:func:`agent.qa.data.extensions.dataset_names`).
DATASETS = BUILTIN_DATASETS
#: Datasets with a fixed set of subsets. BizBench's subsets are its tasks, read from its files;
#: the datasets not named here and not BizBench have none.
SUBSETS: Mapping[str, tuple[str, ...]] = {"finmmr": FINMMR_SUBSETS}
_DEFAULT_SUBSET = {"bizbench": "SEC-NUM"}


@dataclass(frozen=True)
class LoadedItems:
    """What :func:`load_items` read: the items, every record it had to skip, and a note for
    every item it loaded with a part missing."""

    items: tuple[QAItem, ...]
    skipped: tuple[SkippedItem, ...]
    incomplete: tuple[IncompleteItem, ...] = ()
    #: (id as the data gives it, id the item got) for every record whose id repeats an earlier one
    renamed: tuple[tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.items)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _check_subset(dataset: str, subset: str | None) -> None:
    if subset is None:
        return
    if dataset in SUBSETS:
        if subset not in SUBSETS[dataset]:
            raise ConfigError(
                f"subset={subset!r} for {dataset}; allowed: {', '.join(SUBSETS[dataset])} or None"
            )
    elif dataset == "bizbench":
        if not _norm(str(subset)):
            raise ConfigError(f"subset={subset!r} for bizbench must name a task, e.g. SEC-NUM")
    else:
        raise ConfigError(f"subset={subset!r}: {dataset} has no subsets; allowed: None")


def _present(counts: Counter[str]) -> str:
    return ", ".join(f"{name or '(none)'} ({n})" for name, n in counts.most_common())


def _collect(
    produced: Iterable[Produced],
    *,
    dataset: str,
    source: Path,
    split: str | None,
    subset: str | None,
    limit: int | None,
) -> LoadedItems:
    items: list[QAItem] = []
    skipped: list[SkippedItem] = []
    notes: list[IncompleteItem] = []
    splits: Counter[str] = Counter()
    subsets: Counter[str] = Counter()
    for obj in produced:
        if isinstance(obj, SkippedItem):
            skipped.append(obj)
            continue
        if isinstance(obj, IncompleteItem):
            notes.append(obj)
            continue
        splits[obj.split] += 1
        subsets[obj.subset] += 1
        if split is not None and obj.split != split:
            continue
        if subset is not None and _norm(obj.subset) != _norm(subset):
            continue
        items.append(obj)
        if limit is not None and len(items) >= limit:
            break
    if not items and splits:
        if split is not None and split not in splits:
            raise InputError(
                f"no {dataset} item of split {split!r} in {source}; splits there: {_present(splits)}"
            )
        raise InputError(
            f"no {dataset} item of subset {subset!r} (split {split or 'any'}) in {source}; "
            f"subsets there: {_present(subsets)}"
        )
    items, renamed = _number_repeats(items)
    seen = {it.item_id for it in items}
    kept = tuple(n for n in notes if n.item_id in seen)
    if renamed:
        log.warning(
            "%s: %d records repeat an earlier item id and are kept, numbered (first: %r -> %r)",
            dataset,
            len(renamed),
            *renamed[0],
        )
    log.info(
        "%s: %d items from %s (%d records skipped, %d items incomplete)",
        dataset,
        len(items),
        source,
        len(skipped),
        len(kept),
    )
    return LoadedItems(tuple(items), tuple(skipped), kept, renamed)


def _number_repeats(items: list[QAItem]) -> tuple[list[QAItem], tuple[tuple[str, str], ...]]:
    """Every item, a repeated id numbered ``#2``, ``#3``... in order (module docstring)."""
    taken = {it.item_id for it in items}
    count: Counter[str] = Counter()
    out: list[QAItem] = []
    renamed: list[tuple[str, str]] = []
    for it in items:
        count[it.item_id] += 1
        if count[it.item_id] == 1:
            out.append(it)
            continue
        n = count[it.item_id]
        new = f"{it.item_id}#{n}"
        while new in taken:
            n += 1
            new = f"{it.item_id}#{n}"
        taken.add(new)
        renamed.append((it.item_id, new))
        out.append(replace(it, question=replace(it.question, item_id=new)))
    return out, tuple(renamed)


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
        dataset: one of :data:`DATASETS` or an installed plugin's dataset.
        path: a file or folder in the dataset's layout (see its loader module).
        split: keep only items of this split, as the data names it (e.g. ``train``,
            ``validation``, ``dev``, ``test``, ``test_gold``); records that name no split of
            their own and whose file name names none are taken to be of this split.
        limit: stop after this many items (>= 1); skipped records seen so far are reported.
        subset: keep only this part of the benchmark: FinMMR difficulty (``easy``,
            ``medium``, ``hard``), BizBench task (default ``SEC-NUM``). Other datasets have
            none.
        require_images: True (default) skips (and lists) items whose image files are missing
            from this copy; False keeps them without the missing files and lists each in
            :attr:`LoadedItems.incomplete`. Items that list no image at all always load.
        oracle_context: FinTMMBench only: put the rows the gold annotation cites into the
            context (oracle retrieval; not the benchmark's protocol, off by default).
        image_cache: FinMME only: folder for the images its files carry inline (default
            ``$LOCALFIN_HOME/qa_images/finmme``).
    """
    plugin = dataset_plugin(dataset) if dataset not in DATASETS else None  # unknown: names the known
    if split is not None:
        check_split_name(split)
    _check_subset(dataset, subset)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit={limit!r}; allowed: a whole number >= 1 or None")
    subset = subset if subset is not None else _DEFAULT_SUBSET.get(dataset)
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError(f"{dataset} data not found at {p}")
    if plugin is not None:
        produced = plugin_items(plugin, p, split)
    elif dataset == "tatqa":
        from agent.qa.loaders.tatqa import iter_tatqa

        produced = iter_tatqa(p, split=split)
    elif dataset == "finmmr":
        from agent.qa.loaders.finmmr import iter_finmmr

        produced = iter_finmmr(p, subset=subset, split=split, require_images=require_images)
    elif dataset == "bizbench":
        from agent.qa.loaders.bizbench import iter_bizbench

        produced = iter_bizbench(p, task=str(subset), split=split)
    elif dataset == "fintmmbench":
        from agent.qa.loaders.fintmm import iter_fintmm

        produced = iter_fintmm(p, split=split, oracle_context=oracle_context)
    elif dataset == "finmme":
        from agent.qa.loaders.finmme import iter_finmme

        produced = iter_finmme(p, split=split, image_cache=image_cache)
    else:
        from agent.qa.loaders.demo import iter_demo

        produced = iter_demo(p, split=split, require_images=require_images)
    return _collect(produced, dataset=dataset, source=p, split=split, subset=subset, limit=limit)
