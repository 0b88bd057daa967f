"""`localfin qa ...`: FinAcumen bank building, evaluation of the three variants, analysis, demo.

Commands raise on bad input (the main error path prints one line and sets the exit code);
engine and library output goes to a log file in the run folder (:func:`localfin_cli._common.quiet_run`),
progress to the terminal, and each result as one JSON line on stdout. A run folder is named
from the arguments, so rerunning a killed command with the same arguments resumes it from
its journal.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from localfin_cli._common import note, progress_for, quiet_run, renamed, result
from localfin_cli.qa_checks import EMBEDDERS, checked_options, tool_names_of

__all__ = ["app"]

app = typer.Typer(
    help="Financial QA (FinAcumen): build-bank, eval, analyze, judge-check, demo, demo-set.",
    no_args_is_help=True,
)

_DATASET = typer.Option(
    ...,
    "--dataset",
    help="tatqa, finmmr, bizbench, fintmmbench, finmme, demo, or an installed plugin's dataset.",
)
_DATA = typer.Option(..., "--data", help="Local file or folder of the dataset (nothing is downloaded).")
_SPLIT = typer.Option(
    None,
    "--split",
    help="Keep only this split, as the data names it (train, validation, dev, test, test_gold).",
)
_SUBSET = typer.Option(
    None, "--subset", help="Keep only this part: FinMMR easy/medium/hard, BizBench task (default SEC-NUM)."
)
_OFFSET = typer.Option(0, "--offset", help="Skip this many items (file order) before taking --limit.")
_LIMIT = typer.Option(None, "--limit", help="Items to use (default: all after --offset).")
_SEED = typer.Option(
    None, "--seed", help="Seed of every model request (default 0; with temperature 0 it changes nothing)."
)
_MODEL = typer.Option("smollm2-135m", "--model", help="Registry key of the model.")
_BACKEND = typer.Option("vllm", "--backend", help="vllm (in-process engine) or openai (a running server).")
_URL = typer.Option(
    None, "--base-url", help="Server URL for --backend openai (e.g. http://127.0.0.1:8000/v1)."
)
_TIMEOUT = typer.Option(
    None, "--request-timeout", help="--backend openai: seconds one request may take (default: 600)."
)
_RETRIES = typer.Option(
    4,
    "--max-retries",
    help="--backend openai: retries of a transient failure (backoff 1 s doubling to 30 s); then the "
    "run stops, exit code 4.",
)
_BANK = typer.Option(None, "--bank", help="Experience bank folder (default: $LOCALFIN_BANK).")
_EMB = typer.Option("minilm", "--embedder", help="minilm (real) or hashing (tests only).")
_TOOLS = typer.Option(
    "python,lookup,reparse,retrieve",
    "--tools",
    help="Comma-separated tools for ft / ft_fm (lookup needs --store; retrieve serves FinTMMBench's corpus; "
    "installed plugins add more).",
)
_STORE = typer.Option(None, "--store", help="Market store for the lookup tool (default: none).")
_STEPS = typer.Option(None, "--max-steps", help="Tool steps per question (default 16).")
_RUN = typer.Option(None, "--out", help="Run folder (default: named from the arguments under runs/qa).")
_RUN_OLD = typer.Option(None, "--run-dir", hidden=True, help="Deprecated name of --out.")
_EXCLUDE = typer.Option(
    None,
    "--exclude-run",
    help="Leave out the items of this run folder and every item sharing a context with them.",
)
_KEEP = typer.Option(
    False,
    "--keep-missing-images",
    help="Keep items whose image files this copy lacks (listed as loaded incomplete); default: skip them.",
)
_RAY = typer.Option(
    None,
    "--ray",
    help="Shard the items as Ray tasks on the cluster at this address (HOST:PORT of the head, auto, "
    "or local); each node calls its own servers (LOCALFIN_ENDPOINTS) or --base-url. See docs/cluster.md.",
)
_SHARDS = typer.Option(None, "--shards", help="With --ray: shards per stage (default: two per node).")
_SANDBOX = typer.Option(
    "raise",
    "--sandbox-missing",
    help="Where code cannot be isolated: raise (stop) or refuse (the tool refuses).",
)


def _items(
    dataset: str,
    data: Path,
    split: str | None,
    offset: int,
    limit: int | None,
    exclude: Path | None,
    subset: str | None = None,
    keep_missing_images: bool = False,
):
    from agent.qa.core import runs
    from agent.qa.data.datasets import load_items
    from agent.qa.data.extensions import dataset_names
    from localfin.errors import ConfigError

    known = dataset_names()
    if dataset not in known:
        raise ConfigError(f"--dataset: unknown QA dataset {dataset!r}; allowed: {', '.join(known)}")
    if offset < 0:
        raise ConfigError(f"--offset={offset}; allowed: >= 0")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit={limit}; allowed: >= 1")
    loaded = load_items(dataset, data, split=split, subset=subset, require_images=not keep_missing_images)
    items = list(loaded.items)
    if exclude is not None:
        ids = set(runs.read_json(exclude / runs.MANIFEST).get("items", []))
        contexts = {it.question.context for it in items if it.item_id in ids}
        items = [it for it in items if it.item_id not in ids and it.question.context not in contexts]
    items = items[offset : offset + limit if limit else None]
    if not items:
        raise ConfigError(
            f"no {dataset} items selected from {data} "
            f"(split={split}, subset={subset}, offset={offset}, limit={limit})"
        )
    note(None, _data_line(dataset, data, len(items), loaded))
    return items, loaded


def _data_line(dataset: str, data: Path, n: int, loaded) -> str:
    """What loading left out: records skipped and items loaded incomplete, each with the first
    reason (both lists are in ``loaded``)."""
    line = f"{dataset} {data}: {n} items selected"
    if loaded.skipped:
        line += f"; {len(loaded.skipped)} records skipped (first: {loaded.skipped[0].reason})"
    if loaded.incomplete:
        line += f"; {len(loaded.incomplete)} items loaded incomplete (first: {loaded.incomplete[0].reason})"
    return line


def _start(be, log) -> None:
    """Start an in-process engine before timing anything (its start-up is not a model call);
    ask a server whether it answers, takes the key and serves the model."""
    from serving.open import check_backend

    start = getattr(be, "start", None)
    if callable(start):
        note(log, f"engine started in {start():.0f} s")
    check_backend(be)


def _backend(
    kind: str,
    model: str,
    base_url: str | None,
    timeout_s: float | None = None,
    max_retries: int = 4,
    layout: object | None = None,
):
    """The backend the options name (an in-process engine where ``layout`` puts it), and the
    registry that holds the model."""
    from serving.engines.vllm_engine import EngineOptions
    from serving.models.registry import default_registry
    from serving.open import BackendSpec, open_backend

    if kind == "openai" and not base_url:
        raise typer.BadParameter("--base-url is required with --backend openai")
    reg = default_registry()
    spec = BackendSpec(
        kind, model, base_url=base_url or "", timeout_s=timeout_s, max_retries=max_retries,
        engine=EngineOptions(layout=layout),  # type: ignore[arg-type]
    )  # fmt: skip
    return open_backend(spec, reg), reg


def _cluster(
    ray: str,
    base: Path,
    model: str,
    base_url: str | None,
    judge: str,
    judge_url: str | None,
    timeout_s: float | None,
    max_retries: int,
    shards: int | None,
):
    """The sharded stages on the Ray cluster at ``ray`` (:mod:`agent.qa.cluster.driver`): the
    model's servers are each node's own or ``base_url``, the judge's ``judge_url``."""
    from agent.qa.cluster.driver import qa_cluster
    from agent.qa.cluster.tasks import Servers
    from serving.cluster.endpoints import Endpoints
    from serving.models.registry import default_registry

    named = Endpoints.of({model: [base_url] if base_url else [], judge: [judge_url] if judge_url else []})
    servers = Servers(model, endpoints=named, registry=default_registry(), timeout_s=timeout_s,
                      max_retries=max_retries)  # fmt: skip
    return qa_cluster(ray, base, servers, shards=shards)


