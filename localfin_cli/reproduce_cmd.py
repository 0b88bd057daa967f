"""`localfin reproduce`: the papers' tables as shipped configs (agent/reproduce/configs).

localfin reproduce --list                 every config and the table it reproduces
localfin reproduce --check CONFIG|all     data and model folders present or missing
localfin reproduce CONFIG                 run it (refuses while anything is missing)
localfin reproduce --smoke CONFIG|all     run it shrunk to CPU size, report included
localfin reproduce --rehearse CONFIG|all  its GPU settings on tiny stand-ins, engine and server, checked
localfin reproduce --plan CONFIG --gpus N --gpu KIND   engines, memory and estimated wall time on GPUs
"""

from __future__ import annotations

from pathlib import Path

import typer

from localfin_cli._common import note, progress_for, quiet_run, result

__all__ = ["register", "reproduce"]


def _configs(name: str):
    from agent.reproduce.spec import load_all, load_repro

    return load_all() if name == "all" else [load_repro(name)]


def _list() -> str:
    from agent.reproduce.spec import load_all

    rows = [(c.name, f"{c.paper} {c.table}", ", ".join(c.model_keys), c.title) for c in load_all()]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{'config':<{w[0]}}  {'reproduces':<{w[1]}}  {'models':<{w[2]}}  what"]
    lines += [f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d}" for a, b, c, d in rows]
    return "\n".join(lines)


def reproduce(
    ctx: typer.Context,
    config: str = typer.Argument(
        None, metavar="[CONFIG]", help="A config name (see --list), a .toml path, or all."
    ),
    list_: bool = typer.Option(
        False, "--list", help="List every shipped config and the table it reproduces."
    ),
    check: bool = typer.Option(
        False, "--check", help="Say which data and model folders are present or missing."
    ),
    smoke: bool = typer.Option(
        False, "--smoke", help="Run shrunk to CPU size (synthetic market, demo QA set)."
    ),
    out: Path = typer.Option(
        None,
        "--out",
        help="Output folder (default: $LOCALFIN_RUNS_DIR/reproduce[-smoke]/<config>); --plan: the "
        "--rehearse folder whose journal gives the calls per step (default: $LOCALFIN_RUNS_DIR/rehearse).",
    ),
    data_root: Path = typer.Option(
        None,
        "--data-root",
        help="Data folder holding benchmarks/ (default: $LOCALFIN_DATA_DIR); --rehearse reads a few items "
        "of the released benchmarks there and writes stand-ins for the rest.",
    ),
    model: str = typer.Option("smollm2-135m", "--model", help="--smoke: registry key of the CPU model."),
    rehearse: bool = typer.Option(
        False,
        "--rehearse",
        help="Run at the GPU settings on tiny random stand-ins (engine and server), checked.",
    ),
    plan: bool = typer.Option(False, "--plan", help="Print engines, memory and an estimated GPU wall time."),
    gpus: int = typer.Option(1, "--gpus", help="--plan: number of GPUs."),
    gpu: str = typer.Option("h200", "--gpu", help="--plan: GPU kind (h100, h200, a100-80g, l40s)."),
    paths: str = typer.Option("engine,server", "--paths", help="--rehearse: engine, server or both."),
) -> None:
    """Reproduce a table of Moira or FinAcumen from its shipped config."""
    from agent.reproduce.check import check_config, format_items
    from localfin import env
    from localfin.errors import ConfigError

    if list_:
        result(None, _list())
        return
    if not config:
        raise ConfigError(
            "CONFIG is missing; allowed: a name from `localfin reproduce --list`, a .toml path, or all"
        )
    modes = [
        n
        for n, on in (("--check", check), ("--smoke", smoke), ("--rehearse", rehearse), ("--plan", plan))
        if on
    ]
    if len(modes) > 1:
        raise ConfigError(f"{' and '.join(modes)} exclude each other; allowed: one of them")
    if plan:
        _plan(config, gpus, gpu, out)
        return
    cfgs = _configs(config)
    if rehearse:
        _rehearse(ctx, cfgs, out, paths, data_root or env.data_dir())
        return
    if check:
        items = [i for c in cfgs for i in check_config(c, data_root=data_root)]
        result(None, format_items(items))
        if any(i.status == "missing" for i in items):
            raise typer.Exit(1)
        return
    if not smoke:
        if len(cfgs) > 1:
            raise ConfigError("a full run takes one CONFIG (`all` is for --check and --smoke)")
        missing = [i for i in check_config(cfgs[0], data_root=data_root) if i.status == "missing"]
        if missing:
            raise ConfigError(
                f"{len(missing)} item(s) missing, nothing started: "
                + " | ".join(i.line() for i in missing)
                + " (see `localfin reproduce --check "
                + config
                + "`)"
            )
    from agent.reproduce.run import reproduce as run

    root = env.runs_dir() / ("reproduce-smoke" if smoke else "reproduce")
    base = out or root
    with quiet_run(ctx, "reproduce", base) as rl:
        backend = None
        if smoke:
            from serving.open import BackendSpec, model_facts, open_backend

            model_facts(model)  # an unknown key fails before the engine starts
            backend = open_backend(BackendSpec("vllm", model))
            note(rl, f"engine for {model} started in {backend.start():.0f} s")
        try:
            for c in cfgs:
                target = (base / c.name) if (out is None or len(cfgs) > 1) else out
                note(rl, f"{c.name}: {c.paper} {c.table} -> {target}")
                res = run(
                    c, target, smoke=smoke, backend=backend, data_root=data_root, model=model,
                    progress=progress_for(rl),
                )  # fmt: skip
                result(rl, f"{c.name}: report {res.report}")
        finally:
            if backend is not None:
                backend.close()


