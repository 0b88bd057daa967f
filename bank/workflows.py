"""One call per user-level task on a bank folder (what ``localfin bank ...`` runs): build or
extend a bank from a JSONL file of entries, query it, describe it."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bank.embedder import Embedder, HashingEmbedder, MiniLMEmbedder
from bank.errors import BankConfigError, BankInputError
from bank.schema import EntryRecord, NewEntry, RetrievalConfig
from bank.store import DB_NAME, ExperienceBank
from localfin.progress import NULL_PROGRESS, Progress

__all__ = [
    "EMBEDDERS",
    "make_embedder",
    "read_jsonl",
    "read_entries",
    "open_existing",
    "AddResult",
    "add_entries",
    "query_bank",
    "bank_stats",
]

#: Embedder names the CLI accepts: the real MiniLM, and a hashing embedder for tests.
EMBEDDERS = ("minilm", "hashing")


def make_embedder(name: str, threads: int = 1) -> Embedder:
    """``minilm`` (the real default; ``threads`` torch threads) or ``hashing`` (tests only)."""

    if threads < 1:
        raise BankConfigError(f"threads={threads}; allowed: >= 1")
    if name == "minilm":
        return MiniLMEmbedder(threads=threads)
    if name == "hashing":
        return HashingEmbedder()
    raise BankConfigError(f"embedder={name!r}; allowed: {', '.join(EMBEDDERS)}")


def read_jsonl(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSON-lines file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BankInputError(f"{p}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BankInputError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise BankInputError(f"{p}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        out.append((lineno, obj))
    return out


def read_entries(path: str | Path) -> list[NewEntry]:
    """Entries of a JSONL file (``source_id, dataset, question, context, findings, cautions``);
    a bad line is an error naming the file and line."""
    from pydantic import ValidationError

    out = []
    for lineno, obj in read_jsonl(path):
        try:
            out.append(EntryRecord.model_validate(obj).to_new_entry())
        except (ValidationError, ValueError) as exc:
            first = str(exc).splitlines()
            raise BankInputError(f"{path}:{lineno}: not a valid entry: {' '.join(first[:3])}") from None
    return out


def open_existing(folder: str | Path) -> ExperienceBank:
    """Open a bank that must already exist (readers never create an empty one by a typo)."""
    folder = Path(folder)
    if not (folder / DB_NAME).is_file():
        raise BankInputError(f"no bank at {folder} (no {DB_NAME}); build one with `localfin bank build`")
    return ExperienceBank.open(folder)


@dataclass(frozen=True)
class AddResult:
    """Rows added by one call and the bank's size after it."""

    bank: Path
    added: int
    rows: int


def add_entries(
    folder: str | Path,
    entries_path: str | Path,
    embedder: Embedder,
    *,
    batch: int = 256,
    fresh: bool = False,
    progress: Progress = NULL_PROGRESS,
) -> AddResult:
    """Embed and append the entries of a JSONL file, ``batch`` entries per committed batch.

    ``fresh``: the folder must not hold a bank yet (``localfin bank build``).
    """
    folder = Path(folder)
    if batch < 1:
        raise BankConfigError(f"batch={batch}; allowed: >= 1")
    if fresh and (folder / DB_NAME).exists():
        raise BankConfigError(f"{folder} already holds a bank; use `localfin bank add` to extend it")
    entries = read_entries(entries_path)
    with ExperienceBank.open(folder) as bank, progress.task("embedding entries", total=len(entries)) as task:
        for lo in range(0, len(entries), batch):
            part = entries[lo : lo + batch]
            bank.add_texts(part, embedder, save_index=False)
            task.advance(len(part))
        return AddResult(folder, len(entries), len(bank))


def query_bank(
    folder: str | Path,
    question: str,
    context: str,
    embedder: Embedder,
    config: RetrievalConfig | None = None,
) -> Any:
    """Retrieve entries for a question from an existing bank (a :class:`RetrievalResult`)."""
    from bank.retrieval import Retriever

    with open_existing(folder) as bank:
        return Retriever(bank, embedder, config or RetrievalConfig()).retrieve(question, context)


def bank_stats(folder: str | Path) -> dict[str, Any]:
    """Row count, model, datasets, index state and the integrity checks passed, as a dict."""
    with open_existing(folder) as bank:
        report = bank.integrity_check()
        return {
            "bank": str(folder),
            "rows": len(bank),
            "model_id": bank.model_id,
            "dim": bank.dim,
            "sources": len(set(bank.sources)),
            "datasets": dict(Counter(bank.datasets())),
            "index_rows": report.index_rows,
            "integrity": list(report.checks),
        }