def _beside(kind: str, model: str, judge: str) -> tuple[object | None, object | None]:
    """Layouts of the solver's and the judge's in-process engines side by side on the visible
    GPUs (None, None: not both in process, or the CPU build)."""
    from serving.hardware.gpus import engine_platform, visible_inventory
    from serving.hardware.spec_layout import side_by_side
    from serving.models.registry import default_registry

    if kind != "vllm" or judge == model or engine_platform() != "cuda":
        return None, None
    reg = default_registry()
    solver, other = side_by_side(reg.get(model), [reg.get(judge)], visible_inventory())
    return solver, other


def _guarded(folder: Path, command: str):
    """The run folder's write lock (exit code 3 for a second writer) and a stop on SIGINT /
    SIGTERM at a call boundary (130 / 143)."""
    from contextlib import ExitStack

    from localfin import interrupt, runlock

    stack = ExitStack()
    stack.enter_context(runlock.hold(folder, command))
    stack.enter_context(
        interrupt.graceful(f"rerun the same command: the run folder {folder} resumes from its journal")
    )
    return stack


def _embedder(name: str):
    from bank.embedder import HashingEmbedder, MiniLMEmbedder
    from localfin.errors import ConfigError

    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    raise ConfigError(f"--embedder={name!r}; allowed: {', '.join(EMBEDDERS)}")


