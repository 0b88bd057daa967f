"""localfin's Python API: the few calls a user script needs, one import away.

.. code-block:: python

    from agent import api

    with api.backend("smollm2-135m") as be:               # one engine, closed after the block
        exp = api.run_experiment("my_experiment.toml", "runs/mine", backend=be)
    runs = api.load_runs("runs/mine")                     # runs.csv as a pandas DataFrame
    run = api.load_run("runs/mine/runs/full-no_beta-s0")  # one run's tables (parquet, csv, json)
    api.build_report("runs/mine")                         # runs/mine/report/index.html

Why here: the base package ``localfin`` imports nothing above it, and this module composes the
two agents, the report and the serving layer, which only the top of the ``agent`` package may do
(like ``agent/demo.py``). The command line does the same through these package functions; what
this module returns is what the commands print or write. Every call takes the model registry to
use (default: localfin's models, the installed plugins' and the user's models files), so a
script can add models in code (:func:`models`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localfin import configfile as cf
from localfin.errors import ConfigError, InputError
from localfin.progress import NULL_PROGRESS, Progress

if TYPE_CHECKING:
    import pandas as pd

    from agent.pairs.experiment.summary import ExperimentResult
    from agent.qa.evaluation.sweep import VariantResult
    from agent.report.build import ReportResult
    from serving.chat.backend import Backend
    from serving.models.registry import ModelSpec, Registry

__all__ = [
    "models",
    "backend",
    "load_experiment_config",
    "check_models",
    "run_experiment",
    "evaluate_qa",
    "build_report",
    "load_runs",
    "best_run",
    "RunTables",
    "load_run",
]


def models(models_file: str | Path | None = None, extra: Sequence[ModelSpec] = ()) -> Registry:
    """The model registry: localfin's models, the installed plugins', the user's models files
    (``LOCALFIN_MODELS_FILE``), then ``models_file`` and ``extra`` (entries given in code), each
    adding keys or replacing the entry of the same key."""
    from serving.models.registry import default_registry
    from serving.models.user_models import load_models_file

    reg = default_registry()
    if models_file is not None:
        reg = reg.with_specs(load_models_file(models_file, base=reg), f"file {models_file}")
    return reg.with_specs(extra, "code") if extra else reg


@contextmanager
def backend(
    model: str,
    *,
    kind: str = "vllm",
    base_url: str = "",
    api_key: str | None = None,
    model_path: str | Path = "",
    registry: Registry | None = None,
) -> Iterator[Backend]:
    """Open the backend that serves ``model`` (a registry key) and close it when the block ends.

    ``kind``: ``vllm`` (an in-process engine, started on the first call), ``openai`` (a running
    server at ``base_url``, e.g. ``localfin serve``) or an installed plugin's kind;
    ``model_path``: a weights folder overriding the registry's. An unknown key fails here,
    naming the known ones.
    """
    from serving.open import BackendSpec, opened

    spec = BackendSpec(kind, model, base_url=base_url, api_key=api_key, model_path=str(model_path))
    with opened(spec, registry or models()) as be:
        yield be


def load_experiment_config(
    config: str | Path | Mapping[str, Any],
    *,
    model: str | None = None,
    seeds: Sequence[int] | None = None,
    limit: int | None = None,
) -> tuple[Any, str]:
    """``(ExperimentConfig, TOML text)`` of an experiment file's path or of a document (the
    parsed TOML as a dict: e.g. ``cf.merge(cf.read_toml(path), {"model": {"temperature": ...}})``;
    relative ``store`` paths of a document resolve against the working directory, those of a file
    against its folder). Overrides, held by the text returned: ``model``, a registry key
    replacing the config's ``[model] backbone``; ``seeds``, replacing ``[experiment] seeds``;
    ``limit``, the test window cut to its first ``limit`` trading sessions (a quick check: its
    ``test_end`` moves to the limit-th session of the store's calendar)."""
    from agent.pairs.experiment.config import load_config, parse_config
    from agent.pairs.experiment.preflight import limited_test_end

    over: dict[str, Any] = {"model": {"backbone": model}} if model else {}
    if seeds is not None:
        over["experiment"] = {"seeds": [int(s) for s in seeds]}
    if isinstance(config, Mapping):
        base, base_dir, name = dict(config), Path.cwd(), "the experiment document"
    else:
        path = Path(config)
        if not over and limit is None:
            return load_config(path), path.read_text(encoding="utf-8")
        base, base_dir, name = cf.read_toml(path, "config"), path.resolve().parent, str(path)
    file = None if isinstance(config, Mapping) else Path(config)
    text = cf.dumps(cf.merge(base, over))
    cfg = parse_config(cf.loads_toml(text, name), base_dir=base_dir, file=file)
    if limit is not None:
        over = cf.merge(over, {"windows": {"test_end": limited_test_end(cfg, limit)}})
        text = cf.dumps(cf.merge(base, over))
        cfg = parse_config(cf.loads_toml(text, name), base_dir=base_dir, file=file)
    return cfg, text


def check_models(cfg: Any, registry: Registry | None = None) -> Any:
    """The backbone's :class:`~serving.open.ModelFacts` once every registry key the experiment
    config ``cfg`` names (its backbone, FinMem's fixed model) is known; an unknown key is a
    :class:`~localfin.errors.ConfigError` naming the known ones, before any folder or engine."""
    from serving.open import model_facts

    reg = registry or models()
    facts = model_facts(cfg.model.backbone, reg)
    fm_spec = cfg.finmem_backend_spec()
    if fm_spec is not None:
        model_facts(fm_spec.model, reg)
    return facts


def _placed_specs(cfg: Any, spec: Any, fm_spec: Any, reg: Registry) -> tuple[Any, Any]:
    """The backbone's and FinMem's backend specs with their layouts on the visible GPUs (both
    engines at once: :func:`agent.reproduce.engine_plan.place_experiment`); unchanged on the CPU
    build. A ConfigError, before any folder or engine, when they cannot be placed."""
    from dataclasses import replace

    from agent.reproduce.engine_plan import place_experiment
    from serving.hardware.gpus import engine_platform, visible_inventory

    if engine_platform() != "cuda" or spec.kind != "vllm":
        return spec, fm_spec
    placed = place_experiment(cfg, visible_inventory(), registry=reg)
    if not placed.ok:
        raise ConfigError(f"{cfg.name}: nothing started: {placed.problem()}")
    spec = replace(spec, engine=replace(spec.engine, layout=placed.layout_for(spec.model, "backbone")))
    if fm_spec is not None and fm_spec.kind == "vllm":
        fm_spec = replace(
            fm_spec, engine=replace(fm_spec.engine, layout=placed.layout_for(fm_spec.model, "finmem"))
        )
    return spec, fm_spec


def run_experiment(
    config: str | Path | Mapping[str, Any],
    out: str | Path | None = None,
    *,
    resume: bool = False,
    sequential: bool = False,
    model: str | None = None,
    seeds: Sequence[int] | None = None,
    limit: int | None = None,
    backend: Backend | None = None,
    registry: Registry | None = None,
    progress: Progress = NULL_PROGRESS,
) -> ExperimentResult:
    """Run a Moira experiment (every seed x exposure x variant, and its baselines) into ``out``
    (default ``$LOCALFIN_RUNS_DIR/<experiment.name>``), as ``localfin pairs run`` does.

    ``config``: a file's path or a document (:func:`load_experiment_config`). ``backend``: one you
    opened (:func:`backend`; yours to close), else the config's ``[model]`` backend is opened and
    closed here. Nothing runs before the pre-flight passes
    (:mod:`agent.pairs.experiment.preflight`: registry keys, the weights of an engine opened
    here, the store, its pool, windows and price column); a failed check raises an error naming
    it (a :class:`~localfin.errors.ConfigError`, or the missing weights' error saying how to get
    them). ``resume``: continue a folder (journaled calls replay). ``model``, ``seeds``,
    ``limit``: overrides of the config (:func:`load_experiment_config`).
    """
    from contextlib import nullcontext

    from agent.pairs.experiment.preflight import preflight, require
    from agent.pairs.experiment.run import run_experiment as run
    from localfin import env
    from serving.open import check_backend, opened

    cfg, text = load_experiment_config(config, model=model, seeds=seeds, limit=limit)
    reg = registry or models()
    # before any folder, engine or call: registry keys, the weights of an engine opened here, data
    require(preflight(cfg, reg, weights=backend is None))
    facts = check_models(cfg, reg)
    fm_spec = cfg.finmem_backend_spec()
    folder = Path(out) if out is not None else env.runs_dir() / cfg.name
    spec = cfg.model.backend_spec()
    if backend is None:
        spec, fm_spec = _placed_specs(cfg, spec, fm_spec, reg)
    with (
        opened(spec, reg, backend=backend) as be,
        opened(fm_spec, reg) if fm_spec else nullcontext() as fm,
    ):
        check_backend(be)  # a server that is down or refuses the key fails here, before any work
        return run(
            cfg,
            folder,
            config_text=text,
            backend=be,
            model=facts,
            resume=resume,
            sequential=sequential,
            progress=progress,
            finmem_backend=fm,
        )


def evaluate_qa(
    dataset: str,
    data: str | Path,
    out: str | Path,
    *,
    variant: str = "base",
    model: str = "smollm2-135m",
    split: str | None = None,
    limit: int | None = None,
    tools: Sequence[str] = ("python", "lookup", "reparse", "retrieve"),
    store: str | Path | None = None,
    bank: str | Path | None = None,
    tau: float = 0.65,
    k_max: int = 5,
    backend: Backend | None = None,
    registry: Registry | None = None,
    progress: Progress = NULL_PROGRESS,
) -> VariantResult:
    """Evaluate one FinAcumen variant on a QA set into the run folder ``out``, as ``localfin qa
    eval`` does (one bank size and one retrieval depth; the command line sweeps several).

    ``dataset``: ``tatqa``, ``finmmr``, ``bizbench``, ``fintmmbench``, ``finmme``, ``demo`` or an
    installed plugin's dataset (scored by the plugin's scorer);
    ``data``: its local file or folder; ``variant``: ``base`` (no tools), ``ft`` (tools) or
    ``ft_fm`` (tools and the experience memory of the bank folder ``bank``, default
    ``$LOCALFIN_BANK``, at cosine threshold ``tau`` and depth ``k_max``). ``tools``: the tools of
    ``ft``/``ft_fm`` (``lookup`` reads the market store ``store``; installed plugins add tools).
    ``backend``: one you opened (yours to close), else ``model``'s in-process engine is opened and
    closed here.
    """
    from agent.qa.data.datasets import load_items
    from agent.qa.evaluation.evaluate import VARIANTS, EvalConfig
    from agent.qa.evaluation.sweep import MemoryGrid, evaluate_variant
    from agent.qa.scoring.judge_pass import deferred_scorer
    from agent.qa.solver.react import solver_config_for
    from agent.qa.solver.toolset import CORPUS_DATASETS, ToolsetConfig, ocr_transcriber, tool_factory
    from bank.embedder import MiniLMEmbedder
    from bank.retrieval import Retriever
    from bank.store import ExperienceBank
    from localfin import env
    from serving.open import BackendSpec, model_facts, opened

    if variant not in VARIANTS:
        raise ConfigError(f"variant={variant!r}; allowed: {', '.join(VARIANTS)}")
    reg = registry or models()
    facts = model_facts(model, reg)
    items = list(load_items(dataset, data, split=split, limit=limit).items)
    if not items:
        raise InputError(f"no {dataset} items in {data} (split={split}, limit={limit})")
    cfg = EvalConfig(variant, solver_config_for(facts))
    run: dict[str, Any] = {"scorer": deferred_scorer(), "data_files": [Path(data)], "progress": progress}
    if variant != "base":
        names = tuple(tools)
        corpus = Path(data) if dataset in CORPUS_DATASETS and "retrieve" in names else None
        store_path = Path(store) if store is not None else None
        run["tools"] = tool_factory(ToolsetConfig(names=names, store_path=store_path, corpus_path=corpus))
        if "reparse" in names and any(it.question.images for it in items):
            run["transcriber"] = ocr_transcriber()
    with opened(BackendSpec("vllm", model), reg, backend=backend) as be:
        if variant != "ft_fm":
            return evaluate_variant(items, be, out, cfg, judge_model=model, **run)
        with ExperienceBank.open(bank or env.default_bank_dir()) as b:
            grid = MemoryGrid(Retriever(b, MiniLMEmbedder()), tau, (None,), (k_max,))
            return evaluate_variant(items, be, out, cfg, grid=grid, judge_model=model, **run)


def build_report(source: str | Path, out: str | Path | None = None) -> ReportResult:
    """The HTML report (``index.html`` and ``figures/*.png``) of every run under ``source`` (a
    run, experiment or matrix folder, or a folder of QA runs) into ``out`` (default
    ``source/report``), as ``localfin report`` does."""
    from agent.report.build import build_report as build

    return build(source, out)


def load_runs(folder: str | Path) -> pd.DataFrame:
    """``runs.csv`` of an experiment or matrix folder: one row per run (identity, execution
    settings, metrics, the metrics re-settled with frictions, tokens) as a DataFrame. A folder
    above experiments (the demo's, say) is an :class:`~localfin.errors.InputError` naming the
    experiment and matrix folders below it."""
    import pandas as pd

    root = Path(folder)
    path = root / "runs.csv"
    if not path.is_file():
        below = _tables_below(root) if root.is_dir() else []
        if below:
            shown = ", ".join(str(p) for p in below[:5]) + (", ..." if len(below) > 5 else "")
            raise InputError(
                f"{root} holds no runs.csv; the experiment or matrix folder(s) below it: {shown}; "
                f"allowed: one of them, e.g. load_runs({str(below[0])!r})"
            )
        raise InputError(
            f"{path} does not exist; allowed: a finished experiment or matrix folder "
            "(localfin export writes the tables of an older one)"
        )
    return pd.read_csv(path)


def _tables_below(root: Path) -> list[Path]:
    """The folders below ``root`` holding a ``runs.csv`` (the shallowest ones: a matrix's, not its
    experiments'), sorted."""
    found: list[Path] = []
    for path in sorted(root.rglob("runs.csv")):
        folder = path.parent
        if not any(f in folder.parents for f in found):
            found.append(folder)
    return found


def best_run(
    runs: pd.DataFrame, metric: str = "sharpe", *, kind: str | None = None, smallest: bool = False
) -> pd.Series:
    """The row of ``runs`` (:func:`load_runs`) with the largest ``metric`` (the smallest with
    ``smallest``, e.g. ``annual_volatility``), among the rows of ``kind`` (``moira`` for the
    agent's runs, ``baseline`` for the baselines'; None: every row). Rows whose metric is not a
    number (NaN: a run that never traded has no Sharpe) are left out, never picked: a plain
    ``sort_values(metric).iloc[-1]`` would return one, as pandas sorts NaN last.

    Raises :class:`~localfin.errors.InputError` when ``metric`` or ``kind`` is not in the
    table (naming what is) or when no row has a number."""
    import pandas as pd

    if metric not in runs.columns:
        numeric = [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c])]
        raise InputError(f"metric={metric!r} is not a column of runs.csv; allowed: {', '.join(numeric)}")
    rows = runs
    if kind is not None:
        kinds = sorted(str(k) for k in runs["kind"].dropna().unique()) if "kind" in runs.columns else []
        if kind not in kinds:
            raise InputError(f"kind={kind!r}; allowed: {', '.join(kinds) or 'none (no kind column)'}")
        rows = runs[runs["kind"] == kind]
    values = pd.to_numeric(rows[metric], errors="coerce")
    values = values[values.notna() & values.abs().ne(float("inf"))]
    if values.empty:
        raise InputError(f"no run{' of kind ' + repr(kind) if kind else ''} has a number for {metric!r}")
    return rows.loc[values.idxmin() if smallest else values.idxmax()]


