"""The benchmark files a FinAcumen rehearsal reads: each config's own datasets, in their released
layouts, read by the same loaders as the real run.

For every benchmark folder a config names (``<data root>/benchmarks/<path>``), the rehearsal
builds its own folder of the same layout under ``OUT/qa_data/benchmarks/<path>``:

- **released**: where the data root holds the benchmark's released file for a part the config
  reads (e.g. FinMMR's ``data/validation/easy_validation.json``, TAT-QA's
  ``dataset_raw/tatqa_dataset_dev.json``), that file is linked as it is (and FinMMR's ``images/``
  with it); the run takes its first items.
- **released, re-filed**: where the data root holds the benchmark but not that part (FinMMR's
  test split, its medium and hard files, a TAT-QA split), a few records of a released file are
  written into the missing file of the layout (ids marked ``-standin-``), taken from the end of
  the donor file and never the same records twice, so they do not overlap the released part's
  first items.
- **stand-in**: where the data root has nothing of the benchmark (BizBench, FinTMMBench, FinMME
  on this machine), a small file written in the benchmark's released layout as its loader
  documents it, from its public repository or dataset card: BizBench's two parquet files
  (``question``, ``answer``, ``task``, ``context``, ``context_type``, ``options``, ``program``),
  FinMME's hub parquet with inline image bytes (``id``, ``question_text``, ``question_type``,
  ``answer``, ``options``, ``unit``, ``tolerance``, ``verified_caption``,
  ``related_sentences``, ``knowledge_domain``, ``image``; one choice item in six published
  with empty ``options``, as the official eval keeps such rows), FinTMMBench's ``QA.json``
  (question records with ``uuid``, ``type`` and answers citing corpus rows and
  ``Chart_<TICKER>_<PERIOD>_Kline`` charts; the last record repeats the first one's uuid) with
  the corpus beside it (``data/StockPrice.json``, ``FinancialTable.json``, ``News.json``, rows
  with a lowercase ``uuid`` and News rows whose ``Symbol`` is a list, and
  ``Chart/<TICKER>_<PERIOD>_Kline.png``). A stand-in's answers follow from its own data, so
  each benchmark's scorer (or judge) has something real to grade.

A benchmark that the data root holds and that has no parts to re-file (BizBench, FinMME,
FinTMMBench on a machine that has them) is linked whole. :func:`rehearsal_data` returns the
rehearsal's data root and, per source of the plan, which file it reads and of which kind.
"""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.reproduce.spec import QAPlan, QASource

__all__ = ["KINDS", "SourceFile", "RehearsalData", "rehearsal_data", "HELD_OUT_ITEMS"]

log = logging.getLogger(__name__)

KINDS = ("released", "released, re-filed", "stand-in")
#: items of a stand-in benchmark that ships no split (its 20 % test part is 2, its train part 8)
HELD_OUT_ITEMS = 10
_BIZ_TRAIN = "train-00000-of-00001-300a28d2e31daec3.parquet"
_BIZ_TEST = "test-00000-of-00001-7b139510152259c8.parquet"
_FINMME_FILE = "train-00000-of-00001.parquet"


@dataclass(frozen=True)
class SourceFile:
    """What one source of the plan reads in the rehearsal."""

    label: str
    dataset: str
    kind: str  # one of KINDS
    file: str  # the file (or folder) its items come from
    note: str = ""


@dataclass(frozen=True)
class RehearsalData:
    """The rehearsal's data root and, per source label, the file it reads."""

    root: Path
    files: dict[str, SourceFile] = field(default_factory=dict)


