"""TAT-QA (github.com/NExTplusplus/TAT-QA, read at commit 870accc), in two layouts.

**Released** (``dataset_raw/tatqa_dataset_{train,dev,test,test_gold}.json``): a JSON array of
documents, each with ``table`` (``uid``, ``table``: a list of rows, each a list of cell
strings), ``paragraphs`` (a list of ``{uid, order, text}``) and ``questions`` (a list of
``{uid, order, question, answer, derivation, answer_type, answer_from, rel_paragraphs,
req_comparison, scale}``; ``test_gold`` adds ``facts``, ``consts``, ``mappings`` and
``tree_derivation``). Every question becomes an item with id = its ``uid``; skipped questions
carry the 1-based position of their document as ``line``. ``tatqa_dataset_test.json`` has no
answers (its questions hold only ``uid``, ``order`` and ``question``): every one is skipped
with a reason pointing to ``tatqa_dataset_test_gold.json``, so that file alone is an error
(nothing loads). A folder is read file by file (``dataset_raw/`` inside it if present); with
``split`` given, only ``tatqa_dataset_<split>.json`` is read, and without it
``tatqa_dataset_test.json`` is left out where ``tatqa_dataset_test_gold.json`` (the same
questions with their answers) sits beside it.

**JSONL export** (e.g. ``tatqa_dev.jsonl``, one reshaped split): one question per line
with ``id``, ``split``, ``question``, ``table`` (the list of rows), ``paragraphs`` (a list of
strings, in document order), ``answer``, ``scale``, ``answer_type``, ``answer_from``,
``derivation``, ``numeric``, ``table_uid``.

Both give the same item for the same question. Split: the record's ``split`` (JSONL), else the
file name's (``tatqa_dataset_test_gold.json`` -> ``test_gold``), else the split asked for,
else ``dev``. Question: context = the paragraphs in ``order`` (blank line between) followed by
the table rendered as pipe-separated text under a ``Table:`` line. Gold: ``answer`` as given
(a list of spans for ``span``/``multi-span``, a number for ``arithmetic``, a whole-number
string for ``count``; empty spans of a multi-span answer dropped, since no solver can write an
empty span, their count kept in ``extra['dropped_empty_spans']``), ``scale`` (``""``,
``thousand``, ``million``, ``billion``, ``percent``), ``answer_type`` mapped to ours
(arithmetic -> number, count -> count, span -> span, multi-span -> multi-span); the raw type,
``answer_from``, ``derivation``, ``rel_paragraphs`` and ``req_comparison`` go to ``extra``.
TAT-QA has no subsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.core.answer_format import answer_format_from_question
from agent.qa.core.items import SCALES, Gold, QAItem, Question
from agent.qa.loaders.common import item_split, render_table, split_from_name, text_field
from agent.qa.loaders.records import (
    BadRecord,
    Produced,
    Row,
    each_record,
    iter_json_rows,
    skip_of,
    whole_file,
)
from localfin.errors import ConfigError, InputError

__all__ = ["iter_tatqa", "TATQA_TYPES"]

#: TAT-QA answer type -> ours.
TATQA_TYPES = {"arithmetic": "number", "count": "count", "span": "span", "multi-span": "multi-span"}
_NO_GOLD = (
    "question has no answer (the released tatqa_dataset_test.json holds none; "
    "use tatqa_dataset_test_gold.json)"
)


def _context(paragraphs: list[str], table: Any) -> str:
    try:
        table_text = render_table(table) if table else ""
    except ConfigError as exc:
        raise BadRecord(str(exc)) from None
    parts = [p.strip() for p in paragraphs if p.strip()]
    if table_text:
        parts.append("Table:\n" + table_text)
    return "\n\n".join(parts)


def _gold(q: dict[str, Any]) -> Gold:
    if "answer" not in q and "answer_type" not in q:
        raise BadRecord(_NO_GOLD)
    raw_type = text_field(q, "answer_type")
    if raw_type not in TATQA_TYPES:
        raise BadRecord(f"answer_type {raw_type!r}; allowed: {', '.join(TATQA_TYPES)}")
    scale = q.get("scale") or ""
    if scale not in SCALES:
        raise BadRecord(f"scale {scale!r}; allowed: {', '.join(repr(s) for s in SCALES)}")
    answer = q.get("answer")
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
    elif not str(answer or "").strip().lstrip("-").isdigit():
        raise BadRecord(f"answer of a count item must be a whole number, got {answer!r}")
    return Gold(
        answer=answer,
        answer_type=TATQA_TYPES[raw_type],
        scale=scale,
        extra={
            "tatqa_answer_type": raw_type,
            "answer_from": q.get("answer_from", ""),
            "derivation": q.get("derivation", ""),
            "rel_paragraphs": list(q.get("rel_paragraphs") or []),
            "req_comparison": bool(q.get("req_comparison", False)),
            "dropped_empty_spans": dropped,
        },
    )


def _item(q: dict[str, Any], item_id: str, context: str, split: str) -> QAItem:
    question = text_field(q, "question")
    fmt = answer_format_from_question(question)
    hint = fmt.describe()
    if fmt.kind in ("number", "percent"):
        hint += "; end it with the scale word (thousand, million, billion) or % when the source states one"
    q_ = Question(item_id=item_id, dataset="tatqa", text=question, context=context, answer_format=hint)
    return QAItem(q_, _gold(q), split)


def _paragraph_texts(doc: dict[str, Any]) -> list[str]:
    paras = doc.get("paragraphs") or []
    if not isinstance(paras, list) or not all(
        isinstance(p, dict) and isinstance(p.get("text"), str) for p in paras
    ):
        raise BadRecord("paragraphs must be a list of {uid, order, text} objects")
    try:
        ordered = sorted(paras, key=lambda p: int(p.get("order", 0)))
    except (TypeError, ValueError):
        raise BadRecord("paragraph 'order' must be a whole number") from None
    return [p["text"] for p in ordered]


def _document(row: Row, doc: dict[str, Any], split: str) -> Iterator[Produced]:
    """The items of one released document (a question that fails is skipped alone)."""
    questions = doc.get("questions")
    if not isinstance(questions, list):
        raise BadRecord("document field 'questions' must be a list")
    try:
        table = doc.get("table") or {}
        if not isinstance(table, dict):
            raise BadRecord("document field 'table' must be an object with 'uid' and 'table'")
        context = _context(_paragraph_texts(doc), table.get("table") or [])
    except BadRecord as exc:
        for q in questions:
            yield skip_of(row, str(q.get("uid") or "") if isinstance(q, dict) else "", str(exc))
        return
    for q in questions:
        if not isinstance(q, dict):
            yield skip_of(row, "", f"question is a JSON {type(q).__name__}, expected an object")
            continue
        try:
            yield _item(q, text_field(q, "uid"), context, split)
        except (BadRecord, ConfigError) as exc:
            yield skip_of(row, str(q.get("uid") or ""), str(exc))


def _line(row: Row, rec: dict[str, Any], split: str) -> Iterator[Produced]:
    paragraphs = rec.get("paragraphs") or []
    if not isinstance(paragraphs, list) or not all(isinstance(p, str) for p in paragraphs):
        raise BadRecord("paragraphs must be a list of strings")
    yield _item(rec, text_field(rec, "id"), _context(paragraphs, rec.get("table") or []), split)


def _files(path: Path, split: str | None) -> list[Path]:
    if path.is_file():
        return [path]
    folder = path / "dataset_raw" if (path / "dataset_raw").is_dir() else path
    released = sorted(folder.glob("tatqa_dataset_*.json"))
    files = released + sorted(folder.glob("tatqa*.jsonl"))
    if split is not None:
        files = [f for f in files if split_from_name(f) in (split, None)]
    elif (folder / "tatqa_dataset_test_gold.json").is_file():
        files = [f for f in files if f.name != "tatqa_dataset_test.json"]
    if not files:
        raise InputError(
            f"no TAT-QA files under {folder} for split={split or 'any'} "
            "(expected dataset_raw/tatqa_dataset_<split>.json or tatqa*.jsonl)"
        )
    return files


def iter_tatqa(path: Path, *, split: str | None) -> Iterator[Produced]:
    """Items of a TAT-QA file (released JSON or shared JSONL) or of the files of a folder."""
    for f in _files(path, split):

        def make(row: Row, rec: dict[str, Any], f: Path = f) -> Iterator[Produced]:
            own = item_split(rec.get("split"), f, split, "dev")
            return _document(row, rec, own) if "questions" in rec else _line(row, rec, own)

        yield from whole_file(f, each_record(iter_json_rows(f), make, lambda rec: str(rec.get("id") or "")))