def _solver_config(reg, model: str, max_steps: int | None, seed: int | None = None, **extra: Any):
    from dataclasses import replace

    from agent.qa.solver.react import solver_config_for
    from serving.open import model_facts

    over = {"max_steps": max_steps} if max_steps else {}
    cfg = solver_config_for(model_facts(model, reg), **over, **extra)
    return cfg if seed is None else replace(cfg, sampling=replace(cfg.sampling, seed=seed))


def _tools(tools: str, store: Path | None, sandbox: str, dataset: str = "", data: Path | None = None):
    from agent.qa.solver.toolset import CORPUS_DATASETS, ToolsetConfig, tool_factory

    names = tool_names_of(tools, sandbox, store)
    corpus = data if dataset in CORPUS_DATASETS and "retrieve" in names else None
    cfg = ToolsetConfig(names=names, store_path=store, corpus_path=corpus, python_unavailable=sandbox)
    return tool_factory(cfg), names


def _transcriber(names: tuple[str, ...], items) -> Any:
    if "reparse" not in names or not any(it.question.images for it in items):
        return None
    from agent.qa.solver.toolset import ocr_transcriber

    return ocr_transcriber()


def _default_run(
    kind: str,
    dataset: str,
    model: str,
    split: str | None,
    offset: int,
    limit: int | None,
    subset: str | None = None,
) -> Path:
    from localfin import env

    part = f"{split or 'all'}-{subset}" if subset else split or "all"
    return env.runs_dir() / "qa" / f"{kind}-{dataset}-{part}-{model}-o{offset}-n{limit or 'all'}"