# --------------------------------------------------------------------------- small images
def _png(values: Sequence[float], title: str) -> bytes:
    """A bar chart with its values printed above the bars (so OCR has numbers to read)."""
    from PIL import Image, ImageDraw

    w, h = 320, 200
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    d.text((10, 5), title, fill="black")
    top = max(values) or 1.0
    bw = (w - 40) // max(1, len(values))
    for i, v in enumerate(values):
        x0 = 20 + i * bw
        y0 = h - 20 - int((h - 60) * v / top)
        d.rectangle([x0 + 4, y0, x0 + bw - 4, h - 20], fill=(70, 110, 170))
        d.text((x0 + 6, y0 - 14), f"{v:g}", fill="black")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _link(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_symlink() or dest.exists():
        return
    os.symlink(src.resolve(), dest)


# --------------------------------------------------------------------------- FinMMR
def _finmmr_donors(real: Path) -> list[tuple[Path, list[dict[str, Any]]]]:
    """The released FinMMR files, each with its English records whose images are present."""
    out = []
    for f in sorted((real / "data").glob("*/*.json")):
        if f.name.endswith(("_cot_prompt.json", "_pot_prompt.json")):
            continue
        recs = json.loads(f.read_text(encoding="utf-8"))
        ok = []
        for r in recs if isinstance(recs, list) else []:
            imgs = str(r.get("images") or "")
            names = [x.split("/")[-1].strip("'\" ") for x in imgs.strip("[]").split(",") if x.strip()]
            if r.get("language", "English") == "English" and all(
                (real / "images" / n).is_file() for n in names
            ):
                ok.append(r)
        out.append((f, ok))
    return out


def _finmmr_synthetic(dest: Path, subset: str, split: str, n: int) -> list[dict[str, Any]]:
    (dest / "images").mkdir(parents=True, exist_ok=True)
    recs = []
    for i in range(n):
        a, b = 120 + 7 * i, 100 + 3 * i
        name = f"standin-{subset}-{split}-{i}.png"
        (dest / "images" / name).write_bytes(_png([a, b], "Revenue 2019 vs 2018"))
        recs.append(
            {
                "question": f"By what percentage did revenue grow from 2018 to 2019 (segment {i})?",
                "context": f"Segment {i} revenue (in millions): <image 1>",
                "ground_truth": round(100 * (a - b) / b, 2),
                "question_id": f"{subset}-{split}-standin-{i}",
                "images": f"['./MultiFinance/images/{name}']",
                "grade": subset.capitalize(),
                "language": "English",
                "source": "stand-in",
                "python_solution": f"answer = ({a} - {b}) / {b} * 100",
            }
        )
    return recs


def _finmmr(
    real: Path | None, dest: Path, parts: Iterable[tuple[str, str]], n: int
) -> dict[tuple[str, str], tuple[str, str, str]]:
    """FinMMR's folder; (subset, split) -> (kind, file, note)."""
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    donors = _finmmr_donors(real) if real is not None else []
    taken: dict[Path, int] = {}
    if real is not None and (real / "images").is_dir():
        _link(real / "images", dest / "images")
    for subset, split in sorted(set(parts)):
        name = dest / "data" / split / f"{subset}_{split}.json"
        src = real / "data" / split / f"{subset}_{split}.json" if real is not None else None
        if src is not None and src.is_file():
            _link(src, name)
            out[(subset, split)] = ("released", str(src), "")
            continue
        name.parent.mkdir(parents=True, exist_ok=True)
        pool = sorted(donors, key=lambda d: (subset not in d[0].stem, str(d[0])))
        donor = next((d for d in pool if len(d[1]) - taken.get(d[0], 0) >= n), None)
        if donor is not None:
            f, recs = donor
            end = len(recs) - taken.get(f, 0)
            chosen = recs[end - n : end]
            taken[f] = taken.get(f, 0) + n
            re_filed = [
                dict(r, question_id=f"{r['question_id']}-standin-{subset}-{split}", grade=subset.capitalize())
                for r in chosen
            ]
            name.write_text(json.dumps(re_filed, ensure_ascii=False, indent=1), encoding="utf-8")
            note = (
                f"{n} records of released {f.name} re-filed as {subset} {split} (this copy has no such file)"
            )
            out[(subset, split)] = ("released, re-filed", str(name), note)
        else:
            if real is not None and (dest / "images").is_symlink():
                raise FileExistsError(f"{dest / 'images'} links the released images; no room for stand-ins")
            recs = _finmmr_synthetic(dest, subset, split, n)
            name.write_text(json.dumps(recs, indent=1), encoding="utf-8")
            out[(subset, split)] = ("stand-in", str(name), "written in FinMMR's released layout")
    return out


# --------------------------------------------------------------------------- TAT-QA
def _tatqa_synthetic(split: str, n: int) -> list[dict[str, Any]]:
    docs = []
    for i in range(n):
        a, b = 1450.4 + 11 * i, 1146.2 + 7 * i
        docs.append(
            {
                "table": {
                    "uid": f"standin-table-{split}-{i}",
                    "table": [["", "2019", "2018"], ["Net sales", f"${a:,.1f}", f"${b:,.1f}"]],
                },
                "paragraphs": [{"uid": f"standin-p-{split}-{i}", "order": 1, "text": "Amounts in millions."}],
                "questions": [
                    {
                        "uid": f"standin-q-{split}-{i}",
                        "order": 1,
                        "question": "What was the change in net sales from 2018 to 2019?",
                        "answer": round(a - b, 1),
                        "derivation": f"{a} - {b}",
                        "answer_type": "arithmetic",
                        "answer_from": "table",
                        "rel_paragraphs": [],
                        "req_comparison": False,
                        "scale": "million",
                    }
                ],
            }
        )
    return docs


def _tatqa(real: Path | None, dest: Path, splits: Iterable[str], n: int) -> dict[str, tuple[str, str, str]]:
    out: dict[str, tuple[str, str, str]] = {}
    raw = dest / "dataset_raw"
    raw.mkdir(parents=True, exist_ok=True)
    present = sorted(real.glob("**/tatqa_dataset_*.json")) if real is not None else []
    present = [p for p in present if not p.name.endswith("_test.json")]  # the answerless release
    taken: dict[Path, int] = {}
    for split in sorted(set(splits)):
        name = raw / f"tatqa_dataset_{split}.json"
        src = next((p for p in present if p.name == name.name), None)
        if src is not None:
            _link(src, name)
            out[split] = ("released", str(src), "")
            continue
        if present:
            f = present[0]
            docs = json.loads(f.read_text(encoding="utf-8"))
            end = len(docs) - taken.get(f, 0)
            chosen = docs[max(0, end - n) : end]
            taken[f] = taken.get(f, 0) + n
            for d in chosen:
                for q in d.get("questions", []):
                    q["uid"] = f"{q['uid']}-standin-{split}"
            name.write_text(json.dumps(chosen, ensure_ascii=False, indent=1), encoding="utf-8")
            note = f"{len(chosen)} documents of released {f.name} re-filed as {split}"
            out[split] = ("released, re-filed", str(name), note)
        else:
            name.write_text(json.dumps(_tatqa_synthetic(split, n), indent=1), encoding="utf-8")
            out[split] = ("stand-in", str(name), "written in TAT-QA's released layout")
    return out


# --------------------------------------------------------------------------- BizBench
def _bizbench(dest: Path, n: int) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("question", pa.string()),
            ("answer", pa.string()),
            ("task", pa.string()),
            ("context", pa.string()),
            ("context_type", pa.string()),
            ("options", pa.list_(pa.string())),
            ("program", pa.string()),
        ]
    )

    def rows(split: str) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {k: [] for k in schema.names}
        for i in range(n):
            v, w = 12_345 + 1_000 * i + (0 if split == "train" else 500), 11_020 + 900 * i
            out["question"].append(f"What was total revenue in fiscal 2021 (segment {i}), in thousands?")
            out["answer"].append(str(v))
            out["task"].append("SEC-NUM")
            out["context"].append(
                f"Total revenue for fiscal 2021 was ${v:,} thousand, compared with ${w:,} thousand in fiscal "
                f"2020; operating expenses were ${w // 2:,} thousand."
            )
            out["context_type"].append("text")
            out["options"].append(None)
            out["program"].append(None)
        # one row of another task: the loader's subset keeps SEC-NUM only
        out["question"].append("Write a function that returns the gross margin.")
        out["answer"].append("def f(r, c): return (r - c) / r")
        out["task"].append("FinCode")
        out["context"].append(None)
        out["context_type"].append(None)
        out["options"].append(None)
        out["program"].append("...")
        return out

    (dest / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows("train"), schema=schema), dest / "data" / _BIZ_TRAIN)
    pq.write_table(pa.table(rows("test"), schema=schema), dest / "data" / _BIZ_TEST)
    return str(dest / "data")


