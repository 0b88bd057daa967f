"""The modes of `localfin reproduce plan` and `localfin reproduce serve`: a config's engines on
GPUs or a declared cluster, how a table with several stages runs there (all backbones at once,
or stage after stage), and one node's servers. Beside them, the config and inventory helpers
every `reproduce` mode reads (:mod:`localfin_cli.reproduce_cmd` holds the commands)."""

from __future__ import annotations

from pathlib import Path

import typer

from localfin_cli._common import note, result

__all__ = ["do_plan", "do_serve"]


def _configs(name: str, authors_code: Path | None = None):
    from agent.reproduce.qa.authors import with_authors_code
    from agent.reproduce.spec import load_all, load_repro

    return with_authors_code(load_all() if name == "all" else [load_repro(name)], authors_code)


def _inventory(gpus: int | None, gpu: str | None):
    """The declared inventory of ``--gpus N --gpu KIND`` (both or neither), else the visible GPUs."""
    from agent.reproduce.engine_plan import declared_inventory
    from localfin.errors import ConfigError
    from serving.hardware.gpus import visible_inventory

    if gpus is None and gpu is None:
        return visible_inventory()
    if gpus is None or gpu is None:
        raise ConfigError(
            "--gpus and --gpu go together; allowed: both (a declared machine) or neither (this one)"
        )
    return declared_inventory(gpu, gpus)


def do_plan(
    config: str,
    gpus: int | None,
    gpu: str,
    rehearsed: Path | None,
    *,
    nodes: int = 1,
    gpus_per_node: int | None = None,
    base_port: int = 8000,
) -> None:
    """The placement and the plan on ``gpus`` GPUs of one node, or on ``nodes`` nodes of
    ``gpus_per_node`` each (then also the servers each node starts, docs/cluster.md, their
    ports from ``base_port``); for a table with several stages, how it runs there
    (:func:`agent.reproduce.run_modes.run_layout`: all backbones at once, whose servers are
    then printed too, or stage after stage) with the time of each."""
    from agent.reproduce import engine_plan as placing
    from agent.reproduce.cluster_plan import check_base_port, format_node_servers, node_starts
    from agent.reproduce.gpu_plan import format_plan, plan_config
    from agent.reproduce.run_modes import TOGETHER, format_run_layout, run_layout
    from localfin import env
    from serving.models.registry import default_registry

    if gpus is None and gpus_per_node is None:
        gpus = 1
    inventory = placing.declared_inventory(gpu, gpus, nodes=nodes, gpus_per_node=gpus_per_node)
    gpus = inventory.count
    check_base_port(base_port)
    cfgs = _configs(config)
    texts = []
    base = rehearsed or env.runs_dir() / "rehearse"
    reg = default_registry()
    for c in cfgs:
        rehearsal = base / c.name / "rehearsal.json"
        lay = run_layout(c, inventory, registry=reg)
        placement = lay.placement  # the servers' and the run's (all at once, or the stages)
        # the engines' time block: one stage after another (the run's on one machine)
        engines = plan_config(c, gpus, gpu, registry=reg, rehearsal=rehearsal, placement=lay.staged)
        times_of = (
            "each engine in its own stage, the stages one after another (all at once: 'how the table "
            "runs' below)"
            if lay.mode == TOGETHER
            else ""
        )
        text = format_plan(c, gpus, gpu, engines, placement, times_of)
        named = config if config.endswith(".toml") else c.name  # as the user names it
        mode = format_run_layout(lay, named, nodes=len(inventory.nodes))
        if mode:
            text += "\n" + mode
        if nodes > 1 or gpus_per_node is not None or lay.mode == TOGETHER:
            starts = node_starts(c, placement, reg, base_port=base_port) if placement.ok else []
            text += "\n" + format_node_servers(placement, named, starts, base_port)
        if c.kind == "moira":
            text += "\ncalls per step: " + (
                f"from {rehearsal}" if rehearsal.is_file() else f"no rehearsal at {rehearsal} (one a step)"
            )
        texts.append(text)
    result(None, "\n\n".join(texts))


def do_serve(
    config: str,
    *,
    gpus: int | None,
    gpu: str | None,
    nodes: int,
    gpus_per_node: int | None,
    node: str | None,
    stage: int | None,
    dry_run: bool,
    base_port: int = 8000,
) -> None:
    """Place ``config`` as ``reproduce plan`` does (declared cluster, else this machine; a table
    with several stages all at once where it fits, :func:`agent.reproduce.run_modes.run_layout`)
    and start ``node``'s servers of ``stage`` in order, ports from ``base_port`` (``dry_run``:
    print them)."""
    from agent.reproduce import engine_plan as placing
    from agent.reproduce.cluster_plan import node_starts
    from agent.reproduce.node_serve import check_machine, endpoints_line, pick, serve_node
    from agent.reproduce.run_modes import run_layout
    from localfin import env
    from localfin.errors import ConfigError
    from serving.models.registry import default_registry

    declared = gpus is not None or gpus_per_node is not None or nodes != 1
    if declared:
        if gpu is None:
            raise ConfigError(
                "--gpu is missing; allowed: a GPU kind (h100, h200, a100-80g, l40s) with --gpus/--nodes"
            )
        inventory = placing.declared_inventory(gpu, gpus, nodes=nodes, gpus_per_node=gpus_per_node)
    else:
        inventory = _inventory(None, None) if gpu is None else placing.declared_inventory(gpu, 1)
    (cfg,) = _configs(config) if config != "all" else (None,)
    if cfg is None:
        raise ConfigError(
            "reproduce serve takes one CONFIG; allowed: a config name or a .toml path (not all)"
        )
    reg = default_registry()
    placed = run_layout(cfg, inventory, registry=reg).placement
    if not placed.ok:
        raise ConfigError(f"{cfg.name} cannot be placed, nothing started: {placed.problem()}")
    starts = pick(node_starts(cfg, placed, reg, base_port=base_port), node, stage)
    if dry_run:
        result(None, "\n".join([*(s.shown() for s in starts), endpoints_line(starts)]))
        return
    logs = env.localfin_home() / "logs" / f"serve-{cfg.name}"
    check_machine(starts)  # the GPU build and the node's GPUs, before the weights are looked for
    starts = [s.resolved() for s in starts]
    code = serve_node(starts, inventory, logs=logs, say=lambda line: note(None, line),
                      show=lambda line: result(None, line))  # fmt: skip
    if code:
        raise typer.Exit(code)
