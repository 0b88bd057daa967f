"""The project's demo QA set (written by :func:`agent.qa.demo_set.build_demo_set`).

Layout: a folder with ``items.jsonl`` and ``images/``. One item per line: ``id``, ``split``
(``train``/``test``), ``kind`` (see :data:`agent.qa.demo_set.DEMO_KINDS`), ``ticker``,
``question``, ``context`` (``<image 1>`` where an image belongs), ``images`` (paths relative
to the folder), ``answer`` (a number), ``answer_type`` (``number`` or ``count``) and
``decimals`` (asked in the question). Gold ``extra``: ``kind``, ``decimals`` and ``abs_tol``
(half a unit of the asked decimals).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agent.qa.answer_format import numeric_format
from agent.qa.datasets import Row, SkippedItem, iter_json_rows
from agent.qa.items import Gold, QAItem, Question
from agent.qa.loaders.common import BadRecord, parse_path_list, skip_of, text_field
from localfin.errors import ConfigError

__all__ = ["iter_demo"]


def _item(rec: dict, root: Path, require_images: bool) -> QAItem:
    item_id = text_field(rec, "id")
    question = text_field(rec, "question")
    answer = rec.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise BadRecord(f"answer {answer!r} is not a number")
    decimals = rec.get("decimals")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 6:
        raise BadRecord(f"decimals {decimals!r}; allowed: 0..6")
    images = []
    for rel in parse_path_list(rec.get("images"), "images"):
        p = root / rel
        if p.is_file():
            images.append(str(p))
        elif require_images:
            raise BadRecord(f"image file missing: {p}")
    q = Question(
        item_id=item_id,
        dataset="demo",
        text=question,
        context=str(rec.get("context") or ""),
        images=tuple(images),
        answer_format=numeric_format(question).describe(),
    )
    gold = Gold(
        answer=answer,
        answer_type="count" if rec.get("answer_type") == "count" else "number",
        extra={"kind": rec.get("kind", ""), "decimals": decimals, "abs_tol": 0.5 * 10.0**-decimals},
    )
    return QAItem(q, gold, str(rec.get("split") or "test"))


def iter_demo(path: Path, *, require_images: bool) -> Iterator[QAItem | SkippedItem]:
    """Items of a demo set folder (or of its ``items.jsonl``)."""
    f = path / "items.jsonl" if path.is_dir() else path
    for row in iter_json_rows(f):
        if not isinstance(row, Row):
            yield skip_of(row)
            continue
        rec = row.data
        if not isinstance(rec, dict):
            yield skip_of(row, "", f"record is a JSON {type(rec).__name__}, expected an object")
            continue
        try:
            yield _item(rec, f.parent, require_images)
        except (BadRecord, ConfigError) as exc:
            yield skip_of(row, str(rec.get("id") or ""), str(exc))
