"""`localfin reproduce`: the papers' tables as shipped configs (agent/reproduce/configs).

localfin reproduce list                      every config and the table it reproduces
localfin reproduce check CONFIG|all          data, model folders and the GPU placement, present or missing
localfin reproduce settings CONFIG [--json]  every effective setting with its provenance
localfin reproduce run CONFIG [--resume]     run it (refuses while anything is missing)
localfin reproduce smoke CONFIG|all          run it shrunk to CPU size, report included
localfin reproduce rehearse CONFIG|all       its GPU settings on tiny stand-ins, engine and server, checked
localfin reproduce plan CONFIG|all --gpus N --gpu KIND   engines, memory and estimated wall time
localfin reproduce serve CONFIG --nodes N --gpus-per-node G --gpu KIND --node NODE
                                             one node's servers, started as the plan prints them

CONFIG is a shipped config name or a TOML path. The flag form of earlier releases
(``localfin reproduce CONFIG --check``, ``--list``, ``--smoke``, ``--rehearse``, ``--plan``, and
a bare ``localfin reproduce CONFIG`` for a run) still works for one release: :class:`_Group`
routes it to a hidden command that warns, names the new form and calls the same mode function.
"""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from typer.core import TyperGroup

from localfin_cli._common import note, progress_for, quiet_run, result
from localfin_cli.reproduce_cluster import _configs, _inventory, do_plan, do_serve

__all__ = ["app", "register"]

log = logging.getLogger(__name__)

#: the hidden command that takes the flag form of earlier releases
LEGACY = "legacy-flags"


class _Group(TyperGroup):
    """``reproduce``'s group: a first token that is no subcommand (a config name, a path or one
    of the old flags) goes to the hidden :data:`LEGACY` command."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [LEGACY, *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_Group,
    help="Reproduce a table of Moira or FinAcumen from its shipped config.",
    no_args_is_help=True,
)

_CONFIG = "A config name (see `localfin reproduce list`)"
_DATA_ROOT_HELP = "Data folder holding benchmarks/ (default: $LOCALFIN_DATA_DIR)."


def _config_arg(allow_all: bool):
    what = ", a .toml path, or all" if allow_all else " or a .toml path"
    return typer.Argument(None, metavar="CONFIG", help=f"{_CONFIG}{what} (or --config FILE).")


_CONFIG_FILE = typer.Option(None, "--config", help="A config TOML file (instead of CONFIG).")


def _which(config: str | None, config_file: Path | None) -> str:
    """The config named positionally or given with ``--config FILE`` (one of the two)."""
    from localfin.errors import ConfigError

    if config and config_file:
        raise ConfigError(f"CONFIG {config} and --config {config_file} given; allowed: one of them")
    if config_file:
        return str(config_file)
    if not config:
        raise ConfigError(
            "CONFIG is missing; allowed: a name from `localfin reproduce list`, a .toml path, "
            "or --config FILE"
        )
    return config


def _data_root(extra: str = ""):
    return typer.Option(None, "--data-root", help=_DATA_ROOT_HELP + extra)


def _authors_code() -> Path:
    return typer.Option(
        None,
        "--authors-code",
        help="A checkout of the FinAcumen authors' code (CamelliaLilium/FinAcumen at the pinned commit) "
        "for the settings that send their prompt texts, read at run time (sets [qa] authors_code).",
    )


# --- the modes: both command forms call these ---------------------------------------------------


def do_list() -> None:
    from localfin_cli.reproduce_list import table, terminal_width

    result(None, table(terminal_width()))


def do_check(
    config: str, data_root: Path | None, gpus: int | None = None, gpu: str | None = None,
    authors_code: Path | None = None,
) -> None:  # fmt: skip
    from agent.reproduce.check import check_config, format_items
    from agent.reproduce.ledger.resolve import differs_section, resolve_config

    inventory = _inventory(gpus, gpu)
    configs = _configs(config, authors_code)
    items = [i for c in configs for i in check_config(c, data_root=data_root, inventory=inventory)]
    lines = format_items(items).splitlines()
    verdict = lines.pop()  # "11 items checked, 9 missing": the last line, after what differs
    result(None, "\n".join(lines))
    for c in configs:
        result(None, "\n".join(["", *differs_section(c, resolve_config(c), heading=f"{c.name}: ")]))
    result(None, "\n" + verdict)
    if any(i.status == "missing" for i in items):
        raise typer.Exit(1)


def do_dry_run(config: str, gpus: int | None, gpu: str | None) -> None:
    """Print the placement and every engine's start arguments of a full run; start nothing."""
    from agent.reproduce import engine_plan as placing
    from agent.reproduce.dry_run import engine_starts, format_starts
    from serving.models.registry import default_registry

    inventory = _inventory(gpus, gpu)
    reg = default_registry()
    texts, ok = [], True
    for c in _configs(config):
        placed = placing.place(c, inventory, registry=reg)
        text = placing.format_placement(placed)
        if placed.ok:
            text += "\n" + format_starts(c, placed, engine_starts(c, placed, reg))
        ok = ok and placed.ok
        texts.append(text)
    result(None, "\n\n".join(texts))
    if not ok:
        raise typer.Exit(1)


