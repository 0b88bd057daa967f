"""BizBench (Kensho, huggingface.co/datasets/kensho/bizbench, card at commit 0a793f2), one task
(``subset``, default ``SEC-NUM``) at a time.

Released layout, as the card's ``configs`` and file list give it: a folder with
``data/train-00000-of-00001-300a28d2e31daec3.parquet`` (14,377 rows) and
``data/test-00000-of-00001-7b139510152259c8.parquet`` (4,673 rows) over eight tasks, columns
``question``, ``answer`` (string), ``task``, ``context``, ``context_type``, ``options`` (a
sequence of strings, or null) and ``program``. The path may be that folder, its ``data/``
folder, one parquet file, or a JSON/JSONL export with the same columns (and optionally a
``split`` field). The card lists its tasks by name (FinCode, CodeFinQA, CodeTATQA, ConvFinQA,
TAT-QA, SEC-Num, FinKnow, FormulaEval) but not the exact strings of the ``task`` column, so the
subset is compared without case, spaces or dashes (``SEC-NUM`` matches ``SEC-Num`` and
``SECNUM``), and a subset no row matches is an error listing the tasks the files hold.

Split: a ``split`` field, else the file name's (``train-...``/``test-...``), else the split
asked for; a record with none of these is skipped. With ``split`` given, parquet files whose
name states another split are not read. Item ids are ``bizbench-<split>-<shard>-<row>`` with
the 1-based row position in its file, so ids are stable across loads. SEC-NUM asks for a
quantity from a filing snippet: Question.text is ``question``, Question.context the snippet;
the gold is the answer text, which must read as a number (:func:`agent.qa.core.numbers.parse_number`)
or the row is skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.core.answer_format import answer_format_from_question, numeric_format
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.core.numbers import parse_number
from agent.qa.loaders.common import item_split, split_from_name, text_field
from agent.qa.loaders.records import (
    BadRecord,
    Produced,
    Row,
    each_record,
    iter_json_rows,
    parquet_rows,
    whole_file,
)
from localfin.errors import ConfigError, InputError

__all__ = ["iter_bizbench"]

_COLUMNS = ("question", "answer", "task", "context", "context_type", "options", "split")


def _norm_task(task: str) -> str:
    return re.sub(r"[^a-z0-9]", "", task.lower())


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


def _item(rec: dict[str, Any], f: Path, shard: int, n: int, asked: str | None) -> QAItem:
    split = item_split(rec.get("split"), f, asked, "")
    if not split:
        raise BadRecord(
            f"cannot tell the split of {f.name} (no 'split' field; expected a name starting with "
            "train or test)"
        )
    question = text_field(rec, "question")
    answer = text_field(rec, "answer")
    if parse_number(answer) is None:
        raise BadRecord(f"answer {answer!r} does not read as a number")
    options = rec.get("options") or ()
    if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
        raise BadRecord("options must be a list of strings or null")
    q = Question(
        item_id=f"bizbench-{split}-{shard}-{n}",
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
    return QAItem(q, gold, split, str(rec.get("task") or ""))


def iter_bizbench(path: Path, *, task: str, split: str | None) -> Iterator[Produced]:
    """Items of ``task`` from the parquet files (or a JSON/JSONL export) under ``path``."""
    want = _norm_task(task)
    if not want:
        raise ConfigError(f"subset (BizBench task) {task!r} must name a task, e.g. SEC-NUM")
    files = _files(path)
    shards: dict[str, int] = {}
    tasks: Counter[str] = Counter()
    for f in files:
        prefix = f.name.split("-")[0].split(".")[0].lower()
        shard = shards.get(prefix, 0)
        shards[prefix] = shard + 1
        if split is not None and f.suffix == ".parquet" and split_from_name(f) not in (split, None):
            continue
        rows = parquet_rows(f, _COLUMNS) if f.suffix == ".parquet" else iter_json_rows(f)

        def of_task(rows=rows) -> Iterator[Row | Any]:
            for row in rows:
                if isinstance(row, Row) and isinstance(row.data, dict):
                    tasks[str(row.data.get("task") or "")] += 1
                    if _norm_task(str(row.data.get("task") or "")) != want:
                        continue
                yield row

        def make(row: Row, rec: dict[str, Any], f: Path = f, shard: int = shard) -> Iterator[Produced]:
            yield _item(rec, f, shard, row.line, split)

        yield from whole_file(f, each_record(of_task(), make, lambda rec: ""))
    if tasks and not any(_norm_task(t) == want for t in tasks):
        raise InputError(
            f"subset (BizBench task) {task!r} matches no row under {path}; tasks there: "
            + ", ".join(f"{t or '(none)'} ({n})" for t, n in tasks.most_common())
        )
