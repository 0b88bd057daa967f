"""``reproduce serve --node N``: each node's servers start with the in-process engines' arguments
(agent/reproduce/cluster_plan.py, node_serve.py), the plan prints exactly those servers, and a
node's servers start one after another, each healthy before the next (GPU inventories declared:
no GPU needed)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from agent.reproduce import engine_plan as placing
from agent.reproduce.cluster_plan import node_starts
from agent.reproduce.dry_run import engine_starts
from agent.reproduce.spec import load_repro
from serving.engines.engine_args import flags_kwargs
from serving.models.registry import default_registry

#: what a server takes that an in-process engine does not (its front end, its replicas)
SERVER_ONLY = {
    "served_model_name", "host", "port", "enable_prompt_tokens_details", "enable_auto_tool_choice",
    "tool_call_parser", "chat_template", "data_parallel_size",
}  # fmt: skip

CLUSTERS = {"2 x 8 h200": ("h200", 2, 8), "1 x 1 h100": ("h100", 1, 1)}


def _fp8_table3(tmp_path: Path) -> Path:
    """moira_table3_main with FP8 declared for Llama-3.1-70B (what places it on one H200)."""
    src = load_repro("moira_table3_main").source.read_text(encoding="utf-8")
    text = src.replace(
        'key = "llama-3.1-70b"\nname = "l70"', 'key = "llama-3.1-70b"\nname = "l70"\nquantization = "fp8"'
    )
    assert text != src
    path = tmp_path / "t3_fp8.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _config(name: str, tmp_path: Path) -> str:
    return str(_fp8_table3(tmp_path)) if name == "moira_table3_main" else name


def _cluster_args(cluster: str) -> list[str]:
    kind, nodes, per = CLUSTERS[cluster]
    return ["--nodes", str(nodes), "--gpus-per-node", str(per), "--gpu", kind]


def _compare(cfg: Any, placed: Any) -> int:
    """Every server's flags against every in-process replica it serves: each engine argument
    equal (the memory share: the smallest of the server's replicas, equal where they agree),
    the server's own flags aside; its GPUs the replicas' GPUs. Returns the replicas compared."""
    reg = default_registry()
    inproc = engine_starts(cfg, placed, reg)
    compared = 0
    for st in node_starts(cfg, placed, reg):
        server = flags_kwargs(list(st.args))
        env = dict(st.env)
        full = placed.find(st.server.key).layout
        devices = []
        for slot in st.server.slots:
            k = full.replicas.index(slot)
            (mine,) = [e for e in inproc if e.key == st.server.key and e.replica == k]
            want = {a: v for a, v in mine.arguments.kwargs.items() if a not in ("model", "tokenizer")}
            got = {a: v for a, v in server.items() if a not in SERVER_ONLY}
            share = min(s.share for s in st.server.slots)
            assert got == {**want, "gpu_memory_utilization": share}, (st.server, k)
            if len({s.share for s in st.server.slots}) == 1:
                assert server["gpu_memory_utilization"] == want["gpu_memory_utilization"]
            assert {a: v for a, v in env.items() if a != "CUDA_VISIBLE_DEVICES"} == {
                a: v for a, v in mine.arguments.env.items() if a != "CUDA_VISIBLE_DEVICES"
            }
            if "CUDA_VISIBLE_DEVICES" in mine.arguments.env:
                devices.append(mine.arguments.env["CUDA_VISIBLE_DEVICES"])
            compared += 1
        if st.server.spans:
            assert "CUDA_VISIBLE_DEVICES" not in env and server["distributed_executor_backend"] == "ray"
        else:
            assert env["CUDA_VISIBLE_DEVICES"] == ",".join(devices)
            assert server.get("data_parallel_size", 1) == len(st.server.slots)
    return compared


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
@pytest.mark.parametrize("name", ["moira_table3_main", "finacumen_table1"])
def test_each_nodes_servers_take_the_in_process_engines_arguments(
    name: str, cluster: str, tmp_path: Path, cli
):
    cfg = load_repro(_config(name, tmp_path))
    kind, nodes, per = CLUSTERS[cluster]
    placed = placing.place(
        cfg, placing.declared_inventory(kind, nodes=nodes, gpus_per_node=per), registry=default_registry()
    )
    if not placed.ok:  # Llama-3.1-70B in FP8 on one H100: the per-node command refuses, naming why
        assert (name, cluster) == ("moira_table3_main", "1 x 1 h100")
        bad = cli("reproduce", "serve", _config(name, tmp_path), *_cluster_args(cluster), "--stage", "0")
        assert bad.code == 2 and "cannot be placed, nothing started" in bad.err and "llama-3.1-70b" in bad.err
        return
    assert _compare(cfg, placed) == sum(len(e.layout.replicas) for e in placed.engines)
    if name == "moira_table3_main":
        l70 = [s for s in node_starts(cfg, placed, default_registry()) if s.server.key == "llama-3.1-70b"]
        assert l70 and all(flags_kwargs(list(s.args))["quantization"] == "fp8" for s in l70)
        assert all(flags_kwargs(list(s.args))["max_model_len"] == 32_768 for s in l70)


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
@pytest.mark.parametrize("name", ["moira_table3_main", "finacumen_table1"])
def test_the_plan_prints_the_lines_each_nodes_command_starts(name: str, cluster: str, tmp_path: Path, cli):
    from agent.reproduce.run_modes import run_layout

    config = _config(name, tmp_path)
    cfg = load_repro(config)
    kind, nodes, per = CLUSTERS[cluster]
    inv = placing.declared_inventory(kind, nodes=nodes, gpus_per_node=per)
    placed = run_layout(cfg, inv, registry=default_registry()).placement  # the plan's and serve's
    if not placed.ok:
        return  # refused above
    plan = cli("reproduce", "plan", config, *_cluster_args(cluster))
    assert plan.code == 0, plan.err
    starts = node_starts(cfg, placed, default_registry())
    for st in starts:
        node, stage = st.server.node, st.server.stage
        several = len({s.server.stage for s in starts}) > 1
        cmd = ["reproduce", "serve", config, *_cluster_args(cluster), "--node", node]
        cmd += ["--stage", str(stage)] if several else []
        assert f"{node}: localfin {shlex.join(cmd)}" in plan.out
        run = cli(*cmd, "--dry-run")
        assert run.code == 0, run.err
        assert st.shown() in run.out.splitlines()  # the server the command starts ...
        assert f"      {st.shown()}" in plan.out.splitlines()  # ... is the line the plan prints
    if name == "moira_table3_main":  # room for every backbone at once: one command per node
        assert "how the table runs: all backbones at once" in plan.out and "--stage" not in plan.out


def test_a_node_or_stage_the_plan_lacks_is_refused_naming_those_it_has(cli, tmp_path: Path):
    run = cli("reproduce", "serve", "finacumen_table1", *_cluster_args("2 x 8 h200"), "--node", "node7")
    assert run.code == 2 and "allowed: node0, node1" in run.err
    run = cli("reproduce", "serve", "finacumen_table1", *_cluster_args("2 x 8 h200"))
    assert run.code == 2 and "--node is missing; allowed: node0, node1" in run.err
    t3 = str(_fp8_table3(tmp_path))
    two = ["--nodes", "2", "--gpus-per-node", "2", "--gpu", "h200"]  # no room for all at once: stages
    run = cli("reproduce", "serve", t3, *two, "--node", "node0", "--dry-run")
    assert run.code == 2 and "--stage is missing" in run.err and "allowed: 0, 1, 2, 3, 4, 5" in run.err


# --- two engines on one device start one after another ------------------------------------------

_MODELS = """
[[models]]
key = "tiny-qwen3"
extends = "tiny-qwen3"
path = "{path}"

[[models]]
key = "tiny-judge"
extends = "tiny-qwen3"
path = "{path}"
"""


def _cpu_qa_config(tmp_path: Path) -> Path:
    """finacumen_table1 with a tiny solver and a tiny judge: on a machine without GPUs both run
    on the CPU build, on this one device."""
    src = load_repro("finacumen_table1").source.read_text(encoding="utf-8")
    text = src.replace('model = "qwen3-vl-8b"', 'model = "tiny-qwen3"', 1)
    text = text.replace('judge_model = "qwen3-4b-nothink"', 'judge_model = "tiny-judge"')
    assert text.count("tiny-") == 2
    path = tmp_path / "qa_cpu.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _cpu_starts(tmp_path: Path, model_dir: Path) -> list[Any]:
    from dataclasses import replace

    from serving.hardware.gpus import Inventory

    reg = default_registry()
    reg = reg.with_spec(reg.get("tiny-qwen3").with_path(model_dir))
    reg = reg.with_spec(replace(reg.get("tiny-qwen3"), key="tiny-judge"))
    cfg = load_repro(_cpu_qa_config(tmp_path))
    placed = placing.place(cfg, Inventory(), registry=reg)
    return node_starts(cfg, placed, reg)


def test_the_second_server_spawns_only_after_the_first_answers_health(tmp_path: Path) -> None:
    """The process start and the health check passed to the command (nothing process-wide is
    patched: the session's own test server may start meanwhile, in another thread, with the real
    ones): each spawn runs ``sleep`` in the server's place and records its order; each server's
    first /health answers 'not yet', so the start must wait for its 200; the real stop ends both."""
    import shutil
    import signal
    import subprocess

    from agent.reproduce import node_serve
    from serving.http.server import Launcher

    starts = _cpu_starts(tmp_path, tmp_path / "weights")
    assert [s.server.key for s in starts] == ["tiny-judge", "tiny-qwen3"]  # the fixed share first
    sleep = shutil.which("sleep")
    assert sleep
    events: list[tuple[str, str]] = []
    ports: dict[str, str] = {}
    asked: dict[str, int] = {}
    procs: list[subprocess.Popen[bytes]] = []

    def spawn(cmd, **kw):
        key = cmd[cmd.index("--served-model-name") + 1]
        ports[cmd[cmd.index("--port") + 1]] = key
        events.append(("spawn", key))
        procs.append(subprocess.Popen([sleep, "600"], **kw))  # its own session, as a server's
        return procs[-1]

    def healthy(url, headers):
        key = ports[url.split(":")[2].split("/")[0]]
        asked[key] = asked.get(key, 0) + 1
        events.append(("healthy" if asked[key] > 1 else "not ready", key))
        return asked[key] > 1

    shown: list[str] = []
    code = node_serve.serve_node(
        starts, None, logs=tmp_path / "logs", say=lambda line: None, show=shown.append, wait=False,
        launcher=Launcher(spawn=spawn, healthy=healthy, pause=lambda s: None),
    )  # fmt: skip
    assert code == 0
    assert events == [
        ("spawn", "tiny-judge"), ("not ready", "tiny-judge"), ("healthy", "tiny-judge"),
        ("spawn", "tiny-qwen3"), ("not ready", "tiny-qwen3"), ("healthy", "tiny-qwen3"),
    ]  # fmt: skip
    assert shown == [
        "LOCALFIN_ENDPOINTS=tiny-judge=http://127.0.0.1:8010/v1,tiny-qwen3=http://127.0.0.1:8000/v1"
    ]
    assert [p.returncode for p in procs] == [-signal.SIGTERM, -signal.SIGTERM]  # both stopped, reaped


@pytest.mark.slow
@pytest.mark.engine
def test_reproduce_serve_starts_two_cpu_servers_the_second_after_the_first_is_healthy(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    """The per-node command, as a user runs it, on this machine's CPU build: the judge's server
    answers /health before the solver's process is spawned (the command's own record of events),
    both then answer, and Ctrl-C stops both."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    import httpx

    for port in (8000, 8010):  # the plan's ports (cluster_plan.BASE_PORT, PORT_STEP)
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                pytest.skip(f"port {port} is taken on this machine")
    models = tmp_path / "models.toml"
    models.write_text(_MODELS.format(path=tiny_model_dir), encoding="utf-8")
    config = _cpu_qa_config(tmp_path)
    env = dict(os.environ, LOCALFIN_MODELS_FILE=str(models), LOCALFIN_HOME=str(tmp_path / "home"))
    cmd = [sys.executable, "-m", "localfin_cli.main", "reproduce", "serve", str(config)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # the endpoints: printed once both servers are healthy
        assert line.startswith("LOCALFIN_ENDPOINTS="), (line, proc.stderr.read() if proc.poll() else "")
        for url in ("http://127.0.0.1:8010", "http://127.0.0.1:8000"):
            assert httpx.get(f"{url}/health", timeout=5, trust_env=False).status_code == 200
        names = httpx.get("http://127.0.0.1:8000/v1/models", timeout=5, trust_env=False).json()
        assert [m["id"] for m in names["data"]] == ["tiny-qwen3"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    said = [ln for ln in proc.stderr.read().splitlines() if "starting tiny-" in ln or "healthy at" in ln]
    order = [
        ("start" if "starting" in ln else "healthy", "judge" if "tiny-judge" in ln else "solver")
        for ln in said
    ]
    assert order == [("start", "judge"), ("healthy", "judge"), ("start", "solver"), ("healthy", "solver")]
    with pytest.raises(httpx.HTTPError):
        httpx.get("http://127.0.0.1:8000/health", timeout=2, trust_env=False)


@pytest.mark.slow
def test_vllms_own_parser_reads_each_servers_flags_as_the_in_process_arguments(tmp_path: Path) -> None:
    """Each server line of the cluster plan, parsed by vLLM 0.32's own `vllm serve` argument
    parser: every in-process engine argument comes out with the in-process value."""
    pytest.importorskip("vllm")
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    reg = default_registry()
    for name in ("moira_table3_main", "finacumen_table1"):
        cfg = load_repro(_config(name, tmp_path))
        placed = placing.place(
            cfg, placing.declared_inventory("h200", nodes=2, gpus_per_node=8), registry=reg
        )
        inproc = {e.key: e.arguments.kwargs for e in engine_starts(cfg, placed, reg)}
        for st in node_starts(cfg, placed, reg):
            ns = vars(parser.parse_args(["--model", st.path, *st.args]))
            want = {a: v for a, v in inproc[st.server.key].items() if a not in ("model", "tokenizer")}
            for arg, value in want.items():
                got = ns[arg]
                if arg == "structured_outputs_config":
                    got = {k: getattr(got, k) for k in value}
                if arg == "gpu_memory_utilization":
                    value = st.server.share
                assert got == value, (st.server.key, arg, got, value)


def test_localfin_serve_keeps_fp8_and_places_the_70b_at_that_size(cli, monkeypatch) -> None:
    """`localfin serve llama-3.1-70b --quantization fp8` on one H200 (faked): one GPU at tp 1,
    served with --quantization fp8 (in bf16 it needs two)."""
    from serving.http import server

    monkeypatch.setattr(server, "engine_platform", lambda: "cuda")
    monkeypatch.setattr(server, "visible_inventory", lambda: placing.declared_inventory("h200", 1))
    run = cli("serve", "llama-3.1-70b", "--quantization", "fp8", "--dry-run")
    assert run.code == 0, run.err
    flags = flags_kwargs(shlex.split(run.out.strip().splitlines()[-1]))
    assert (flags["quantization"], flags["tensor_parallel_size"], flags["max_model_len"]) == (
        "fp8",
        1,
        32_768,
    )


def test_a_replica_spanning_nodes_is_one_vllm_serve_with_every_engine_argument(tmp_path: Path) -> None:
    """Llama-3.1-70B with two pipeline stages declared, on 2 nodes x 2 H100: one server over both
    nodes (Ray), started from node0, with the in-process engine's arguments (context, seed,
    parsers, structured outputs, scheduling, batching), not vLLM's defaults."""
    src = load_repro("moira_table3_main").source.read_text(encoding="utf-8")
    path = tmp_path / "t3_pp.toml"
    path.write_text(src.replace('name = "l70"', 'name = "l70"\npipeline_parallel = 2'), encoding="utf-8")
    cfg = load_repro(path)
    reg = default_registry()
    placed = placing.place(cfg, placing.declared_inventory("h100", nodes=2, gpus_per_node=2), registry=reg)
    (l70,) = [s for s in node_starts(cfg, placed, reg) if s.server.key == "llama-3.1-70b"]
    assert l70.server.node == "node0" and l70.server.spans == ("node0", "node1")
    flags = flags_kwargs(list(l70.args))
    assert flags["pipeline_parallel_size"] == 2 and flags["distributed_executor_backend"] == "ray"
    assert (flags["max_model_len"], flags["seed"], flags["async_scheduling"]) == (32_768, 0, False)
    assert flags["structured_outputs_config"]["backend"] == "guidance"
    assert flags["max_num_batched_tokens"] == 8192 and flags["tool_call_parser"] == "llama3_json"
    assert _compare(cfg, placed) == sum(len(e.layout.replicas) for e in placed.engines if e.layout)
