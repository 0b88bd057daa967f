"""FinMME (huggingface.co/datasets/luojunyu/FinMME; evaluation code github.com/luo-junyu/FinMME).

Released layout: one ``train`` split (the authors' ``eval.py`` @ 702cb3a loads
``load_dataset("luojunyu/FinMME", split="train")`` and counts 11,099 rows) stored as parquet
with the image bytes inline. The dataset card and file list were not in any stored copy we
could read, so the file names are not verified: the loader reads every ``*.parquet`` under
``data/`` (the hub's ``data/train-00000-of-0000N*.parquet``) or under the folder given (the
hub's converted ``default/train/0000.parquet``, whose folder names the split), a single
parquet file, or a JSON/JSONL export of the same rows. Fields, as ``eval.py`` reads them:
``question_text``, ``question_type`` (``single_choice``, ``multiple_choice``, ``numerical``),
``answer`` (option letters, or a number), ``options``, ``unit``, ``tolerance`` (absolute
tolerance of a numerical answer), ``verified_caption``, ``related_sentences``,
``knowledge_domain`` and ``image`` (the datasets ``Image`` feature: a ``{bytes, path}`` struct
in parquet; ``bytes`` base64 text in a JSON export); optionally ``id`` (which code built on
the release reads: the FinAcumen authors' adapter names an item ``finmme-<id>``, as we do).
Split: a ``split`` field, else the file or folder name's, else the split asked for, else
``test``. FinMME has no subsets (its dimensions are scored, not selected).

A choice item whose ``options`` is empty is kept, as the official ``eval.py`` keeps it (it adds
the options to the prompt only ``if options:``, and scores the letters either way): its
Question has no options, its answer format is still the option letters (the question type is
a per-item field the benchmark shows every solver), and its gold the letters as usual.

Question: the text; context = the caption and related sentences (the official prompt shows
both); options as ``"A. ..."`` strings; ``answer_format`` includes the published ``unit``. The
image bytes are written once to ``image_cache`` under their SHA-256 (the benchmark folder is
never written to). Gold: letters (sorted, e.g. ``"AC"``) of type ``choice`` or a number of
type ``number`` with ``extra['tolerance']``; ``extra['dimensions']`` names the two FinMME
dimensions the item counts in (see :data:`FINMME_DIMENSIONS`); the answer text, tolerance and
whether it has options, as released, go to ``extra`` for the official and the authors' scorers
(``answer_text``, ``tolerance_published``, ``has_options``).

FinMME's Avg (FinAcumen's Table 1) is the mean accuracy over six dimensions: three cognitive
ones (comprehensive perception ``compre``, fine-grained perception ``fg``, cognition and
reasoning ``reason``) and three question types (single choice ``single``, multiple choice
``multi``, calculation ``cal``). The question type is a field. The released rows carry no
cognitive label (the FinAcumen authors reconstructed one and did not publish the rule), so
unless a row has a ``cognitive_dimension`` field we assign one from the question text:
``reason`` when it asks to infer, predict or explain (why, predict, forecast, expect, likely,
infer, implication, impact, cause, suggest, indicate, outlook); else ``compre`` when it asks
about the whole chart or several periods (trend, overall, throughout, across, pattern,
compared with, over the period, consecutive, cumulative, all charts); else ``fg`` (reading
one value or a local change). Our rule, documented, not the paper's: FinMME Avg figures from
it are not comparable digit-for-digit with the paper's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.qa.core.answer_format import AnswerFormat, numeric_format
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.core.numbers import parse_number
from agent.qa.loaders.common import item_split, text_field
from agent.qa.loaders.records import (
    BadRecord,
    Produced,
    Row,
    each_record,
    iter_json_rows,
    parquet_rows,
    whole_file,
)
from localfin.errors import InputError

__all__ = ["iter_finmme", "FINMME_DIMENSIONS", "finmme_cognitive_dimension"]

#: The six FinMME dimensions, in the order of FinAcumen's Avg formula.
FINMME_DIMENSIONS = ("compre", "fg", "reason", "single", "multi", "cal")
_QTYPE_DIM = {"single_choice": "single", "multiple_choice": "multi", "numerical": "cal"}
_REASON = re.compile(
    r"\b(why|predict\w*|forecast\w*|expect\w*|likely|infer\w*|implication\w*|impact\w*|caus\w*|"
    r"suggest\w*|indicat\w*|outlook)\b",
    re.I,
)
_COMPRE = re.compile(
    r"\b(trends?|overall|throughout|across|patterns?|compared (?:to|with)|over the (?:period|years|past)|"
    r"consecutive|cumulative|all (?:the )?charts?|entire)\b",
    re.I,
)
_MAGIC = ((b"\x89PNG", ".png"), (b"\xff\xd8", ".jpg"), (b"GIF8", ".gif"), (b"RIFF", ".webp"))
_OPTION_MARK = re.compile(r"(?:^|\s)([A-N])[.):：]\s*")


def finmme_cognitive_dimension(question: str) -> str:
    """``reason``, ``compre`` or ``fg`` for a question text (the rule in the module docstring)."""
    if _REASON.search(question):
        return "reason"
    if _COMPRE.search(question):
        return "compre"
    return "fg"


def _options(raw: Any) -> tuple[str, ...]:
    if raw is None or raw == "" or raw == []:
        return ()
    if isinstance(raw, dict):
        return tuple(f"{k}. {v}" for k, v in sorted(raw.items()))
    if isinstance(raw, (list, tuple)):
        opts = [str(o).strip() for o in raw if str(o).strip()]
        if opts and not _OPTION_MARK.match(opts[0]):
            opts = [f"{chr(ord('A') + i)}. {o}" for i, o in enumerate(opts)]
        return tuple(opts)
    text = str(raw).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 2:
        return tuple(lines)
    marks = list(_OPTION_MARK.finditer(text))
    if len(marks) >= 2:
        cuts = [m.start(1) for m in marks] + [len(text)]
        return tuple(text[a:b].strip().rstrip(",;") for a, b in zip(cuts, cuts[1:]))
    return (text,)


def _image(raw: Any, cache: Path) -> tuple[str, ...]:
    if raw is None:
        return ()
    data = raw.get("bytes") if isinstance(raw, dict) else raw
    if isinstance(data, str):
        try:
            data = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise BadRecord("image bytes are not valid base64") from None
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise BadRecord("image has no bytes")
    ext = next((e for magic, e in _MAGIC if data.startswith(magic)), None)
    if ext is None:
        raise BadRecord("image bytes are not PNG, JPEG, GIF or WebP")
    out = cache / f"{hashlib.sha256(data).hexdigest()[:24]}{ext}"
    if not out.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_bytes(bytes(data))
        tmp.replace(out)
    return (str(out),)


def _item(rec: dict[str, Any], pos: int, split: str, cache: Path) -> QAItem:
    item_id = f"finmme-{rec['id']}" if rec.get("id") not in (None, "") else f"finmme-{split}-{pos}"
    question = text_field(rec, "question_text")
    qtype = text_field(rec, "question_type")
    if qtype not in _QTYPE_DIM:
        raise BadRecord(f"question_type {qtype!r}; allowed: {', '.join(_QTYPE_DIM)}")
    unit = str(rec.get("unit") or "").strip()
    options = _options(rec.get("options")) if qtype != "numerical" else ()
    raw_answer = text_field(rec, "answer")
    extra: dict[str, Any] = {
        "question_type": qtype,
        "knowledge_domain": rec.get("knowledge_domain", ""),
        # as released, for the official and the authors' scorers
        "answer_text": raw_answer,
        "tolerance_published": rec.get("tolerance"),
        "has_options": bool(_options(rec.get("options"))),
    }
    if qtype == "numerical":
        number = parse_number(raw_answer)
        if number is None:
            raise BadRecord(f"answer {raw_answer!r} of a numerical item does not read as a number")
        try:
            extra["tolerance"] = float(rec.get("tolerance") or 0.0)
        except (TypeError, ValueError):
            raise BadRecord(f"tolerance {rec.get('tolerance')!r} is not a number") from None
        answer: Any = number.value
        answer_type = "number"
    else:
        letters = sorted({c for c in raw_answer.upper() if "A" <= c <= "N"})
        if not letters:
            raise BadRecord(f"answer {raw_answer!r} of a choice item names no option letter")
        answer, answer_type = "".join(letters), "choice"
    cognitive = str(rec.get("cognitive_dimension") or "") or finmme_cognitive_dimension(question)
    if cognitive not in FINMME_DIMENSIONS[:3]:
        raise BadRecord(f"cognitive_dimension {cognitive!r}; allowed: compre, fg, reason")
    extra["dimensions"] = (cognitive, _QTYPE_DIM[qtype])
    caption = str(rec.get("verified_caption") or "").strip()
    related = str(rec.get("related_sentences") or "").strip()
    context = "\n".join(
        x for x in (f"Caption: {caption}" if caption else "", f"Related: {related}" if related else "") if x
    )
    q = Question(
        item_id=item_id,
        dataset="finmme",
        text=question,
        context=context,
        images=_image(rec.get("image"), cache),
        options=options,
        answer_format=(
            numeric_format(question, unit=unit)
            if qtype == "numerical"
            else AnswerFormat("choice", n_options=len(options))
        ).describe(),
    )
    return QAItem(q, Gold(answer=answer, answer_type=answer_type, extra=extra), split)


def iter_finmme(path: Path, *, split: str | None, image_cache: str | Path | None) -> Iterator[Produced]:
    """Items of the FinMME parquet (or JSON/JSONL) files under ``path``, or of one file."""
    from localfin.env import localfin_home

    cache = Path(image_cache) if image_cache is not None else localfin_home() / "qa_images" / "finmme"
    if path.is_file():
        files = [path]
    else:
        data = path / "data" if (path / "data").is_dir() else path
        files = (
            sorted(data.glob("*.parquet"))
            or sorted(data.glob("*/*.parquet"))
            or sorted([*data.glob("*.jsonl"), *data.glob("*.json")])
        )
        if not files:
            raise InputError(f"no FinMME files under {data} (expected data/*.parquet)")
    for f in files:

        def make(row: Row, rec: dict[str, Any], f: Path = f) -> Iterator[Produced]:
            try:
                yield _item(rec, row.line, item_split(rec.get("split"), f, split, "test"), cache)
            except OSError as exc:  # the image cache could not be written
                raise BadRecord(f"image not cached: {exc}") from None

        rows = parquet_rows(f) if f.suffix == ".parquet" else iter_json_rows(f)
        yield from whole_file(f, each_record(rows, make, lambda rec: str(rec.get("id") or "")))
