"""The project's demo QA set (written by :func:`agent.qa.data.demo_set.build_demo_set`).

Layout: a folder with ``items.jsonl`` and ``images/``. One item per line: ``id``, ``split``
(``train``/``test``), ``kind`` (see :data:`agent.qa.data.demo_set.DEMO_KINDS`), ``ticker``,
``question``, ``context`` (``<image 1>`` where an image belongs), ``images`` (paths relative
to the folder), ``answer`` (a number), ``answer_type`` (``number`` or ``count``) and
``decimals`` (asked in the question). Gold ``extra``: ``kind``, ``decimals`` and ``abs_tol``
(half a unit of the asked decimals).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.core.answer_format import numeric_format
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.loaders.common import item_split, parse_path_list, text_field
from agent.qa.loaders.records import (
    BadRecord,
    IncompleteItem,
    Produced,
    Row,
    each_record,
    iter_json_rows,
    whole_file,
)

__all__ = ["iter_demo"]


def _item(rec: dict[str, Any], root: Path, split: str, require_images: bool) -> tuple[QAItem, list[str]]:
    item_id = text_field(rec, "id")
    question = text_field(rec, "question")
    answer = rec.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise BadRecord(f"answer {answer!r} is not a number")
    decimals = rec.get("decimals")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 6:
        raise BadRecord(f"decimals {decimals!r}; allowed: 0..6")
    images, missing = [], []
    for rel in parse_path_list(rec.get("images"), "images"):
        p = root / rel
        if p.is_file():
            images.append(str(p))
        elif require_images:
            raise BadRecord(f"image file missing: {p}")
        else:
            missing.append(str(p))
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
    return QAItem(q, gold, split), missing


def iter_demo(path: Path, *, split: str | None, require_images: bool) -> Iterator[Produced]:
    """Items of a demo set folder (or of its ``items.jsonl``)."""
    f = path / "items.jsonl" if path.is_dir() else path

    def make(row: Row, rec: dict[str, Any]) -> Iterator[Produced]:
        item, missing = _item(rec, f.parent, item_split(rec.get("split"), f, split, "test"), require_images)
        if missing:  # kept without them (require_images=False), and listed
            listed = len(missing) + len(item.question.images)
            reason = f"image file missing: {missing[0]} ({len(missing)} of {listed})"
            yield IncompleteItem(str(row.path), row.line, item.item_id, reason)
        yield item

    yield from whole_file(f, each_record(iter_json_rows(f), make, lambda rec: str(rec.get("id") or "")))
