"""Pre-flight check of a reproduction config: which data and which model folders are present,
before anything runs. Every item is one :class:`CheckItem`; a missing one carries the command
(or the step) that fixes it.

Moira: the market store, each pool ticker's prices over every window (training start to test
end), the history the causal screen needs before the first selection date, the store's
session counts against the paper's, news and company context of the pool, and the weights of
every backbone. FinAcumen: every benchmark file or folder (bank sources and evaluation sets)
and its scorer (a few items of each benchmark part loaded with its loader, their gold answers
scored by the part's own rule, which must call them correct; a judged benchmark needs its judge
model), and,
where anything runs the tools (Base+FT, Base+FT+FM or the bank build), each tool's needs: the
Python tool's sandbox (started once and run on ``1 + 1``; a tools variant without it fails, with
the fix), the lookup tool's market store, OCR for reparse, FinTMMBench's corpus for retrieve;
then the model's weights. Then, for every config, its **placement** on the GPUs
(:func:`agent.reproduce.engine_plan.place` on the visible GPUs, or on a declared inventory: ``check
CONFIG --gpus N --gpu KIND``): one item, missing when an engine cannot be placed, with what
would place it (more GPUs, FP8 weights, a larger share); and on the CUDA build of vLLM the
NVIDIA driver and what triton and hnswlib build with (C and C++ compilers, the Python headers:
:mod:`serving.hardware.gpu_install`). Nothing here writes
data or starts an engine (the sandbox probe starts one bubblewrap worker and ends it).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.data.store import MarketStore
from agent.qa import sandbox
from agent.qa.sandbox.launch import INSTALL_HINT
from agent.qa.solver.toolset import CORPUS_DATASETS
from agent.qa.tools.corpus import CORPUS_FILES, corpus_root
from agent.reproduce import engine_plan as placing
from agent.reproduce.engine_plan import Placement
from agent.reproduce.spec import ReproConfig
from localfin import env
from serving.hardware.gpu_install import gpu_pieces
from serving.hardware.gpus import Inventory, engine_platform, visible_inventory
from serving.models.registry import Registry
from serving.open import registry_with, weights_status

__all__ = [
    "STATUSES",
    "OCR_FIX",
    "CheckItem",
    "check_config",
    "placement_item",
    "install_items",
    "format_items",
    "store_path_of",
]

log = logging.getLogger(__name__)

STATUSES = ("ok", "warn", "missing")
#: items per benchmark source whose gold answers ``--check`` scores (the scorer probe)
SCORER_PROBE_ITEMS = 3
#: How the OCR package is installed, per vLLM build (it declares opencv-python, which would
#: replace the headless OpenCV both builds of vLLM use, so it goes in without its dependencies).
OCR_FIX = {
    "cpu": "make install (installs rapidocr-onnxruntime 1.4.4 --no-deps)",
    "cuda": "pip install --no-deps rapidocr-onnxruntime==1.4.4 (make install-gpu does it)",
}
_LOADER_DOC = {
    "bizbench": "agent/qa/loaders/bizbench.py (data/train-*.parquet, data/test-*.parquet)",
    "finmmr": "agent/qa/loaders/finmmr.py (data/{validation,test}/*.json + images/)",
    "fintmmbench": "agent/qa/loaders/fintmm.py (QA.json + data/)",
    "finmme": "agent/qa/loaders/finmme.py (data/*.parquet)",
    "tatqa": "agent/qa/loaders/tatqa.py",
    "demo": "agent/qa/loaders/demo.py",
}


@dataclass(frozen=True)
class CheckItem:
    """One thing a config needs: ``status`` ok / warn (runs, but differs from the paper) /
    missing (the run cannot start); ``fix`` says how to get it."""

    config: str
    status: str
    what: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        head = f"{self.status.upper():<7} {self.config}: {self.what}: {self.detail}"
        return head + (f"; fix: {self.fix}" if self.fix else "")


def store_path_of(cfg: ReproConfig) -> Path:
    """The market store a Moira config uses (``experiment.store``, else ``$LOCALFIN_STORE``)."""

    raw = cfg.document.get("experiment", {}).get("store")
    return Path(raw).expanduser() if raw else env.default_store_path()


def _models(cfg: ReproConfig, registry: Registry | None) -> list[CheckItem]:
    out = []
    seen: set[Path | None] = set()
    for key in cfg.model_keys:
        w = weights_status(key, registry)
        if w.where in seen:
            continue
        seen.add(w.where)
        if w.path is not None:
            out.append(CheckItem(cfg.name, "ok", f"model {key}", f"weights at {w.path}"))
        else:
            out.append(CheckItem(cfg.name, "missing", f"model {key}", f"no config.json in {w.where}", w.fix))
    return out


def _moira(cfg: ReproConfig) -> list[CheckItem]:

    path = store_path_of(cfg)
    imp = f"localfin data import --herculean <Herculean folder> --store {path}"
    if not path.exists():
        return [CheckItem(cfg.name, "missing", "market store", f"no store at {path}", imp)]
    out = [CheckItem(cfg.name, "ok", "market store", str(path))]
    first = min(w.train_start for w in cfg.windows)
    last = max(w.test_end for w in cfg.windows)
    screen = cfg.document.get("screen", {})
    lookback = int(screen.get("lookback", 2520))
    min_sessions = int(screen.get("min_sessions", 252))
    with MarketStore(path, create=False) as store:
        info = {t.ticker: t for t in store.info().tickers}
        companies = store.companies(cfg.pool)
        for t in cfg.pool:
            ti = info.get(t)
            if ti is None:
                out.append(CheckItem(cfg.name, "missing", f"prices {t}", "ticker not in the store", imp))
                continue
            if ti.first > first or ti.last < last:
                out.append(
                    CheckItem(
                        cfg.name,
                        "missing",
                        f"prices {t}",
                        f"store covers {ti.first}..{ti.last}; the windows need {first}..{last}",
                        imp,
                    )
                )
            else:
                out.append(CheckItem(cfg.name, "ok", f"prices {t}", f"{ti.first}..{ti.last}"))
        pool = [t for t in cfg.pool if t in info]
        if pool:
            before = len(store.calendar(None, first - dt.timedelta(days=1), pool))
            fix_hist = (
                "import a longer daily price history of the pool into the same store "
                f"(localfin data import --prices <long prices CSV> --store {path})"
            )
            detail = f"{before} sessions before {first}; the causal screen uses {lookback}"
            if before < min_sessions:
                out.append(
                    CheckItem(
                        cfg.name,
                        "missing",
                        "screen history",
                        detail + f" and needs at least {min_sessions}",
                        fix_hist,
                    )
                )
            elif before < lookback:
                out.append(CheckItem(cfg.name, "warn", "screen history", detail + " (shorter)", fix_hist))
            else:
                out.append(CheckItem(cfg.name, "ok", "screen history", detail))
            for w in cfg.windows:
                n_tr = len(store.calendar(w.train_start, w.train_end, pool))
                n_te = len(store.calendar(w.test_start, w.test_end, pool))
                want = (w.paper_train_sessions, w.paper_test_sessions)
                status = "ok" if (n_tr, n_te) == want else "warn"
                out.append(
                    CheckItem(
                        cfg.name,
                        status,
                        f"sessions {w.name}",
                        f"store has {n_tr} train / {n_te} test; the paper states {want[0]} / {want[1]}",
                    )
                )
            news = sum(len(store.news_window(t, first, last)) for t in pool)
            if news == 0:
                out.append(
                    CheckItem(cfg.name, "missing", "news", f"no news for the pool in {first}..{last}", imp)
                )
            else:
                out.append(CheckItem(cfg.name, "ok", "news", f"{news} items for the pool in {first}..{last}"))
        absent = [t for t in cfg.pool if t not in companies]
        if absent:
            out.append(
                CheckItem(
                    cfg.name,
                    "missing",
                    "company context",
                    f"no company rows for {', '.join(absent)}",
                    f"localfin data import --companies <companies CSV> --store {path}",
                )
            )
        else:
            out.append(CheckItem(cfg.name, "ok", "company context", f"{len(cfg.pool)} companies"))
    return out


def _sandbox(name: str) -> CheckItem:
    try:
        facts = sandbox.probe()
    except sandbox.SandboxUnavailable as exc:
        detail = str(exc).split("; install bubblewrap")[0]
        return CheckItem(
            name,
            "missing",
            "tool python (sandbox)",
            f"the sandbox cannot start, so the Python tool would refuse every call: {detail}",
            f"{INSTALL_HINT}; then rerun --check",
        )
    return CheckItem(
        name, "ok", "tool python (sandbox)", f"bubblewrap worker starts (uid {facts.get('uid', '?')})"
    )


def _tools(cfg: ReproConfig, data_root: Path) -> list[CheckItem]:
    """What the plan's tools need, where anything runs them (with arms: what any arm's tools
    need)."""
    from dataclasses import replace

    assert cfg.qa is not None
    plans = [ap for _, ap in cfg.qa_arms()]
    tools = tuple(dict.fromkeys(t for ap in plans for t in ap.tools))
    store = next((ap.store for ap in plans if "lookup" in ap.tools), cfg.qa.store)
    p = replace(plans[0], tools=tools, store=store) if len(plans) > 1 else plans[0]
    if not p.needs_tools:
        return []
    out = []
    if "python" in p.tools:
        out.append(_sandbox(cfg.name))
    store = p.store_path(data_root)
    if store is not None:
        if store.exists():
            out.append(CheckItem(cfg.name, "ok", "tool lookup (market store)", str(store)))
        else:
            out.append(
                CheckItem(
                    cfg.name,
                    "missing",
                    "tool lookup (market store)",
                    f"no store at {store}",
                    f"localfin data import --prices <daily prices CSV> --store {store}",
                )
            )
    if "reparse" in p.tools and p.loop != "authors":  # their loop's OCR is the served model's
        if importlib.util.find_spec("rapidocr_onnxruntime") is None:
            out.append(
                CheckItem(
                    cfg.name, "missing", "tool reparse (OCR)", "rapidocr_onnxruntime is not installed",
                    OCR_FIX[engine_platform()],
                )
            )  # fmt: skip
        else:
            out.append(CheckItem(cfg.name, "ok", "tool reparse (OCR)", "rapidocr_onnxruntime installed"))
    srcs = [s for s in (*p.sets, *(p.bank if p.needs_bank else ())) if s.dataset in CORPUS_DATASETS]
    if "retrieve" in p.tools and srcs:
        root = corpus_root(srcs[0].resolve(data_root))
        files = [n for n, _ in CORPUS_FILES if (root / n).is_file()] + (
            ["Chart/"] if (root / "Chart").is_dir() else []
        )
        want = ", ".join([n for n, _ in CORPUS_FILES] + ["Chart/"])
        if files:
            status = "ok" if len(files) == len(CORPUS_FILES) + 1 else "warn"
            out.append(
                CheckItem(
                    cfg.name,
                    status,
                    "tool retrieve (FinTMMBench corpus)",
                    f"{root}: {', '.join(files)} (of {want})",
                )
            )
        else:
            out.append(
                CheckItem(
                    cfg.name,
                    "missing",
                    "tool retrieve (FinTMMBench corpus)",
                    f"no corpus at {root}",
                    f"put the released FinTMMBench data/ folder ({want}) beside QA.json",
                )
            )
    return out


def _scorer(cfg: ReproConfig, src: Any, path: Path) -> CheckItem:
    """Whether ``src``'s scorer runs: its first items' gold answers score correct (judged: a
    judge model is named). Loads at most :data:`SCORER_PROBE_ITEMS` items."""
    from agent.qa.data.datasets import load_items
    from agent.qa.evaluation.bank_build import check_scorers
    from agent.qa.scoring.scorers import NamedScorer
    from localfin.errors import LocalfinError

    assert cfg.qa is not None
    what = f"scorer {src.label}"
    try:
        loaded = load_items(src.dataset, path, subset=src.subset, limit=SCORER_PROBE_ITEMS)
        labels = check_scorers(loaded.items, NamedScorer(cfg.qa.scorer), cfg.qa.judge, cfg.qa.extractor)
    except LocalfinError as exc:
        fix = "fix the data or the config's dataset/subset (the scorer must run before any model call)"
        return CheckItem(cfg.name, "missing", what, str(exc)[:300], fix)
    name = ", ".join(sorted(set(labels.values())))
    spec = cfg.qa.scorer_of(src.dataset)
    if spec.rule is None:
        return CheckItem(cfg.name, "ok", what, f"{name}: {len(loaded.items)} items load, judged")
    return CheckItem(cfg.name, "ok", what, f"{name}: gold answers of {len(loaded.items)} items score correct")


def _qa(cfg: ReproConfig, data_root: Path) -> list[CheckItem]:
    assert cfg.qa is not None
    out = []
    seen: set[Path] = set()
    probed: set[tuple[str, Path, str | None]] = set()
    sources = [*(cfg.qa.bank if cfg.qa.needs_bank else ()), *cfg.qa.sets]
    for s in sources:
        p = s.resolve(data_root)
        if p.exists() and (s.dataset, p, s.subset) not in probed:
            probed.add((s.dataset, p, s.subset))
            out.append(_scorer(cfg, s, p))
        if p in seen:
            continue
        seen.add(p)
        if p.exists():
            out.append(CheckItem(cfg.name, "ok", f"benchmark {s.dataset}", str(p)))
        else:
            out.append(
                CheckItem(
                    cfg.name,
                    "missing",
                    f"benchmark {s.dataset}",
                    f"nothing at {p}",
                    f"put the released {s.dataset} files there (layout: {_LOADER_DOC[s.dataset]}) "
                    "or pass --data-root",
                )
            )
    out += _authors_code(cfg)
    return out


def _authors_code(cfg: ReproConfig) -> list[CheckItem]:
    """The authors' checkout of the plan and its arms that send their texts (read and checked
    against the pinned commit, :mod:`agent.reproduce.qa.authors`)."""
    from agent.reproduce.qa.authors import authors_settings, open_for
    from localfin.errors import ConfigError

    plans = [ap for _, ap in cfg.qa_arms() if authors_settings(ap)]
    if not plans:
        return []
    what = "the authors' code"
    try:
        code = open_for(plans[0])
    except ConfigError as exc:
        fix = "--authors-code PATH (a checkout of CamelliaLilium/FinAcumen at 16246593), or [qa] authors_code"
        return [CheckItem(cfg.name, "missing", what, str(exc)[:400], fix)]
    status = "warn" if code.differs else "ok"
    return [CheckItem(cfg.name, status, what, code.describe())]


def _summary(p: Placement) -> str:
    parts = []
    for e in p.engines:
        if e.device == "cpu":
            parts.append(f"{e.key} on the CPU build")
        elif e.layout is not None:
            lay = e.layout
            n = len(lay.replicas)
            parts.append(
                f"{e.key} ({e.need.role}) tp {lay.tensor_parallel}"
                + (f" x pp {lay.pipeline_parallel}" if lay.pipeline_parallel > 1 else "")
                + (f" {lay.quantization}" if lay.quantization else "")
                + f", {n} replica{'s' if n != 1 else ''} at {min(r.share for r in lay.replicas):.2f}"
            )
    return "; ".join(parts) or "no engine of ours (every model is served over HTTP)"


def placement_item(cfg: ReproConfig, inventory: Inventory, registry: Registry | None = None) -> CheckItem:
    """Whether every engine ``cfg`` starts can be placed on ``inventory``, and if not what
    would place it (:func:`agent.reproduce.engine_plan.place`)."""
    reg = registry_with(cfg.model_keys[0], "", registry)
    p = placing.place(cfg, inventory, registry=reg)
    where = f"{inventory.describe()} ({inventory.source or 'declared'})"
    if p.ok:
        return CheckItem(cfg.name, "ok", "placement", f"{where}: {_summary(p)}")
    if inventory.empty:
        need = "; ".join(
            f"{e.key} needs {e.need.per_gpu_gib(1):.1f} GiB of one GPU at tp 1" for e in p.unplaced
        )
        return CheckItem(
            cfg.name,
            "missing",
            "placement",
            f"no GPU visible ({inventory.source}): {need}",
            f"run on a GPU machine; to check one from here: localfin reproduce check {cfg.name} "
            "--gpus N --gpu KIND",
        )
    fix = (
        "; ".join(f"{e.key}: {' or '.join(e.remedies)}" for e in p.unplaced)
        + f" (the whole table: localfin reproduce plan {cfg.name} --gpus N --gpu KIND)"
    )
    what = "; ".join(f"{e.key} ({e.need.role}): {e.note}" for e in p.unplaced)
    return CheckItem(cfg.name, "missing", "placement", f"{where}: {what}", fix)


def install_items(cfg: ReproConfig, platform: str | None = None) -> list[CheckItem]:
    """On the CUDA build, what the GPU install needs of the machine: the NVIDIA driver, the
    compilers and headers triton and hnswlib build with (:func:`serving.hardware.gpu_install.gpu_pieces`)."""
    if (platform or engine_platform()) != "cuda":
        return []
    return [
        CheckItem(cfg.name, "ok" if p.ok else "missing", f"GPU install: {p.what}", p.detail, p.fix)
        for p in gpu_pieces()
    ]


def check_config(
    cfg: ReproConfig,
    *,
    data_root: Path | None = None,
    registry: Registry | None = None,
    inventory: Inventory | None = None,
) -> list[CheckItem]:
    """Every item ``cfg`` needs, present or not (data first, then model weights, the placement
    on ``inventory``, default the visible GPUs, and the GPU install; ``registry``: default the
    packaged one)."""

    root = data_root or env.data_dir()
    items = _moira(cfg) if cfg.kind == "moira" else _qa(cfg, root) + _tools(cfg, root)
    inv = inventory if inventory is not None else visible_inventory()
    return items + _models(cfg, registry) + [placement_item(cfg, inv, registry)] + install_items(cfg)


def format_items(items: Sequence[CheckItem]) -> str:
    """One line per item, then a count line."""
    lines = [i.line() for i in items]
    n_missing = sum(i.status == "missing" for i in items)
    lines.append(f"{len(items)} items checked, {n_missing} missing")
    return "\n".join(lines)
