"""Benchmark: the OCR visual decoder on the demo set's images and on real FinMMR tables.

``python -m bench.agents.ocr [--threads N] [--finmmr PATH --finmmr-limit N]`` prints JSON lines:

* one line per demo image (bar chart or table): seconds, whether it was read at 2x, and the
  share of the numbers the image prints (``image_truth.json`` of the demo set) that the OCR
  read exactly;
* a summary per image kind (mean and max seconds, exact-read share);
* with ``--finmmr``: for English FinMMR items with images, the numeric literals of the
  expert solution that appear neither in the question nor in the context (so they must come
  from an image; formula constants such as 1, 100, 1000 left out) and the share of them the
  OCR read, equal or as printed in percent or in thousands/millions/billions: a proxy for
  accuracy on real tables (a literal the expert computed rather than read counts as a miss);
* the machine's load average at start and end, so figures taken while other work runs can be
  read as such.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._args import BenchParser, run_main

__all__ = ["HELP", "main", "parser"]

_LITERAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


def _emit(rec: dict[str, Any]) -> None:
    print(json.dumps(rec), flush=True)


def _found(wanted: list[float], read: tuple[float, ...]) -> int:
    pool = list(read)
    hits = 0
    for w in wanted:
        for k, r in enumerate(pool):
            if abs(r - w) <= 1e-9 * max(1.0, abs(w)):
                hits += 1
                pool.pop(k)
                break
    return hits


def _demo(engine: Any, seed: int) -> None:
    from agent.qa.data.demo_set import build_demo_set

    with tempfile.TemporaryDirectory() as tmp:
        out = build_demo_set(Path(tmp), seed=seed)
        truth = json.loads((out / "image_truth.json").read_text())
        per_kind: dict[str, list[dict[str, Any]]] = {}
        for rel, drawn in sorted(truth.items()):
            kind = "chart" if rel.endswith("_chart.png") else "table"
            wanted = [float(d.replace(",", "")) for d in drawn]
            tr = engine.transcribe(out / rel)
            hits = _found(wanted, tr.numbers())
            rec = {
                "bench": "qa_ocr_demo",
                "image": rel,
                "kind": kind,
                "seconds": round(tr.seconds, 3),
                "upscaled": tr.upscaled,
                "n_printed": len(wanted),
                "n_read_exactly": hits,
                "low_confidence_boxes": tr.n_low_confidence,
            }
            per_kind.setdefault(kind, []).append(rec)
            _emit(rec)
        for kind, recs in per_kind.items():
            secs = [r["seconds"] for r in recs]
            _emit(
                {
                    "bench": "qa_ocr_demo_summary",
                    "kind": kind,
                    "images": len(recs),
                    "mean_seconds": round(statistics.fmean(secs), 3),
                    "max_seconds": round(max(secs), 3),
                    "exact_share": round(
                        sum(r["n_read_exactly"] for r in recs) / sum(r["n_printed"] for r in recs), 4
                    ),
                }
            )


_CONSTANTS = {0.0, 1.0, 2.0, 12.0, 100.0, 365.0, 1000.0, 1e6, 1e9}


def _same(read: float, literal: float) -> bool:
    """A literal of the solution matches a number as printed: equal, or printed as a percent
    (8.75 for 0.0875), or printed in thousands/millions/billions (690 for 690000000)."""
    for scale in (1.0, 100.0, 1e-3, 1e-6, 1e-9):
        target = abs(literal) * scale
        if abs(abs(read) - target) <= 1e-9 * max(1.0, target):
            return True
    return False


def _finmmr(engine: Any, path: Path, limit: int) -> None:
    from agent.qa.core.numbers import find_numbers
    from agent.qa.data.datasets import load_items

    items = [it for it in load_items("finmmr", path).items if it.gold.extra.get("language") == "English"]
    wanted_total = hits_total = 0
    secs: list[float] = []
    for it in items[:limit]:
        shown = [n.value for n in find_numbers(it.question.text + "\n" + it.question.context)]
        literals = {float(x) for x in _LITERAL.findall(str(it.gold.extra.get("solution", "")))} - _CONSTANTS
        literals = {w for w in literals if not any(_same(v, w) for v in shown)}
        read: tuple[float, ...] = ()
        for img in it.question.images:
            tr = engine.transcribe(img)
            secs.append(tr.seconds)
            read += tr.numbers()
        hits = sum(any(_same(r, w) for r in read) for w in literals)
        wanted_total += len(literals)
        hits_total += hits
        _emit({"bench": "qa_ocr_finmmr", "item": it.item_id, "literals": len(literals), "read": hits})
    _emit(
        {
            "bench": "qa_ocr_finmmr_summary",
            "items": min(limit, len(items)),
            "images": len(secs),
            "mean_seconds": round(statistics.fmean(secs), 3) if secs else None,
            "max_seconds": round(max(secs), 3) if secs else None,
            "solution_literals": wanted_total,
            "read_share": round(hits_total / wanted_total, 4) if wanted_total else None,
        }
    )


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """The OCR visual decoder on the demo set's images and on real FinMMR tables: seconds per image and the
share of printed numbers read exactly.

One JSON line per demo image (bar chart or table) and a summary per image kind. With --finmmr: for
English FinMMR items with images, the numbers of the expert solution that appear neither in the
question nor in its context (so they come from an image), and the share the OCR read: a proxy for
accuracy on real tables. Each run records how busy the machine was at its start and end.

    localfin bench qa-ocr --threads 2 --finmmr DATA/finmmr_easy_validation.jsonl
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench qa-ocr", description=HELP)
    ap.add_argument("--seed", type=int, default=0, help="demo set seed")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    ap.add_argument("--finmmr", type=Path, default=None, help="FinMMR JSONL (shared layout) to measure on")
    ap.add_argument("--finmmr-limit", type=int, default=30, help="FinMMR items to read")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    from agent.qa.tools.ocr import OcrEngine

    _emit({"bench": "qa_ocr_env", "loadavg_start": os.getloadavg(), "cpus": os.cpu_count()})
    t0 = time.perf_counter()
    engine = OcrEngine(threads=args.threads, cache_size=0)
    _emit({"bench": "qa_ocr_load", "seconds": round(time.perf_counter() - t0, 3), "threads": args.threads})
    _demo(engine, args.seed)
    if args.finmmr is not None:
        _finmmr(engine, args.finmmr, args.finmmr_limit)
    _emit({"bench": "qa_ocr_env", "loadavg_end": os.getloadavg()})
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
