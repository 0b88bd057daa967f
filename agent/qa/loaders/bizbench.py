"""BizBench (Kensho, huggingface.co/datasets/kensho/bizbench), SEC-NUM task by default.

Released layout: a folder with ``data/train-*.parquet`` and ``data/test-*.parquet`` (the
dataset card lists 14,377 train and 4,673 test rows over eight tasks) with columns
``question``, ``answer`` (text), ``task``, ``context``, ``context_type``, ``options`` (list of
strings or null) and ``program``. The path may be that folder, its ``data/`` folder, one
parquet file, or a JSON/JSONL export with the same columns (split taken from a ``split``
field, else from the file name: ``train...`` or ``test...``).

Only rows whose ``task`` matches ``task`` (compared without case, spaces or dashes, so
``SEC-NUM`` matches ``SEC-Num``) become items. Item ids are ``bizbench-<split>-<shard>-<row>``
with the 1-based row position in its file, so ids are stable across loads. SEC-NUM asks for a
quantity from a filing snippet: Question.text is ``question``, Question.context the snippet;
the gold is the answer text, which must read as a number (:func:`agent.qa.numbers.parse_number`)
or the row is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.answer_format import answer_format_from_question, numeric_format
from agent.qa.datasets import Row, SkippedItem, iter_json_rows
from agent.qa.items import Gold, QAItem, Question
from agent.qa.loaders.common import BadRecord, parquet_rows, skip_of, text_field
from agent.qa.numbers import parse_number
from localfin.errors import ConfigError, InputError

__all__ = ["iter_bizbench"]

_COLUMNS = ("question", "answer", "task", "context", "context_type", "options", "split")


def _norm_task(task: str) -> str:
    return re.sub(r"[^a-z0-9]", "", task.lower())


def _split_of(f: Path, rec: dict) -> str:
    raw = str(rec.get("split") or f.name).lower()
    for name in ("train", "test", "validation", "dev"):
        if raw.startswith(name):
            return name
    raise BadRecord(f"cannot tell the split of {f.name} (expected a name starting with train or test)")


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    data = path / "data" if (path / "data").is_dir() else path
    files = sorted(data.glob("*.parquet")) or sorted([*data.glob("*.jsonl"), *data.glob("*.json")])
    if not files:
        raise InputError(
            f"no BizBench files under {data} (expected data/train-*.parquet, data/test-*.parquet)"
        )
    return files


def _item(rec: dict[str, Any], f: Path, shard: int, n: int) -> QAItem:
    split = _split_of(f, rec)
    item_id = f"bizbench-{split}-{shard}-{n}"
    question = text_field(rec, "question")
    answer = text_field(rec, "answer")
    if parse_number(answer) is None:
        raise BadRecord(f"answer {answer!r} does not read as a number")
    options = rec.get("options") or ()
    if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
        raise BadRecord("options must be a list of strings or null")
    q = Question(
        item_id=item_id,
        dataset="bizbench",
        text=question,
        context=str(rec.get("context") or "").strip(),
        options=tuple(options),
        answer_format=(
            answer_format_from_question(question, options=tuple(options))
            if options
            else numeric_format(question)
        ).describe(),
    )
    gold = Gold(
        answer=answer,
        answer_type="number",
        extra={"task": rec.get("task", ""), "context_type": rec.get("context_type", "")},
    )
    return QAItem(q, gold, split)


def iter_bizbench(path: Path, *, task: str, split: str | None) -> Iterator[QAItem | SkippedItem]:
    """Items of ``task`` from the parquet files (or a JSON/JSONL export) under ``path``."""
    want = _norm_task(task)
    if not want:
        raise ConfigError(f"subset (BizBench task) {task!r} must name a task, e.g. SEC-NUM")
    files = _files(path)
    shards: dict[str, int] = {}
    for f in files:
        prefix = f.name.split("-")[0].split(".")[0].lower()
        shard = shards.get(prefix, 0)
        shards[prefix] = shard + 1
        if split is not None and not f.name.lower().startswith(split) and f.suffix == ".parquet":
            continue
        rows = parquet_rows(f, _COLUMNS) if f.suffix == ".parquet" else iter_json_rows(f)
        for row in rows:
            if not isinstance(row, Row):
                yield skip_of(row)
                continue
            rec = row.data
            if not isinstance(rec, dict):
                yield skip_of(row, "", f"record is a JSON {type(rec).__name__}, expected an object")
                continue
            if _norm_task(str(rec.get("task") or "")) != want:
                continue
            try:
                yield _item(rec, f, shard, row.line)
            except (BadRecord, ConfigError) as exc:
                yield skip_of(row, "", str(exc))