# --------------------------------------------------------------------------- FinMME
def _finmme(dest: Path, n: int) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "id", "question_text", "question_type", "answer", "options", "unit", "tolerance",
            "verified_caption", "related_sentences", "knowledge_domain", "image",
        )
    }  # fmt: skip
    for i in range(n):
        a, b, c = 40 + i, 25 + 2 * i, 10 + i
        kind = ("numerical", "single_choice", "multiple_choice")[i % 3]
        bare = i % 6 == 5  # a choice item published without its options (the official eval keeps it)
        if kind == "numerical":
            q, ans, opts, unit, tol = (
                "What is the value of the tallest bar in the chart?",
                str(a),
                "",
                "%",
                0.5,
            )
        elif kind == "single_choice":
            q, ans, unit, tol = "Which quarter shows the highest value in the chart?", "A", "", None
            opts = "A. Q1\nB. Q2\nC. Q3\nD. Q4"
        else:
            q, ans, unit, tol = "Which quarters are above 20 in the chart?", "AB", "", None
            opts = "A. Q1\nB. Q2\nC. Q3\nD. Q4"
        if bare:
            q = f"{q} Options: {opts.replace(chr(10), ' ')}"
        cols["id"].append(1000 + i)
        cols["question_text"].append(q)
        cols["question_type"].append(kind)
        cols["answer"].append(ans)
        cols["options"].append("" if bare else opts)
        cols["unit"].append(unit)
        cols["tolerance"].append(tol)
        cols["verified_caption"].append(f"Bar chart of quarterly growth in percent, panel {i}.")
        cols["related_sentences"].append("Growth slowed after the first quarter.")
        cols["knowledge_domain"].append("TMT")
        cols["image"].append(
            {"bytes": _png([a, b, c, c - 2], f"Growth panel {i}"), "path": f"{1000 + i}.png"}
        )
    (dest / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), dest / "data" / _FINMME_FILE)
    return str(dest / "data" / _FINMME_FILE)