@app.command("build-bank")
def build_bank_cmd(
    ctx: typer.Context,
    dataset: str = _DATASET,
    data: Path = _DATA,
    split: str = _SPLIT,
    subset: str = _SUBSET,
    offset: int = _OFFSET,
    limit: int = _LIMIT,
    exclude_run: Path = _EXCLUDE,
    bank: Path = _BANK,
    model: str = _MODEL,
    backend: str = _BACKEND,
    base_url: str = _URL,
    embedder: str = _EMB,
    tools: str = _TOOLS,
    store: Path = _STORE,
    max_steps: int = _STEPS,
    k: int = typer.Option(8, "--k", help="Trajectories per item (paper: 8)."),
    temperature: float = typer.Option(0.7, "--temperature", help="Sampling temperature of the trajectories."),
    wave: int = typer.Option(
        8, "--items-per-wave", help="Items whose trajectories run together (memory bound)."
    ),
    run_dir: Path = _RUN,
    old_run_dir: Path = _RUN_OLD,
    sandbox_missing: str = _SANDBOX,
    keep_missing_images: bool = _KEEP,
    request_timeout: float = _TIMEOUT,
    max_retries: int = _RETRIES,
    judge: str = typer.Option(
        None, "--judge", help="Judge model of judged items (FinTMMBench; default: the solver's model)."
    ),
    judge_url: str = typer.Option(None, "--judge-base-url", help="The judge's server (--backend openai)."),
    ray: str = _RAY,
    shards: int = _SHARDS,
) -> None:
    """Build (or complete) an experience bank from training items (never test items)."""
    from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank
    from agent.qa.evaluation.programs import ByModel
    from agent.qa.solver.react import QASolver
    from bank.store import ExperienceBank
    from localfin import env
    from serving.cluster.connect import preflight

    if ray is not None:
        ray = preflight(ray)  # a head that does not answer: nothing read or written
    given_run = renamed(run_dir, old_run_dir, "--run-dir", "--out")
    keys = {"--model": model, "--judge": judge}
    checked_options(keys, backend=backend, base_url=base_url, embedder=embedder)
    tool_names_of(tools, sandbox_missing, store)
    items, _ = _items(dataset, data, split, offset, limit, exclude_run, subset, keep_missing_images)
    run = given_run or _default_run("bank", dataset, model, split, offset, limit, subset)
    judge_model = judge or model
    judged = judge_model != model and any(it.question.dataset == "fintmmbench" for it in items)
    in_process = judged and ray is None
    solver_at, judge_at = _beside(backend, model, judge_model) if in_process else (None, None)
    with (
        _guarded(run, f"localfin qa build-bank --dataset {dataset}"),
        quiet_run(ctx, "qa-build-bank", run) as log,
        ExitStack() as stack,
    ):
        factory, names = _tools(tools, store, sandbox_missing, dataset, data)  # before any engine
        if ray is not None:  # the shards call the servers; nothing is opened here
            from serving.models.registry import default_registry

            reg, served = default_registry(), None
            qc = stack.enter_context(
                _cluster(
                    ray, run, model, base_url, judge_model, judge_url, request_timeout, max_retries, shards
                )
            )
            build = qc.build_bank
        else:
            be, reg = _backend(backend, model, base_url, request_timeout, max_retries, layout=solver_at)
            stack.callback(be.close)
            _start(be, log)
            served = be
            if judged:
                jb, _ = _backend(
                    backend, judge_model, judge_url or base_url, request_timeout, max_retries, layout=judge_at
                )
                stack.callback(jb.close)
                _start(jb, log)
                served = ByModel(be, {judge_model: jb})
            build = build_bank
        solver = QASolver(_solver_config(reg, model, max_steps), tools=factory)
        with ExperienceBank.open(bank or env.default_bank_dir()) as b:
            rep = build(
                items,
                solver,
                served,
                b,
                _embedder(embedder),
                run,
                config=BankBuildConfig(k=k, temperature=temperature, items_per_wave=wave),
                judge_model=judge_model,
                data_files=[data],
                transcriber=_transcriber(names, items),
                progress=progress_for(log),
            )
        result(log, json.dumps(rep.__dict__))


def _parse_sizes(text: str) -> list[int | None]:
    from localfin.errors import ConfigError

    out: list[int | None] = []
    for tok in (t.strip() for t in text.split(",") if t.strip()):
        if tok == "all":
            out.append(None)
        elif tok.isdigit():
            out.append(int(tok))
        else:
            raise ConfigError(f"--bank-sizes entry {tok!r}; allowed: whole numbers or 'all'")
    return out or [None]