def _plan(config: str, gpus: int, gpu: str, rehearsed: Path | None) -> None:
    from agent.reproduce.gpu_plan import format_plan, plan_config
    from agent.reproduce.hardware import gpu_kind
    from localfin import env
    from localfin.errors import ConfigError
    from serving.registry import default_registry

    if gpus < 1:
        raise ConfigError(f"--gpus {gpus}; allowed: a whole number >= 1")
    gpu_kind(gpu)
    cfgs = _configs(config)
    texts = []
    base = rehearsed or env.runs_dir() / "rehearse"
    for c in cfgs:
        rehearsal = base / c.name / "rehearsal.json"
        engines = plan_config(c, gpus, gpu, registry=default_registry(), rehearsal=rehearsal)
        text = format_plan(c, gpus, gpu, engines)
        if c.kind == "moira":
            text += "\ncalls per step: " + (
                f"from {rehearsal}" if rehearsal.is_file() else f"no rehearsal at {rehearsal} (one a step)"
            )
        texts.append(text)
    result(None, "\n\n".join(texts))


def _rehearse(ctx: typer.Context, cfgs: list, out: Path | None, paths: str, data_root: Path) -> None:
    from agent.reproduce.rehearse.rehearsal import PATHS, rehearse, write_rehearsal
    from localfin import env
    from localfin.errors import ConfigError
    from serving.registry import default_registry

    chosen = tuple(p.strip() for p in paths.split(",") if p.strip())
    if not chosen or any(p not in PATHS for p in chosen):
        raise ConfigError(f"--paths {paths!r}; allowed: {', '.join(PATHS)} (comma-separated)")
    base = out or env.runs_dir() / "rehearse"
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    with quiet_run(ctx, "reproduce", base) as rl:
        res = rehearse(
            cfgs, base, shared=shared, registry=default_registry(), paths=chosen, progress=progress_for(rl),
            data_root=data_root,
        )  # fmt: skip
        md, _ = write_rehearsal(res, base)
        failed = [
            f"{n}: {c.path} {c.call_type} {c.name}: {c.detail}" for n, r in res.items() for c in r.failed
        ]
        long = [f"{n}: {s.call_type}" for n, r in res.items() for s in r.too_long]
        for n, r in res.items():
            note(rl, f"{n}: {len(r.checks)} checks, {len(r.failed)} failed, wall {r.wall_s}")
        if long:
            note(
                rl, f"{len(long)} prompt bound(s) may not fit the context: {'; '.join(long)} (see the report)"
            )
        result(rl, f"rehearsal report {md}")
    if failed:
        for f in failed:
            typer.echo(f"failed: {f}", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach ``localfin reproduce`` to ``app``."""
    app.command("reproduce")(reproduce)