# --------------------------------------------------------------------------- FinTMMBench
_TICKERS = (("AAPL", "Apple Inc."), ("MSFT", "Microsoft Corp"), ("NVDA", "NVIDIA Corp"))
_FINTMM_TYPES = ("StockPrice", "News", "Chart", "FinancialTable")


def _fintmm(dest: Path, n: int) -> str:
    """FinTMMBench's repository layout as released: corpus rows with a lowercase ``uuid``, News
    rows whose ``Symbol`` is a list (two tickers on some), question records with ``uuid``,
    ``type`` and sources citing rows and ``Chart_<TICKER>_<PERIOD>_Kline`` charts, and the last
    record repeating the first one's uuid (the release holds repeated ids)."""
    data = dest / "data"
    (data / "Chart").mkdir(parents=True, exist_ok=True)
    prices, tables, news, questions = [], [], [], []
    for i in range(n):
        sym, name = _TICKERS[i % len(_TICKERS)]
        peer = _TICKERS[(i + 1) % len(_TICKERS)][0]
        day = f"2022-03-{4 + i:02d}"
        close = round(150.0 + 3.5 * i, 2)
        revenue = 90_000_000_000 + 10**9 * i
        week = 10 + i
        prices.append(
            {"uuid": f"sp-{i}", "Company": name, "Symbol": sym, "Date": day, "Interval": "Date",
             "indicator_name": "closePrice", "indicator_value": close, "unit": "USD"}
        )  # fmt: skip
        tables.append(
            {"uuid": f"ft-{i}", "Company": name, "Symbol": sym, "Date": "2022-03-31", "Interval": "Quarter",
             "indicator_name": "totalRevenue", "indicator_value": revenue, "unit": "USD"}
        )  # fmt: skip
        news.append(
            {"uuid": f"n-{i}", "Company": name, "Symbol": [sym, peer] if i % 2 else [sym], "Date": day,
             "type": "News", "Title": f"{name} shares rise after product event",
             "Content": f"{name} shares rose on {day} as investors welcomed new products.",
             "Sentiment": "Positive"}
        )  # fmt: skip
        (data / "Chart" / f"{sym}_2022-W{week}_Kline.png").write_bytes(
            _png([close, close + 2, close - 1], f"{sym} 2022-W{week}")
        )
        kind = _FINTMM_TYPES[i % len(_FINTMM_TYPES)]
        if kind == "StockPrice":
            q, a, src = f"What was {name}'s closing price on {day}?", f"{close} USD", [f"sp-{i}"]
        elif kind == "News":
            q, a, src = f"Did {name}'s news sentiment on {day} lean positive?", "Yes", [f"n-{i}"]
        elif kind == "Chart":
            q = f"What was the highest value in {sym}'s weekly candlestick chart for 2022-W{week}?"
            a, src = f"{close + 2:g}", [f"Chart_{sym}_2022-W{week}_Kline"]
        else:
            q = f"What was {name}'s totalRevenue for the quarter ending 2022-03-31?"
            a, src = f"{revenue} USD", [f"ft-{i}"]
        uuid = f"fintmm-standin-{i}" if i < n - 1 or n < 3 else "fintmm-standin-0"
        questions.append(
            {"uuid": uuid, "type": kind, "question": q,
             "answers": [{"answer": a,
                          "explanation": [{"explanation": "read from the cited record", "equation": ""}],
                          "confidence": 0.9, "source": src}]}
        )  # fmt: skip
    for fname, rows in (("StockPrice.json", prices), ("FinancialTable.json", tables), ("News.json", news)):
        (data / fname).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    (dest / "QA.json").write_text(json.dumps(questions, indent=1), encoding="utf-8")
    return str(dest / "QA.json")