@dataclass(frozen=True)
class RunTables:
    """One run folder's tables: ``steps`` (one row per test transition: date, pair, action,
    realized return, equity, ...), ``equity_curve`` and ``trades`` (the re-settled tables),
    ``decisions``, ``trace`` (every call and state change), ``metrics`` (``metrics.json``) and
    ``tables``: every table of the folder by file stem, these included."""

    folder: Path
    metrics: Mapping[str, Any]
    tables: Mapping[str, pd.DataFrame] = field(repr=False)

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        folder = self.__dict__.get("folder")
        raise AttributeError(f"run {folder} has no table {name!r}; it has {sorted(tables)}")


def load_run(folder: str | Path) -> RunTables:
    """Every table of one run folder (``runs/<run_id>``): its parquet files and csv tables as
    DataFrames (a name in both: the parquet), and ``metrics.json``."""
    import pandas as pd

    root = Path(folder)
    metrics_path = root / "metrics.json"
    if not metrics_path.is_file():
        raise InputError(f"{root} holds no metrics.json; allowed: a run folder (runs/<run_id>)")
    tables: dict[str, pd.DataFrame] = {p.stem: pd.read_csv(p) for p in sorted(root.glob("*.csv"))}
    tables.update({p.stem: pd.read_parquet(p) for p in sorted(root.glob("*.parquet"))})
    return RunTables(root, json.loads(metrics_path.read_text(encoding="utf-8")), tables)
