"""FinMMR, in two layouts.

**Shared JSONL** (``qa/finmmr_easy_validation.jsonl``, see shared/data/README.md): one item per
line with ``id``, ``split`` (``easy_validation``), ``question``, ``context`` (with ``<image N>``
markers where the benchmark puts them), ``answer`` (a number), ``python_solution``,
``language``, ``grade``, ``orig_source``, ``images`` (a list of paths relative to the folder of
the JSONL file, as a JSON list or as the text of a Python list) and ``images_available``.

**Released repository** (github.com/addictedLL/FinMMR, read at commit d8b12cc): a folder with
``data/validation/{easy,medium,hard}_validation.json`` and ``data/test/{easy,medium,hard}_test.json``
(JSON arrays) and ``images/`` holding every image. Fields used: ``question_id``,
``question``, ``context``, ``ground_truth`` (a number), ``images`` (paths such as
``./MultiFinance/images/1334-1.png``, resolved by file name inside ``images/``),
``ground_images``, ``language``, ``grade``, ``source``, and the solution under
``python_solution`` or ``program``. ``*_cot_prompt.json``/``*_pot_prompt.json`` (remote image
URLs) are not read. The path may be the repository folder (``subset`` picks the difficulty,
``split`` picks ``validation`` or ``test``; default: both) or one of its JSON files.

Splits: ``*_validation`` -> ``validation``, ``*_test`` -> ``test``. Gold: the number, type
``number``; language, grade, source and the solution go to ``extra``. An item whose image
files are missing is skipped (its reason names the first missing file) unless
``require_images=False``. The shared copy has no images for its 33 Chinese items.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agent.qa.answer_format import numeric_format
from agent.qa.datasets import Row, SkippedItem, iter_json_rows
from agent.qa.items import Gold, QAItem, Question
from agent.qa.loaders.common import BadRecord, parse_path_list, skip_of, text_field
from localfin.errors import ConfigError, InputError

__all__ = ["iter_finmmr", "FINMMR_SUBSETS"]

FINMMR_SUBSETS = ("easy", "medium", "hard")


def _split_of(raw: str) -> str:
    raw = raw.lower()
    if raw.endswith("validation"):
        return "validation"
    if raw.endswith("test"):
        return "test"
    raise BadRecord(f"split {raw!r}; expected a name ending in 'validation' or 'test'")


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


def _images(paths: list[str], base: Path, *, by_name: bool, require: bool) -> tuple[str, ...]:
    out: list[str] = []
    for p in paths:
        local = base / Path(p).name if by_name else base / p
        if local.is_file():
            out.append(str(local))
        elif require:
            raise BadRecord(f"image file missing: {local}")
    return tuple(out)


def _item(rec: dict, *, released: bool, base: Path, split_name: str, require_images: bool) -> QAItem:
    item_id = text_field(rec, "question_id" if released else "id")
    question = text_field(rec, "question")
    answer = _gold_number(rec.get("ground_truth", rec.get("answer")) if released else rec.get("answer"))
    image_paths = parse_path_list(rec.get("images"), "images")
    if require_images and rec.get("images_available") is False:
        raise BadRecord("images not available in this copy (images_available=false)")
    images = _images(image_paths, base, by_name=released, require=require_images)
    q = Question(
        item_id=item_id,
        dataset="finmmr",
        text=question,
        context=str(rec.get("context") or "").strip(),
        images=images,
        answer_format=numeric_format(question).describe(),
    )
    solution = rec.get("python_solution") or rec.get("program") or ""
    gold = Gold(
        answer=answer,
        answer_type="number",
        extra={
            "language": rec.get("language", ""),
            "grade": rec.get("grade", ""),
            "source": rec.get("orig_source", rec.get("source", "")),
            "solution": solution,
            "ground_images": parse_path_list(rec.get("ground_images"), "ground_images"),
            "n_images_listed": len(image_paths),
        },
    )
    return QAItem(q, gold, _split_of(split_name))


def _released_files(root: Path, subset: str | None, split: str | None) -> list[Path]:
    if subset is not None and subset not in FINMMR_SUBSETS:
        raise ConfigError(f"subset={subset!r} for finmmr; allowed: {', '.join(FINMMR_SUBSETS)} or None")
    if split not in (None, "validation", "test"):
        raise ConfigError(f"split={split!r} for finmmr; allowed: validation, test or None")
    files = []
    for sp in ("validation", "test") if split is None else (split,):
        for sub in FINMMR_SUBSETS if subset is None else (subset,):
            f = root / "data" / sp / f"{sub}_{sp}.json"
            if f.is_file():
                files.append(f)
    if not files:
        raise InputError(
            f"no FinMMR files under {root / 'data'} for subset={subset or 'any'}, split={split or 'any'} "
            "(expected data/<validation|test>/<easy|medium|hard>_<split>.json)"
        )
    return files


def iter_finmmr(
    path: Path, *, subset: str | None, split: str | None, require_images: bool
) -> Iterator[QAItem | SkippedItem]:
    """Items of a shared JSONL file, a released JSON file, or a released repository folder."""
    if path.is_dir():
        files = _released_files(path, subset, split)
        root = path
    else:
        files = [path]
        root = path.parents[2] if path.suffix.lower() == ".json" else path.parent
    for f in files:
        released = f.suffix.lower() == ".json"
        base = root / "images" if released else f.parent
        for row in iter_json_rows(f):
            if not isinstance(row, Row):
                yield skip_of(row)
                continue
            rec = row.data
            if not isinstance(rec, dict):
                yield skip_of(row, "", f"record is a JSON {type(rec).__name__}, expected an object")
                continue
            split_name = f.stem if released else str(rec.get("split") or "")
            try:
                yield _item(
                    rec, released=released, base=base, split_name=split_name, require_images=require_images
                )
            except (BadRecord, ConfigError) as exc:
                yield skip_of(row, str(rec.get("question_id" if released else "id") or ""), str(exc))