@app.command("eval")
def eval_cmd(
    ctx: typer.Context,
    variant: str = typer.Option(..., "--variant", help="base, ft or ft_fm."),
    dataset: str = _DATASET,
    data: Path = _DATA,
    split: str = _SPLIT,
    subset: str = _SUBSET,
    offset: int = _OFFSET,
    limit: int = _LIMIT,
    exclude_run: Path = _EXCLUDE,
    bank: Path = _BANK,
    bank_sizes: str = typer.Option("all", "--bank-sizes", help="ft_fm: bank snapshots, e.g. 0,20,all."),
    k_max: str = typer.Option("5", "--k-max", help="ft_fm: retrieval depths, e.g. 1,3,5,7."),
    tau: float = typer.Option(0.65, "--tau", help="ft_fm: cosine threshold."),
    model: str = _MODEL,
    backend: str = _BACKEND,
    base_url: str = _URL,
    embedder: str = _EMB,
    tools: str = _TOOLS,
    store: Path = _STORE,
    max_steps: int = _STEPS,
    max_active: int = typer.Option(
        64, "--max-active", help="Questions whose loops run together (memory bound)."
    ),
    run_dir: Path = _RUN,
    old_run_dir: Path = _RUN_OLD,
    sandbox_missing: str = _SANDBOX,
    keep_missing_images: bool = _KEEP,
    request_timeout: float = _TIMEOUT,
    max_retries: int = _RETRIES,
    scorer_name: str = typer.Option(
        None,
        "--scorer",
        help="The dataset's scorer by name: localfin (default; TAT-QA official), official, authors, "
        "authors_em (FinTMMBench) or a plugin's name; model-graded ones use --model as judge/extractor.",
    ),
    ray: str = _RAY,
    shards: int = _SHARDS,
    seed: int = _SEED,
) -> None:
    """Evaluate one variant (ft_fm: over bank sizes x k_max, one run folder each)."""
    from agent.qa.evaluation.evaluate import VARIANTS, EvalConfig
    from agent.qa.evaluation.sweep import MemoryGrid, evaluate_variant
    from agent.qa.scoring.judge_pass import deferred_scorer
    from agent.qa.scoring.scorers import NamedScorer
    from bank.retrieval import Retriever
    from bank.store import ExperienceBank
    from localfin import env
    from localfin.errors import ConfigError

    if variant not in VARIANTS:
        raise ConfigError(f"--variant={variant!r}; allowed: {', '.join(VARIANTS)}")
    named = NamedScorer({dataset: scorer_name} if scorer_name else {})
    sizes = _parse_sizes(bank_sizes)
    try:
        ks = [int(x) for x in k_max.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--k-max={k_max!r}; allowed: whole numbers separated by commas") from None
    if ray is not None:
        from serving.cluster.connect import preflight

        ray = preflight(ray)  # a head that does not answer: nothing read or written
    given_root = renamed(run_dir, old_run_dir, "--run-dir", "--out")
    ft_fm_embedder = embedder if variant == "ft_fm" else None
    checked_options({"--model": model}, backend=backend, base_url=base_url, embedder=ft_fm_embedder)
    if variant != "base":
        tool_names_of(tools, sandbox_missing, store)
    items, _ = _items(dataset, data, split, offset, limit, exclude_run, subset, keep_missing_images)
    root = given_root or _default_run(variant, dataset, model, split, offset, limit, subset)
    with (
        _guarded(root, f"localfin qa eval --variant {variant} --dataset {dataset}"),
        quiet_run(ctx, "qa-eval", root) as log,
        ExitStack() as stack,
    ):
        factory, names = (  # before any engine: a missing sandbox or store fails here
            _tools(tools, store, sandbox_missing, dataset, data) if variant != "base" else (None, ())
        )
        if ray is not None:  # the shards call the servers; nothing is opened here
            from serving.models.registry import default_registry

            be, reg = None, default_registry()
            qc = stack.enter_context(
                _cluster(ray, root, model, base_url, model, None, request_timeout, max_retries, shards)
            )
        else:
            be, reg = _backend(backend, model, base_url, request_timeout, max_retries)
            stack.callback(be.close)
            _start(be, log)
            qc = None
        cfg = EvalConfig(variant, _solver_config(reg, model, max_steps, seed), max_active=max_active)
        run = dict(
            tools=factory,
            scorer=deferred_scorer(named),  # judged / extracted answers are graded after the run
            transcriber=_transcriber(names, items),
            data_files=[data],
            progress=progress_for(log),
            judge_model=model,  # the solver's model judges (it reads the gold: scoring only)
            cluster=qc,
        )
        if variant != "ft_fm":
            res = evaluate_variant(items, be, root, cfg, **run)
        else:
            with ExperienceBank.open(bank or env.default_bank_dir()) as b:
                grid = MemoryGrid(Retriever(b, _embedder(embedder)), tau, tuple(sizes), tuple(ks))
                res = evaluate_variant(items, be, root, cfg, grid=grid, **run)
        for summary in res.summaries:
            result(log, json.dumps(summary.__dict__))
        for j in res.judged:
            result(log, json.dumps({"judge": j.__dict__}))
        for x in res.extracted:
            result(log, json.dumps({"extract": x.__dict__}))


@app.command("analyze")
def analyze_cmd(
    ctx: typer.Context,
    runs_: list[Path] = typer.Argument(..., metavar="RUN_DIR...", help="Evaluation run folders."),
    out: Path = typer.Option(
        None, "--out", help="Where analysis.md/.json go (default: the first run's parent)."
    ),
    bank: Path = typer.Option(None, "--bank", help="Bank for retrieval analytics (H/E/J/C)."),
    dataset: str = typer.Option(None, "--dataset", help="With --bank: the questions' dataset."),
    data: Path = typer.Option(None, "--data", help="With --bank: the questions' file."),
    split: str = _SPLIT,
    subset: str = _SUBSET,
    offset: int = _OFFSET,
    limit: int = _LIMIT,
    embedder: str = _EMB,
) -> None:
    """Variant table, accuracy against bank size / k_max, and bank analytics."""
    from agent.qa.analysis.analyze import analyze
    from bank.store import ExperienceBank
    from localfin.errors import ConfigError

    dirs = [
        p for r in runs_ for p in ([r] if (r / "scores.json").exists() else sorted(r.glob("*/scores.json")))
    ]
    dirs = [d.parent if d.name == "scores.json" else d for d in dirs]
    if not dirs:
        raise ConfigError("no evaluation run folders (with scores.json) among the arguments")
    target = out or dirs[0].parent
    if bank is None:
        md = analyze(dirs, target)
    else:
        if not (dataset and data):
            raise ConfigError("--bank needs --dataset and --data (the questions to retrieve for)")
        items, _ = _items(dataset, data, split, offset, limit, None, subset)
        with ExperienceBank.open(bank) as b:
            md = analyze(
                dirs, target, bank=b, embedder=_embedder(embedder), questions=[i.question for i in items]
            )
    result(None, md.read_text(encoding="utf-8"))


@app.command("judge-check")
def judge_check_cmd(
    ctx: typer.Context,
    dataset: str = typer.Option("fintmmbench", "--dataset", help="The judged benchmark (fintmmbench)."),
    data: Path = _DATA,
    split: str = _SPLIT,
    subset: str = _SUBSET,
    offset: int = _OFFSET,
    limit: int = typer.Option(200, "--limit", help="Items whose gold and perturbed answers are judged."),
    judge: str = typer.Option(
        "qwen3-4b-nothink",
        "--judge",
        help="Registry key of the judge model (the configs' FinTMMBench judge).",
    ),
    backend: str = _BACKEND,
    base_url: str = _URL,
    out: Path = typer.Option(None, "--out", help="Output folder (default: named from the arguments)."),
) -> None:
    """How far the judge can be trusted: its verdicts on the items' gold answers (should be right)
    and on perturbed wrong answers (should be wrong)."""
    from agent.qa.scoring.judge_check import judge_check
    from localfin import env

    checked_options({"--judge": judge}, backend=backend, base_url=base_url)
    items, _ = _items(dataset, data, split, offset, limit, None, subset)
    target = out or env.runs_dir() / "qa" / f"judge_check-{dataset}-{judge}-o{offset}-n{limit}"
    with quiet_run(ctx, "qa-judge-check", target) as log:
        be, _reg = _backend(backend, judge, base_url)
        try:
            _start(be, log)
            check = judge_check(items, be, judge, target)
        finally:
            be.close()
        note(
            log,
            f"{judge}: {check.gold_right}/{check.n} gold answers judged right, "
            f"{check.wrong_caught}/{check.wrong_n} perturbed answers judged wrong",
        )
        result(log, json.dumps(check.__dict__))


@app.command("demo-set")
def demo_set_cmd(
    out: Path = typer.Option(..., "--out", help="Folder to write (items.jsonl and images/)."),
    train: int = typer.Option(24, "--train", help="Train items (they feed a bank)."),
    test: int = typer.Option(24, "--test", help="Test items (train + test <= 72)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the synthetic companies and every choice."),
) -> None:
    """Write the bundled demo QA set (synthetic companies, tables and charts as images) for
    `qa eval` / `qa build-bank --dataset demo --data DIR`; nothing is downloaded."""
    from agent.qa.data.demo_set import build_demo_set

    folder = build_demo_set(out, seed=seed, n_train=train, n_test=test)
    result(None, f"demo QA set: {train} train + {test} test items in {folder}")


@app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    out: Path = typer.Option(None, "--out", help="Demo folder (default: $LOCALFIN_REPORTS_DIR/qa_demo)."),
    model: str = _MODEL,
) -> None:
    """The QA part of the CPU demo: demo set, small bank, three variants, report."""
    from agent.qa.evaluation.demo import run_qa_demo
    from localfin import env
    from serving.open import BackendSpec, model_facts, open_backend

    model_facts(model)  # an unknown key fails here, before any run starts
    target = out or env.reports_dir() / "qa_demo"
    with quiet_run(ctx, "qa-demo", target) as log:
        engine = open_backend(BackendSpec("vllm", model))
        try:
            note(log, f"engine for {model} started in {engine.start():.0f} s")
            res = run_qa_demo(target, backend=engine, model=model, progress=progress_for(log))
        finally:
            engine.close()
        result(log, res.report.read_text(encoding="utf-8"))
