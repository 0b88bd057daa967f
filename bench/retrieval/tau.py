"""Measurement: what FinAcumen's tau = 0.65 means for our embedder (MiniLM-L6-v2, 384-d).

The paper's threshold was set on its own embedder's similarities; ours differ. This reads real
questions (TAT-QA dev as released, ``tatqa_dataset_dev.json`` of the authors' ``dataset_raw``
folder, by default under ``$LOCALFIN_DATA_DIR/benchmarks/tatqa/``: 1,668 questions over 278
documents), embeds each as the bank does (the
question, a newline and the first 600 context characters; and the question alone, for
comparison) with the real :class:`bank.embedder.MiniLMEmbedder`, and prints JSON lines:

* the distribution (percentiles, share >= 0.65) of question-to-question cosines over all pairs,
  split into pairs of the same document (which share their context head) and of different
  documents;
* each question's best match among the other documents' questions (a bank that holds nothing of
  its own document, as our builder leaves out items sharing a context with the test items):
  percentiles, and the hit rate (share of questions with a match >= tau) for tau 0.50..0.90;
* a document split (bank = the questions of every other document, queries = the rest): hit rate
  H and mean entries per query E (every entry above tau, one per source) for each tau;
* the load average at start and end.

``python -m bench.retrieval.tau [--data PATH] [--threads N]``
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bench._args import BenchParser, run_main

__all__ = ["HELP", "main", "parser"]

_TAUS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
_PCT = (1, 5, 25, 50, 75, 95, 99)
_DEFAULT_NAME = "tatqa_dataset_dev.json"


def _default_data() -> Path:
    """The released TAT-QA dev file under the data folder (``$LOCALFIN_DATA_DIR``)."""
    from localfin import env

    return env.data_dir() / "benchmarks" / "tatqa" / _DEFAULT_NAME


def _emit(rec: dict[str, Any]) -> None:
    print(json.dumps(rec), flush=True)


def _dist(x: np.ndarray) -> dict[str, Any]:
    return {
        "n": int(x.size),
        "mean": round(float(x.mean()), 4),
        **{f"p{p}": round(float(np.percentile(x, p)), 4) for p in _PCT},
        "share_ge_0.65": round(float((x >= 0.65).mean()), 4),
    }


def _measure(vecs: np.ndarray, docs: np.ndarray, form: str) -> None:
    sims = vecs.astype(np.float64) @ vecs.astype(np.float64).T
    iu = np.triu_indices(len(vecs), k=1)
    pair = sims[iu]
    same = docs[iu[0]] == docs[iu[1]]
    _emit({"bench": "qa_tau", "form": form, "pairs": "all", **_dist(pair)})
    _emit({"bench": "qa_tau", "form": form, "pairs": "same document", **_dist(pair[same])})
    _emit({"bench": "qa_tau", "form": form, "pairs": "different documents", **_dist(pair[~same])})
    other = np.where(docs[:, None] == docs[None, :], -np.inf, sims)
    best = other.max(axis=1)
    hits = {f"{t:.2f}": round(float((best >= t).mean()), 4) for t in _TAUS}
    _emit({"bench": "qa_tau", "form": form, "best_other_document": _dist(best), "hit_rate": hits})
    uniq = np.unique(docs)
    bank_docs = set(uniq[::2].tolist())
    in_bank = np.array([d in bank_docs for d in docs])
    cross = sims[np.ix_(~in_bank, in_bank)]
    split = {
        f"{t:.2f}": {"H": round(float((cross >= t).any(axis=1).mean()), 4),
                     "E": round(float((cross >= t).sum(axis=1).mean()), 2)}
        for t in _TAUS
    }  # fmt: skip
    sizes = {"bank": int(in_bank.sum()), "queries": int((~in_bank).sum())}
    _emit({"bench": "qa_tau", "form": form, "split": sizes, "by_tau": split})


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """What FinAcumen's similarity threshold tau = 0.65 means for our embedder (MiniLM-L6-v2), on TAT-QA's
released dev questions.

Embeds every question as the bank does and prints, as JSON lines: the distribution of
question-to-question similarities (pairs of the same document and of different documents), each
question's best match among other documents' questions with the hit rate for tau from 0.50 to 0.90,
and a document split's hit rate and entries per query for each tau. No timing is reported.

    localfin bench qa-tau --data DATA/tatqa_dataset_dev.json
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench qa-tau", description=HELP)
    ap.add_argument(
        "--data",
        type=Path,
        default=None,
        help="TAT-QA dataset_raw file (released layout; default: "
        "$LOCALFIN_DATA_DIR/benchmarks/tatqa/tatqa_dataset_dev.json)",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the embedder")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    from agent.qa.data.datasets import load_items
    from bank.embedder import MiniLMEmbedder
    from bank.schema import query_text

    _emit({"bench": "qa_tau_env", "loadavg_start": os.getloadavg(), "cpus": os.cpu_count()})
    if args.data is None:
        args.data = _default_data()
    items = load_items("tatqa", args.data).items
    docs = {c: i for i, c in enumerate(dict.fromkeys(it.question.context for it in items))}
    doc = np.asarray([docs[it.question.context] for it in items])
    emb = MiniLMEmbedder(threads=args.threads)
    _emit({"bench": "qa_tau", "data": str(args.data), "questions": len(items), "documents": len(docs),
           "embedder": emb.model_id, "dim": emb.dim})  # fmt: skip
    for form, texts in (
        ("question + 600 context chars", [query_text(it.question.text, it.question.context) for it in items]),
        ("question only", [it.question.text for it in items]),
    ):
        _measure(emb.embed(texts), doc, form)
    _emit({"bench": "qa_tau_env", "loadavg_end": os.getloadavg()})
    return 0


if __name__ == "__main__":
    run_main(main)