# --------------------------------------------------------------------------- the plan's sources
def _parts(srcs: Sequence[QASource]) -> list[tuple[str, str]]:
    """(subset, split) of every FinMMR source (all three difficulties when none is named)."""
    out = []
    for s in srcs:
        for sub in (s.subset,) if s.subset else ("easy", "medium", "hard"):
            out.append((sub, s.split or "test"))
    return out


def rehearsal_data(plan: QAPlan, data_root: Path | None, out: Path, *, items: int) -> RehearsalData:
    """Write (or link) the files every source of ``plan`` reads, under ``out/qa_data`` (module
    docstring); ``items``: records per re-filed or stand-in part of a benchmark with splits."""
    root = out / "qa_data"
    bench = root / "benchmarks"
    sources = [*(plan.bank if plan.needs_bank else ()), *plan.sets]
    by_path: dict[str, list[QASource]] = {}
    for s in sources:
        by_path.setdefault(s.path, []).append(s)
    files: dict[str, SourceFile] = {}
    for path, srcs in by_path.items():
        dataset = srcs[0].dataset
        real = srcs[0].resolve(data_root) if data_root is not None else None
        real = real if real is not None and real.exists() else None
        dest = bench / path
        if dataset == "finmmr":
            parts = _finmmr(real, dest, _parts(srcs), items)
            for s in srcs:
                kinds = [parts[p] for p in _parts([s])]
                kind = kinds[0][0] if len({k[0] for k in kinds}) == 1 else "mixed"
                note = "; ".join(dict.fromkeys(k[2] for k in kinds if k[2]))
                files[s.label] = SourceFile(s.label, dataset, kind, ", ".join(k[1] for k in kinds), note)
            continue
        if dataset == "tatqa":
            splits = _tatqa(real, dest, [s.split or "test" for s in srcs], items)
            for s in srcs:
                kind, f, note = splits[s.split or "test"]
                files[s.label] = SourceFile(s.label, dataset, kind, f, note)
            continue
        if real is not None:
            _link(real, dest)
            for s in srcs:
                files[s.label] = SourceFile(s.label, dataset, "released", str(real))
            continue
        n = HELD_OUT_ITEMS if any(s.test_share for s in srcs) else max(items, 2)
        writer = {"bizbench": _bizbench, "finmme": _finmme, "fintmmbench": _fintmm}.get(dataset)
        if writer is None:
            raise ValueError(f"no stand-in for dataset {dataset!r} (source {srcs[0].label!r})")
        f = writer(dest, n) if not (dest / ".written").exists() else (dest / ".written").read_text()
        (dest / ".written").write_text(f)
        for s in srcs:
            files[s.label] = SourceFile(
                s.label, dataset, "stand-in", f, f"written in {dataset}'s released layout ({n} items)"
            )
    log.info("rehearsal data under %s: %s", root, {k: v.kind for k, v in files.items()})
    return RehearsalData(root, files)
