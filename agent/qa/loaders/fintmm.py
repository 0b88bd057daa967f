"""FinTMMBench (github.com/lijunfeng99/FinTMMBench, read at commit 6d01685).

Released layout (its README's file tree): a folder with ``QA.json`` (all 5,676 questions with
their answers and the corpus rows they rest on) and ``data/`` holding the corpus:
``StockPrice.json``, ``FinancialTable.json``, ``News.json`` (JSON arrays of rows, each with a
``uuid``), ``Chart/<TICKER>_<PERIOD>_Kline.png`` candlestick charts (6,267 of them, e.g.
``AAPL_2022-W10_Kline.png``, ``AAPL_2022-M10_Kline.png``), ``schema.xlsx`` and ``Prompt/``.
The four JSON files are over 4 MiB and were absent from every snapshot we could read, so their
record format comes from the generation prompts' ``#Return`` block (``data/Prompt/*.txt``):
``{"questions": [{"question", "answers": [{"answer", "explanation", "confidence",
"source": [uuid, ...]}]}]}``. The loader therefore accepts each shape that format allows: an
array of question records, an object whose ``questions`` (or ``data``) is one, or an array of
such ``{"questions": [...]}`` groups; a question record may also carry ``uuid``, ``type`` and
``split``. A chart source is a chart's file stem, with or without a ``Chart_`` prefix or a
``.png`` suffix. Only ``question`` and ``answers[0].answer`` are required.

The repository ships no train/test split: a record's ``split``, else the file name's
(``train.json``/``test.json`` in the same record format), else the split asked for, else
``test``. FinTMMBench has no subsets.

A question record of the release carries ``uuid`` (its id), ``type`` (the kind of data it was
generated from: ``StockPrice``, ``FinancialTable``, ``News``, ``Chart``, ...) and, in its
answers' ``source``, the corpus rows it rests on (their ``uuid``) and the charts
(``Chart_<TICKER>_<PERIOD>_Kline``: the file ``data/Chart/<TICKER>_<PERIOD>_Kline.png``).

FinTMMBench is a retrieval benchmark: the solver is meant to find the evidence in the corpus.
By default the Question has no context and no images. The gold evidence is kept on the gold
side, for a protocol that hands it over (the FinAcumen authors' adapter puts it into every
variant's input, :func:`agent.qa.core.items.with_gold_evidence`): ``extra['evidence_images']``, the
cited charts that exist in this copy, in citation order, for a question of type ``Chart`` (or
of no type), as the authors' adapter attaches them; and, with ``oracle_context=True`` (which
reads the corpus files), ``extra['evidence_context']``, the cited rows rendered as ``key:
value`` text, one a line. ``oracle_context=True`` also puts both into the Question (context and
images): oracle retrieval, not the benchmark's protocol (a run using it must say so). Gold: the
first answer's text, type ``free`` (scored by a judge model, see
:func:`agent.qa.scoring.scoring.judge_requests`); explanation, sources, type and uuid go to ``extra``.
Item ids: ``uuid`` when present, else ``fintmm-<position>`` (``fintmm-<group>-<position>``
inside a group); a uuid that repeats is numbered by :func:`agent.qa.data.datasets.load_items`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.core.answer_format import answer_format_from_question
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.loaders.common import item_split, text_field
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
            key = r.get("uuid") or r.get("UUID") if isinstance(r, dict) else None
            if key:
                index[str(key)] = r
    return index


def _render_row(row: dict[str, Any]) -> str:
    text = "; ".join(f"{k}: {v}" for k, v in row.items() if k.lower() != "uuid" and v not in (None, ""))
    return text[:_MAX_ROW_CHARS]


def _sources(answers: list[Any]) -> list[str]:
    out: list[str] = []
    for a in answers:
        if isinstance(a, dict):
            out += [s for s in a.get("source") or [] if isinstance(s, str)]
    return out


def _chart(charts: Path, source: str) -> Path | None:
    stem = source.removeprefix("Chart_").removesuffix(".png")
    f = charts / f"{stem}.png"
    return f if f.is_file() else None


def _evidence_images(rec: dict[str, Any], sources: list[str], charts: Path, index: Any) -> tuple[str, ...]:
    """The cited charts present in this copy, for a Chart question (or one of no type)."""
    kind = str(rec.get("type") or "")
    if kind and kind.lower() != "chart":
        return ()
    found = (_chart(charts, s) for s in sources if not (index and s in index))
    return tuple(dict.fromkeys(str(c) for c in found if c is not None))


def _item(
    rec: dict[str, Any], item_id: str, split: str, index: dict[str, dict[str, Any]] | None, charts: Path
) -> QAItem:
    question = text_field(rec, "question")
    answers = rec.get("answers")
    if not isinstance(answers, list) or not answers or not isinstance(answers[0], dict):
        raise BadRecord("answers must be a non-empty list of objects")
    answer = text_field(answers[0], "answer")
    sources = _sources(answers)
    evidence_images = _evidence_images(rec, sources, charts, index)
    context, images = "", ()
    extra: dict[str, Any] = {
        "explanation": answers[0].get("explanation", ""),
        "sources": sources,
        "type": rec.get("type", ""),
        "uuid": str(rec.get("uuid") or ""),
        "evidence_images": evidence_images,
    }
    if index is not None:
        context = "\n".join(_render_row(index[s]) for s in sources if s in index)
        images = evidence_images
        extra["evidence_context"] = context
    q = Question(
        item_id=item_id,
        dataset="fintmmbench",
        text=question,
        context=context,
        images=images,
        answer_format=answer_format_from_question(question).describe(),
    )
    gold = Gold(answer=answer, answer_type="free", extra=extra)
    return QAItem(q, gold, split)


def _files(path: Path) -> tuple[list[Path], Path]:
    if path.is_file():
        return [path], path.parent
    files = [f for f in (path / "train.json", path / "test.json") if f.is_file()] or [path / "QA.json"]
    if not files[0].is_file():
        raise InputError(f"no FinTMMBench questions under {path} (expected QA.json)")
    return files, path


def iter_fintmm(path: Path, *, split: str | None, oracle_context: bool) -> Iterator[Produced]:
    """Items of ``QA.json`` (or ``train.json``/``test.json``) under ``path``, or of one file."""
    files, root = _files(path)
    index = None
    if oracle_context:
        log.warning(
            "FinTMMBench oracle_context: contexts come from the gold sources (not the benchmark protocol)"
        )
        index = _corpus_index(root / "data")
    charts = root / "data" / "Chart"
    for f in files:

        def make(row: Row, rec: dict[str, Any], f: Path = f) -> Iterator[Produced]:
            group = rec.get("questions") if "question" not in rec else None
            members = list(enumerate(group, 1)) if isinstance(group, list) else [(0, rec)]
            for k, q in members:
                if not isinstance(q, dict):
                    yield skip_of(
                        row, "", f"question {k} of the group is a JSON {type(q).__name__}, expected an object"
                    )
                    continue
                item_id = str(q.get("uuid") or (f"fintmm-{row.line}-{k}" if k else f"fintmm-{row.line}"))
                try:
                    own = item_split(q.get("split", rec.get("split")), f, split, "test")
                    yield _item(q, item_id, own, index, charts)
                except (BadRecord, ConfigError) as exc:
                    yield skip_of(row, str(q.get("uuid") or ""), str(exc))

        rows = iter_json_rows(f, list_keys=("questions", "data"))
        yield from whole_file(f, each_record(rows, make, lambda rec: str(rec.get("uuid") or "")))