def do_settings(config: str, as_json: bool) -> None:
    import json

    from agent.reproduce.ledger.resolve import format_settings, resolve_config, settings_json
    from agent.reproduce.spec import load_repro

    cfg = load_repro(config)
    rows = resolve_config(cfg)
    if as_json:
        result(None, json.dumps(settings_json(cfg, rows), indent=2, default=str))
    else:
        result(None, format_settings(cfg, rows))


def _refuse_used(folder: Path, config: str, smoke: bool) -> None:
    from localfin.errors import ConfigError

    if folder.is_dir() and any(folder.iterdir()):
        mode = "smoke" if smoke else "run"
        raise ConfigError(
            f"--out {folder} already holds a run; allowed: `localfin reproduce {mode} {config} --resume` "
            "to continue it (every journaled call is replayed), or another --out"
        )


def do_run(
    ctx: typer.Context | None,
    config: str,
    out: Path | None,
    data_root: Path | None,
    *,
    smoke: bool = False,
    model: str = "smollm2-135m",
    resume: bool = True,
    ray: str | None = None,
    endpoint: list[str] | None = None,
    shards: int | None = None,
    authors_code: Path | None = None,
    base_port: int = 8000,
) -> None:
    """A full run (one config) or a smoke run (a config or all) into ``out``; without
    ``resume`` a folder already holding a run is refused. ``ray``: a full run on that Ray
    cluster, its calls to each node's servers or ``endpoint`` (KEY=URL)."""
    from agent.reproduce.check import check_config
    from localfin import env
    from localfin.errors import ConfigError
    from serving.cluster.endpoints import Endpoints, parse_endpoints
    from serving.hardware.gpus import engine_platform, visible_inventory

    if ray is not None:
        from serving.cluster.connect import preflight

        ray = preflight(ray)  # a head that does not answer: nothing read or written
    cfgs = _configs(config, authors_code)
    mode = "smoke" if smoke else "run"
    inventory = None
    if not smoke:
        if len(cfgs) > 1:
            raise ConfigError(
                "a full run takes one CONFIG; allowed: a config name or a .toml path "
                "(`all` is for check, smoke, rehearse and plan)"
            )
        inventory = visible_inventory()  # one look: the check and the run place on the same GPUs
        checked = check_config(cfgs[0], data_root=data_root, inventory=inventory)
        # on a cluster the engines are the serving nodes' (their `vllm serve`): their weights,
        # their GPUs; the data must be here (the driver writes the run from it)
        served = ("model ", "placement", "GPU install")
        missing = [
            i
            for i in checked
            if i.status == "missing" and not (ray is not None and i.what.startswith(served))
        ]
        if missing:
            raise ConfigError(
                f"{len(missing)} item(s) missing, nothing started: "
                + " | ".join(i.line() for i in missing)
                + f" (see `localfin reproduce check {config}`)"
            )
    named = Endpoints.of(parse_endpoints(endpoint or [], "--endpoint"))
    root = env.runs_dir() / ("reproduce-smoke" if smoke else "reproduce")
    base = out or root
    targets = [(c, (base / c.name) if (out is None or len(cfgs) > 1) else out) for c in cfgs]
    if not resume:
        for _, target in targets:
            _refuse_used(target, config, smoke)
    from agent.reproduce.run import reproduce as run_config

    with quiet_run(ctx, "reproduce", base) as rl:
        backend = None
        if smoke:
            from serving.open import BackendSpec, model_facts, open_backend

            model_facts(model)  # an unknown key fails before the engine starts
            backend = open_backend(BackendSpec("vllm", model))
            note(rl, f"engine for {model} started in {backend.start():.0f} s")
        try:
            for c, target in targets:
                note(rl, f"{c.name}: {c.paper} {c.table} ({mode}) -> {target}")
                res = run_config(
                    c, target, smoke=smoke, backend=backend, data_root=data_root, model=model,
                    progress=progress_for(rl),
                    inventory=inventory if engine_platform() == "cuda" and ray is None else None,
                    ray_address=ray, endpoints=named if ray else None, shards=shards, base_port=base_port,
                )  # fmt: skip
                result(rl, f"{c.name}: report {res.report}")
        finally:
            if backend is not None:
                backend.close()


