"""``pct_change_qa``: percentage-change questions in a small JSONL format, and their scorer.

One item a line::

    {"id": "pc-001", "split": "test", "question": "...", "context": "...",
     "answer": 12.0, "decimals": 1}

``answer`` is the change in percent; ``decimals`` the decimals the question asks for (0 to 4).
``split`` is optional (default ``test``). A record that cannot become an item is skipped and
listed with its line and the reason.

Scoring: the prediction must state exactly one number (a percent sign may follow), within half a
unit of the asked decimals of the gold.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.core.numbers import parse_number
from agent.qa.data.extensions import QADataset
from agent.qa.loaders.records import SkippedItem

__all__ = ["load", "score", "DATASET"]

NAME = "pct_change_qa"


def _item(rec: Any) -> QAItem:
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    item_id, question = rec.get("id"), rec.get("question")
    if not isinstance(item_id, str) or not item_id:
        raise ValueError(f"id {item_id!r} is not a non-empty string")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question is missing")
    answer, decimals = rec.get("answer"), rec.get("decimals")
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise ValueError(f"answer {answer!r} is not a number")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 4:
        raise ValueError(f"decimals {decimals!r}; allowed: 0..4")
    q = Question(
        item_id=item_id,
        dataset=NAME,
        text=question,
        context=str(rec.get("context") or ""),
        answer_format=f"a percentage with {decimals} decimals",
    )
    gold = Gold(answer=float(answer), answer_type="number", extra={"decimals": decimals})
    return QAItem(q, gold, str(rec.get("split") or "test"))


def load(path: Path, split: str | None) -> Iterator[QAItem | SkippedItem]:
    """The items of a JSONL file (or of ``items.jsonl`` in a folder)."""
    f = path / "items.jsonl" if path.is_dir() else path
    with f.open(encoding="utf-8") as fh:
        for line, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            rec: Any = None
            try:
                rec = json.loads(text)
                item = _item(rec)
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                rid = rec.get("id") if isinstance(rec, dict) else ""
                yield SkippedItem(str(f), line, str(rid or ""), str(exc))
                continue
            yield item


def score(gold: Gold, prediction: str) -> ItemScore:
    """Right when the prediction's one number is within half a unit of the asked decimals."""
    tol = 0.5 * 10.0 ** -int(gold.extra["decimals"])
    p = parse_number(prediction)
    if p is None:
        return ItemScore(False, 0.0, f"{NAME} rule: no single number in {prediction[:40]!r}")
    ok = abs(float(p.value) - float(gold.answer)) <= tol + 1e-9
    return ItemScore(ok, float(ok), f"{NAME} rule: {p.value} vs gold {gold.answer} (tolerance {tol:g})")


DATASET = QADataset(
    name=NAME,
    load=load,
    score=score,
    scorer_name="percentage change within half a unit of the asked decimals",
    description="percentage-change questions (example plugin)",
)
