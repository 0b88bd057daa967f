"""FinMMR (github.com/addictedLL/FinMMR, read at commit d8b12cc), in two layouts.

**Released repository**: a folder with ``data/validation/{easy,medium,hard}_validation.json``
and ``data/test/{easy,medium,hard}_test.json`` (JSON arrays) and ``images/`` holding every
image. Fields used: ``question_id``, ``question``, ``context`` (``<image N>`` where an image
belongs), ``ground_truth`` (a number), ``images`` (a list, or the text of a Python list, of
paths such as ``./MultiFinance/images/1334-1.png``: the file of that name under ``images/``),
``ground_images``, ``language``, ``grade``, ``source``, and the solution under
``python_solution`` or ``program``. ``*_cot_prompt.json``/``*_pot_prompt.json`` (remote image
URLs) are not read. The path may be the repository folder (``subset`` picks the difficulty,
``split`` picks ``validation`` or ``test``; default: all six files) or one of its JSON files
(``images/`` is looked for beside it and up to two folders above).

**JSONL export** (e.g. ``finmmr_easy_validation.jsonl``, one reshaped split): one item per
line with ``id``, ``split`` (``easy_validation``), ``question``, ``context``, ``answer``,
``python_solution``, ``language``, ``grade``, ``orig_source``, ``images`` (paths relative to the
folder of the JSONL file) and ``images_available``.

Split and subset: a record's ``split`` may hold the split, the difficulty or both
(``easy_validation``, ``medium``, ``test``): the difficulty word is the subset and the rest the
split. Missing parts come from the file name (``medium_test.json``), then (subset only) the
``grade`` field, then the split asked for; default split ``test``.

Images: an item that lists no image loads without one. An item whose listed image files are
missing from this copy (the shared copies hold no images for their Chinese items) is skipped,
the reason naming the first missing file, unless ``require_images=False``: then it loads with
the files that exist, and an :class:`~agent.qa.loaders.records.IncompleteItem` says which are
missing. (Skipping is the default because a question about an image nobody can see is not the
benchmark's question; keeping is for scoring-only uses such as gold-vs-gold checks.)

Gold: the number, type ``number``; language, grade, source and the solution go to ``extra``.
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
from localfin.errors import InputError

__all__ = ["iter_finmmr", "FINMMR_SUBSETS"]

FINMMR_SUBSETS = ("easy", "medium", "hard")


def _gold_number(value: object) -> float | int:
    if isinstance(value, bool):
        raise BadRecord(f"answer {value!r} is a boolean; expected a number")
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise BadRecord(f"answer {value!r} is not a number") from None
        return int(number) if number.is_integer() and "." not in value else number
    raise BadRecord(f"answer is {type(value).__name__}; expected a number")


def _difficulty(text: str) -> str | None:
    words = text.lower().replace("-", "_").split("_")
    return next((w for w in words if w in FINMMR_SUBSETS), None)


def _split_and_subset(rec: dict[str, Any], f: Path, asked: str | None) -> tuple[str, str]:
    own = str(rec.get("split") or "").strip()
    subset = _difficulty(own) or _difficulty(f.stem) or _difficulty(str(rec.get("grade") or "")) or ""
    rest = "_".join(w for w in own.replace("-", "_").split("_") if w and w.lower() not in FINMMR_SUBSETS)
    return item_split(rest, f, asked, "test"), subset


def _images(
    paths: list[str], base: Path | None, *, by_name: bool, require: bool
) -> tuple[tuple[str, ...], list[str]]:
    found: list[str] = []
    missing: list[str] = []
    for p in paths:
        local = None if base is None else (base / Path(p).name if by_name else base / p)
        if local is not None and local.is_file():
            found.append(str(local))
            continue
        missing.append(str(local) if local is not None else p)
        if require:
            raise BadRecord(f"image file missing: {missing[0]}")
    return tuple(found), missing


def _item(
    row: Row, rec: dict[str, Any], *, released: bool, base: Path | None, asked: str | None, require: bool
) -> Iterator[Produced]:
    item_id = text_field(rec, "question_id" if released else "id")
    question = text_field(rec, "question")
    raw = rec.get("ground_truth", rec.get("answer")) if released else rec.get("answer")
    answer = _gold_number(raw)
    image_paths = parse_path_list(rec.get("images"), "images")
    images, missing = _images(image_paths, base, by_name=released, require=require)
    split, subset = _split_and_subset(rec, row.path, asked)
    q = Question(
        item_id=item_id,
        dataset="finmmr",
        text=question,
        context=str(rec.get("context") or "").strip(),
        images=images,
        answer_format=numeric_format(question).describe(),
    )
    gold = Gold(
        answer=answer,
        answer_type="number",
        extra={
            "language": rec.get("language", ""),
            "grade": rec.get("grade", ""),
            "source": rec.get("orig_source", rec.get("source", "")),
            "solution": rec.get("python_solution") or rec.get("program") or "",
            "ground_images": parse_path_list(rec.get("ground_images"), "ground_images"),
            "n_images_listed": len(image_paths),
        },
    )
    if missing:
        yield IncompleteItem(
            str(row.path),
            row.line,
            item_id,
            f"image file missing: {missing[0]} ({len(missing)} of {len(image_paths)})",
        )
    yield QAItem(q, gold, split, subset)


def _released_files(root: Path, subset: str | None, split: str | None) -> list[Path]:
    data = root / "data"
    splits = sorted(p.name for p in data.iterdir() if p.is_dir()) if data.is_dir() else []
    files = [
        data / sp / f"{sub}_{sp}.json"
        for sp in (splits if split is None else [split])
        for sub in (FINMMR_SUBSETS if subset is None else (subset,))
        if (data / sp / f"{sub}_{sp}.json").is_file()
    ]
    if not files:
        raise InputError(
            f"no FinMMR files under {data} for subset={subset or 'any'}, split={split or 'any'} "
            "(expected data/<split>/<easy|medium|hard>_<split>.json; "
            f"splits there: {', '.join(splits) or 'none'})"
        )
    return files


def _images_dir(f: Path) -> Path | None:
    return next((d / "images" for d in f.parents[:3] if (d / "images").is_dir()), None)


def iter_finmmr(
    path: Path, *, subset: str | None, split: str | None, require_images: bool
) -> Iterator[Produced]:
    """Items of a shared JSONL file, a released JSON file, or a released repository folder."""
    files = _released_files(path, subset, split) if path.is_dir() else [path]
    for f in files:
        released = f.suffix.lower() == ".json"
        base = _images_dir(f) if released else f.parent

        def make(row: Row, rec: dict[str, Any], released: bool = released, base: Path | None = base):
            return _item(row, rec, released=released, base=base, asked=split, require=require_images)

        key = "question_id" if released else "id"
        yield from whole_file(
            f, each_record(iter_json_rows(f), make, lambda rec, key=key: str(rec.get(key) or ""))
        )