def do_rehearse(
    ctx: typer.Context | None,
    config: str,
    out: Path | None,
    paths: str,
    data_root: Path | None,
    size: str = "default",
    authors_code: Path | None = None,
) -> None:
    from agent.reproduce.rehearse.rehearsal import PATHS, rehearse, write_rehearsal
    from agent.reproduce.rehearse.runs import SIZES
    from localfin import env
    from localfin.errors import ConfigError
    from serving.models.registry import default_registry

    chosen = tuple(p.strip() for p in paths.split(",") if p.strip())
    if not chosen or any(p not in PATHS for p in chosen):
        raise ConfigError(f"--paths {paths!r}; allowed: {', '.join(PATHS)} (comma-separated)")
    if size not in SIZES:
        raise ConfigError(f"--size {size!r}; allowed: {', '.join(SIZES)}")
    cfgs = _configs(config, authors_code)
    # absolute: the rehearsal writes configs into subfolders that name its data by this path
    base = (out or env.runs_dir() / "rehearse").absolute()
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    with quiet_run(ctx, "reproduce", base) as rl:
        res = rehearse(
            cfgs, base, shared=shared, registry=default_registry(), paths=chosen, progress=progress_for(rl),
            data_root=data_root or env.data_dir(), size=SIZES[size],
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


# --- the subcommands --------------------------------------------------------------------------

_PLAN_OUT_HELP = (
    "The `reproduce rehearse` output folder whose journals give the calls per step "
    "(default: $LOCALFIN_RUNS_DIR/rehearse)."
)


_BASE_PORT_HELP = (
    "The port of the config's first engine's server; the next engines' servers take ports 10 apart "
    "(default 8000: 8000, 8010, ...)."
)


@app.command("list")
def list_() -> None:
    """List every shipped config and the table it reproduces."""
    do_list()


@app.command("check")
def check(
    config: str = _config_arg(True),
    config_file: Path = _CONFIG_FILE,
    data_root: Path = _data_root(),
    gpus: int = typer.Option(
        None,
        "--gpus",
        help="Check the placement on this many GPUs of --gpu (default: the GPUs this machine shows).",
    ),
    gpu: str = typer.Option(None, "--gpu", help="GPU kind of --gpus (h100, h200, a100-80g, l40s)."),
    authors_code: Path = _authors_code(),
) -> None:
    """Say which data, model folders and GPUs a config needs, present or missing (exit 1 if any is missing).

    The placement line says where every engine would run on the GPUs, or what would place the
    ones that do not fit (more GPUs, FP8 weights); nothing starts."""
    do_check(_which(config, config_file), data_root, gpus=gpus, gpu=gpu, authors_code=authors_code)


@app.command("settings")
def settings(
    config: str = _config_arg(False),
    config_file: Path = _CONFIG_FILE,
    as_json: bool = typer.Option(False, "--json", help="One JSON document instead of lines."),
) -> None:
    """Print every effective setting of a config, defaults included, with its value and provenance
    (paper, authors, ours, operational; unlisted: a value the protocol ledger does not list) and
    its locator (the paper's section and quote, the authors' file and line)."""
    do_settings(_which(config, config_file), as_json)


@app.command("run")
def run(
    ctx: typer.Context,
    config: str = _config_arg(False),
    config_file: Path = _CONFIG_FILE,
    out: Path = typer.Option(
        None, "--out", help="Output folder (default: $LOCALFIN_RUNS_DIR/reproduce/CONFIG)."
    ),
    data_root: Path = _data_root(),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue the run already in the output folder (journaled calls are replayed).",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print where every engine runs and the vLLM arguments each engine process starts with "
        "on the GPUs; start nothing (no weights or GPU needed).",
    ),
    gpus: int = typer.Option(
        None, "--gpus", help="--dry-run: on this many GPUs of --gpu (default: this machine's)."
    ),
    gpu: str = typer.Option(
        None, "--gpu", help="--dry-run: the GPU kind of --gpus (h100, h200, a100-80g, l40s)."
    ),
    ray: str = typer.Option(
        None,
        "--ray",
        help="Run on the Ray cluster at this address (HOST:PORT of the head, auto, or local): Moira's runs "
        "and FinAcumen's items as Ray tasks against each node's servers. See docs/cluster.md.",
    ),
    endpoint: list[str] = typer.Option(
        None,
        "--endpoint",
        help="With --ray: a server of a model, KEY=URL (repeat); a node's own LOCALFIN_ENDPOINTS come first.",
    ),
    shards: int = typer.Option(
        None, "--shards", help="With --ray: FinAcumen shards per stage (default: two per node)."
    ),
    authors_code: Path = _authors_code(),
    base_port: int = typer.Option(8000, "--base-port", help=_BASE_PORT_HELP),
) -> None:
    """Run a config at its paper settings (refuses while a data or model folder is missing, or
    while its engines cannot be placed on the visible GPUs; with --ray, on a cluster's servers).
    A Moira table placed in stages runs them one after another, each stage's servers started
    and stopped by the run."""
    if dry_run:
        do_dry_run(_which(config, config_file), gpus, gpu)
        return
    if gpus is not None or gpu is not None:
        from localfin.errors import ConfigError

        raise ConfigError(
            "--gpus and --gpu go with --dry-run; allowed: a run uses the GPUs this machine shows"
        )
    do_run(
        ctx, _which(config, config_file), out, data_root, resume=resume, ray=ray, endpoint=endpoint,
        shards=shards, authors_code=authors_code, base_port=base_port,
    )  # fmt: skip


