"""TAT-QA in the shared JSONL layout (``qa/tatqa_dev.jsonl``, see shared/data/README.md).

One question per line: ``id``, ``split`` (``dev``), ``question``, ``table`` (list of rows, each
a list of cell strings), ``paragraphs`` (list of strings), ``answer`` (a list of spans for
``span``/``multi-span``, a number for ``arithmetic``, a string for ``count``), ``scale``
(``""``, ``thousand``, ``million``, ``billion``, ``percent``), ``answer_type``, ``answer_from``,
``derivation``, ``numeric``, ``table_uid``.

Question: context = the paragraphs (blank line between) followed by the table rendered as
pipe-separated text under a ``Table:`` line. Gold: ``answer`` as given (empty spans of a
multi-span answer dropped: no solver can write an empty span; the count is kept in
``extra['dropped_empty_spans']``), ``scale``, ``answer_type`` mapped to ours
(arithmetic -> number, count -> count, span -> span, multi-span -> multi-span); the raw type,
``answer_from`` and ``derivation`` go to ``extra``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agent.qa.answer_format import answer_format_from_question
from agent.qa.datasets import Row, SkippedItem, iter_json_rows
from agent.qa.items import SCALES, SPLITS, Gold, QAItem, Question
from agent.qa.loaders.common import BadRecord, render_table, skip_of, text_field
from localfin.errors import ConfigError

__all__ = ["iter_tatqa", "TATQA_TYPES"]

#: TAT-QA answer type -> ours.
TATQA_TYPES = {"arithmetic": "number", "count": "count", "span": "span", "multi-span": "multi-span"}


def _item(rec: dict) -> QAItem:
    item_id = text_field(rec, "id")
    question = text_field(rec, "question")
    raw_type = text_field(rec, "answer_type")
    if raw_type not in TATQA_TYPES:
        raise BadRecord(f"answer_type {raw_type!r}; allowed: {', '.join(TATQA_TYPES)}")
    scale = rec.get("scale") or ""
    if scale not in SCALES:
        raise BadRecord(f"scale {scale!r}; allowed: {', '.join(repr(s) for s in SCALES)}")
    split = str(rec.get("split") or "dev")
    if split not in SPLITS:
        raise BadRecord(f"split {split!r}; allowed: {', '.join(SPLITS)}")
    paragraphs = rec.get("paragraphs") or []
    if not isinstance(paragraphs, list) or not all(isinstance(p, str) for p in paragraphs):
        raise BadRecord("paragraphs must be a list of strings")
    table = rec.get("table") or []
    try:
        table_text = render_table(table) if table else ""
    except ConfigError as exc:
        raise BadRecord(str(exc)) from None
    parts = [p.strip() for p in paragraphs if p.strip()]
    if table_text:
        parts.append("Table:\n" + table_text)
    answer = rec.get("answer")
    dropped = 0
    if raw_type in ("span", "multi-span"):
        if not isinstance(answer, list) or not all(isinstance(a, (str, int, float)) for a in answer):
            raise BadRecord(f"answer of a {raw_type} item must be a list of spans")
        spans = [str(a) for a in answer if str(a).strip()]
        dropped = len(answer) - len(spans)
        if not spans:
            raise BadRecord("answer has no non-empty span")
        answer = spans
    elif raw_type == "arithmetic":
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            raise BadRecord(f"answer of an arithmetic item must be a number, got {answer!r}")
    else:
        if not str(answer or "").strip().lstrip("-").isdigit():
            raise BadRecord(f"answer of a count item must be a whole number, got {answer!r}")
    fmt = answer_format_from_question(question)
    hint = fmt.describe()
    if fmt.kind in ("number", "percent"):
        hint += "; end it with the scale word (thousand, million, billion) or % when the source states one"
    q = Question(
        item_id=item_id,
        dataset="tatqa",
        text=question,
        context="\n\n".join(parts),
        answer_format=hint,
    )
    gold = Gold(
        answer=answer,
        answer_type=TATQA_TYPES[raw_type],
        scale=scale,
        extra={
            "tatqa_answer_type": raw_type,
            "answer_from": rec.get("answer_from", ""),
            "derivation": rec.get("derivation", ""),
            "dropped_empty_spans": dropped,
        },
    )
    return QAItem(q, gold, split)


def iter_tatqa(path: Path) -> Iterator[QAItem | SkippedItem]:
    """Items of one TAT-QA JSONL file (or of every ``*.jsonl`` in a folder, sorted)."""
    files = sorted(path.glob("tatqa*.jsonl")) if path.is_dir() else [path]
    for f in files:
        for row in iter_json_rows(f):
            if not isinstance(row, Row):
                yield skip_of(row)
                continue
            rec = row.data
            if not isinstance(rec, dict):
                yield skip_of(row, "", f"record is a JSON {type(rec).__name__}, expected an object")
                continue
            try:
                yield _item(rec)
            except (BadRecord, ConfigError) as exc:
                yield skip_of(row, str(rec.get("id") or ""), str(exc))
