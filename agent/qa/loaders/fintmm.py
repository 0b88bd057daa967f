"""FinTMMBench (github.com/lijunfeng99/FinTMMBench, read at commit 6d01685).

Released layout: a folder with ``QA.json`` (a JSON array of question records) and ``data/``
holding the corpus: ``StockPrice.json``, ``FinancialTable.json``, ``News.json`` (JSON arrays of
rows, each with a ``uuid``) and ``Chart/<TICKER>_<PERIOD>_Kline.png`` candlestick charts.
A question record has ``question``, ``answers`` (a list of ``{answer, explanation,
confidence, source}``, ``source`` a list of corpus ``uuid`` strings or ``Chart_<TICKER>_
<PERIOD>_Kline`` chart references), and optionally ``uuid`` and ``type`` (e.g. ``Chart``).
The large JSON files were not readable in the snapshot we inspected (over 4 MiB), so the
field names above come from the repository's README and generation prompts and from code
that reads these files; the loader needs only ``question`` and ``answers[0].answer``.

The repository ships no train/test split: every record of ``QA.json`` is a ``test`` item
unless it carries a ``split`` field; a folder may instead hold ``train.json``/``test.json`` in
the same record format (split from the file name).

FinTMMBench is a retrieval benchmark: the solver is meant to find the evidence in the corpus.
By default the Question has no context. ``oracle_context=True`` puts the rows cited by the
gold annotation's ``source`` into the context and the cited charts into the images: oracle
retrieval, useful for debugging the reader but not the benchmark's protocol (a run using it
must say so). Gold: the first answer's text, type ``free`` (scored by a judge model, see
:func:`agent.qa.scoring.judge_requests`); explanation, sources and type go to ``extra``.
Item ids: ``uuid`` when present, else ``fintmm-<position>``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.answer_format import answer_format_from_question
from agent.qa.datasets import Row, SkippedItem, iter_json_rows
from agent.qa.items import Gold, QAItem, Question
from agent.qa.loaders.common import BadRecord, skip_of, text_field
from localfin.errors import ConfigError, InputError

__all__ = ["iter_fintmm"]

log = logging.getLogger(__name__)

_CORPUS = ("StockPrice.json", "FinancialTable.json", "News.json")
_MAX_ROW_CHARS = 1200


def _corpus_index(data_dir: Path) -> dict[str, dict[str, Any]]:
    index: dict[str, dict[str, Any]] = {}
    for name in _CORPUS:
        f = data_dir / name
        if not f.is_file():
            continue
        try:
            rows = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read FinTMMBench corpus file {f}: {exc}") from exc
        for r in rows if isinstance(rows, list) else []:
            if isinstance(r, dict) and r.get("uuid"):
                index[str(r["uuid"])] = r
    return index


def _render_row(row: dict[str, Any]) -> str:
    text = "; ".join(f"{k}: {v}" for k, v in row.items() if k != "uuid" and v not in (None, ""))
    return text[:_MAX_ROW_CHARS]


def _sources(answers: list[Any]) -> list[str]:
    out: list[str] = []
    for a in answers:
        if isinstance(a, dict):
            out += [s for s in a.get("source") or [] if isinstance(s, str)]
    return out


def _item(
    rec: dict[str, Any], pos: int, split: str, index: dict[str, dict[str, Any]] | None, charts: Path
) -> QAItem:
    item_id = str(rec.get("uuid") or f"fintmm-{pos}")
    question = text_field(rec, "question")
    answers = rec.get("answers")
    if not isinstance(answers, list) or not answers or not isinstance(answers[0], dict):
        raise BadRecord("answers must be a non-empty list of objects")
    answer = text_field(answers[0], "answer")
    sources = _sources(answers)
    context, images = "", ()
    if index is not None:
        rows = [_render_row(index[s]) for s in sources if s in index]
        context = "\n".join(rows)
        images = tuple(
            str(charts / f"{s[len('Chart_') :]}.png")
            for s in sources
            if s.startswith("Chart_") and (charts / f"{s[len('Chart_') :]}.png").is_file()
        )
    q = Question(
        item_id=item_id,
        dataset="fintmmbench",
        text=question,
        context=context,
        images=images,
        answer_format=answer_format_from_question(question).describe(),
    )
    gold = Gold(
        answer=answer,
        answer_type="free",
        extra={
            "explanation": answers[0].get("explanation", ""),
            "sources": sources,
            "type": rec.get("type", ""),
        },
    )
    row_split = str(rec.get("split") or split)
    return QAItem(q, gold, row_split if row_split in ("train", "test", "dev", "validation") else split)


def iter_fintmm(path: Path, *, oracle_context: bool, require_images: bool) -> Iterator[QAItem | SkippedItem]:
    """Items of ``QA.json`` (or ``train.json``/``test.json``) under ``path``, or of one file."""
    del require_images  # charts are only attached in oracle mode, where missing ones are dropped
    if path.is_file():
        files, root = [path], path.parent
    else:
        files = [f for f in (path / "train.json", path / "test.json") if f.is_file()] or [path / "QA.json"]
        root = path
        if not files[0].is_file():
            raise InputError(f"no FinTMMBench questions under {path} (expected QA.json)")
    index = None
    if oracle_context:
        log.warning(
            "FinTMMBench oracle_context: contexts come from the gold sources (not the benchmark protocol)"
        )
        index = _corpus_index(root / "data")
    for f in files:
        split = "train" if f.stem.lower().startswith("train") else "test"
        for row in iter_json_rows(f):
            if not isinstance(row, Row):
                yield skip_of(row)
                continue
            rec = row.data
            if not isinstance(rec, dict):
                yield skip_of(row, "", f"record is a JSON {type(rec).__name__}, expected an object")
                continue
            try:
                yield _item(rec, row.line, split, index, root / "data" / "Chart")
            except (BadRecord, ConfigError) as exc:
                yield skip_of(row, str(rec.get("uuid") or ""), str(exc))