@app.command("smoke")
def smoke(
    ctx: typer.Context,
    config: str = _config_arg(True),
    config_file: Path = _CONFIG_FILE,
    out: Path = typer.Option(
        None, "--out", help="Output folder (default: $LOCALFIN_RUNS_DIR/reproduce-smoke/CONFIG)."
    ),
    data_root: Path = _data_root(),
    model: str = typer.Option("smollm2-135m", "--model", help="Registry key of the CPU model."),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the smoke run already in the output folder."
    ),
    authors_code: Path = _authors_code(),
) -> None:
    """Run a config shrunk to CPU size (synthetic market, demo QA set), report included."""
    do_run(
        ctx, _which(config, config_file), out, data_root, smoke=True, model=model, resume=resume,
        authors_code=authors_code,
    )  # fmt: skip


@app.command("rehearse")
def rehearse(
    ctx: typer.Context,
    config: str = _config_arg(True),
    config_file: Path = _CONFIG_FILE,
    out: Path = typer.Option(None, "--out", help="Output folder (default: $LOCALFIN_RUNS_DIR/rehearse)."),
    paths: str = typer.Option("engine,server", "--paths", help="engine, server or both (comma-separated)."),
    data_root: Path = _data_root(
        " A few items of the released benchmarks there are read; stand-ins are written for the rest."
    ),
    size: str = typer.Option(
        "default",
        "--size",
        help="How far windows and items shrink: default (2 items a set, 2 tool steps, 2 bank items x 2 "
        "trajectories) or smallest (1 of each: every call type still sent, in about half the time).",
    ),
    authors_code: Path = _authors_code(),
) -> None:
    """Run a config at its GPU settings on tiny random stand-ins (engine and server), checked."""
    do_rehearse(ctx, _which(config, config_file), out, paths, data_root, size=size, authors_code=authors_code)


@app.command("plan")
def plan(
    config: str = _config_arg(True),
    config_file: Path = _CONFIG_FILE,
    gpus: int = typer.Option(None, "--gpus", help="Number of GPUs on one node (default 1)."),
    gpu: str = typer.Option("h200", "--gpu", help="GPU kind (h100, h200, a100-80g, l40s)."),
    out: Path = typer.Option(None, "--out", help=_PLAN_OUT_HELP),
    nodes: int = typer.Option(1, "--nodes", help="Nodes of a cluster (with --gpus-per-node)."),
    gpus_per_node: int = typer.Option(
        None, "--gpus-per-node", help="GPUs of each node of a cluster; also prints each node's servers."
    ),
    base_port: int = typer.Option(8000, "--base-port", help=_BASE_PORT_HELP),
) -> None:
    """Print a config's engines (where each goes), memory and an estimated wall time on GPUs of
    one node or of a cluster; for a Moira table, whether its backbones run all at once (each on
    GPUs of its own) or stage after stage, with the time of each stage and of the whole table."""
    do_plan(
        _which(config, config_file), gpus, gpu, out, nodes=nodes, gpus_per_node=gpus_per_node,
        base_port=base_port,
    )  # fmt: skip


@app.command("serve")
def serve(
    config: str = _config_arg(False),
    config_file: Path = _CONFIG_FILE,
    gpus: int = typer.Option(None, "--gpus", help="GPUs of one node (as `reproduce plan --gpus`)."),
    gpu: str = typer.Option(None, "--gpu", help="GPU kind of the plan (h100, h200, a100-80g, l40s)."),
    nodes: int = typer.Option(1, "--nodes", help="Nodes of the cluster (as `reproduce plan --nodes`)."),
    gpus_per_node: int = typer.Option(None, "--gpus-per-node", help="GPUs of each node of the cluster."),
    node: str = typer.Option(None, "--node", help="This node's name in the plan (node0, node1, ...)."),
    stage: int = typer.Option(None, "--stage", help="The stage to serve, where the plan has several."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the servers and start nothing."),
    base_port: int = typer.Option(8000, "--base-port", help=_BASE_PORT_HELP),
) -> None:
    """Start one node's model servers exactly as `reproduce plan --nodes` prints them, one after
    another (each healthy before the next), and print the LOCALFIN_ENDPOINTS for `ray start`;
    Ctrl-C stops them. Without --gpu/--nodes: the config placed on this machine."""
    do_serve(_which(config, config_file), gpus=gpus, gpu=gpu, nodes=nodes, gpus_per_node=gpus_per_node,
             node=node, stage=stage, dry_run=dry_run, base_port=base_port)  # fmt: skip


# --- the flag form of earlier releases ------------------------------------------------------------


@app.command(LEGACY, hidden=True)
def legacy(
    ctx: typer.Context,
    config: str = typer.Argument(None, metavar="[CONFIG]"),
    list_: bool = typer.Option(False, "--list"),
    check: bool = typer.Option(False, "--check"),
    smoke: bool = typer.Option(False, "--smoke"),
    out: Path = typer.Option(None, "--out"),
    data_root: Path = typer.Option(None, "--data-root"),
    model: str = typer.Option("smollm2-135m", "--model"),
    rehearse: bool = typer.Option(False, "--rehearse"),
    plan: bool = typer.Option(False, "--plan"),
    gpus: int = typer.Option(1, "--gpus"),
    gpu: str = typer.Option("h200", "--gpu"),
    paths: str = typer.Option("engine,server", "--paths"),
) -> None:
    """The flag form (`localfin reproduce CONFIG --check`, ...): deprecated, one release left."""
    from localfin.errors import ConfigError

    if list_:
        _deprecated("localfin reproduce --list", "localfin reproduce list")
        do_list()
        return
    if not config:
        raise ConfigError(
            "CONFIG is missing; allowed: a name from `localfin reproduce list`, a .toml path, or all"
        )
    modes = [
        n
        for n, on in (("--check", check), ("--smoke", smoke), ("--rehearse", rehearse), ("--plan", plan))
        if on
    ]
    if len(modes) > 1:
        raise ConfigError(f"{' and '.join(modes)} exclude each other; allowed: one of them")
    mode = modes[0][2:] if modes else "run"
    _deprecated(f"localfin reproduce {' '.join([*modes, config])}", f"localfin reproduce {mode} {config}")
    if plan:
        do_plan(config, gpus, gpu, out)
    elif rehearse:
        do_rehearse(ctx, config, out, paths, data_root)
    elif check:
        do_check(config, data_root)
    else:  # a run, or a smoke run; the flag form always continued a folder's run
        do_run(ctx, config, out, data_root, smoke=smoke, model=model, resume=True)


def _deprecated(old: str, new: str) -> None:
    log.warning("the flag form `%s` is deprecated and goes in the next release; use `%s`", old, new)


def register(root: typer.Typer) -> None:
    """Attach ``localfin reproduce`` to ``root``."""
    root.add_typer(app, name="reproduce")
