"""`reproduce run` of a Moira table in stages on one machine (agent/reproduce/stage_run.py): the
run starts a stage's servers, runs that stage's part of the matrix against them and stops them
before the next stage's start; a stage finished before a restart starts no server; a server that
does not start names its stage and engine and loses nothing computed.

A CPU inventory stands in for the single GPU (two tiny backbones, one stage each, served by the
CPU build's server command); the process start, its /health and its stop are stubbed and what
happened is recorded in order; the cells run for real on the small market with the scripted
model behind each stage's client (asserted on the recorded events, never on timing)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pairs"))
from matrix_support import SHORT, matrix_text
from moira_support import scripted, small_store

from agent.pairs.experiment.matrix_config import load_matrix
from agent.pairs.experiment.plan import cell_done, plan_matrix
from agent.reproduce import run as run_mod
from agent.reproduce import stage_run
from agent.reproduce.cluster_plan import NodeStart
from agent.reproduce.spec import load_repro
from serving.hardware.gpus import Inventory
from serving.models.registry import default_registry

_HEAD = """[reproduce]
name = "staged_cpu"
paper = "moira"
table = "Table 3"
title = "two tiny backbones, one stage each"
kind = "moira"
differs = ["a test config"]
baselines = []
paper_sessions = { main = [10, 20] }

"""


def _config(tmp_path: Path) -> Path:
    """Two backbones (the CPU model, a tiny Qwen3) x one windows set x one seed x No-Beta."""
    text = matrix_text(small_store(), tmp_path / "no-weights", seeds=(0,), exposures=("no_beta",))
    later = text.index('[[windows]]\nname = "later"')
    text = text[:later] + text[text.index("\n\n", later) + 2 :]  # the main windows set only
    assert 'name = "later"' not in text and SHORT["test_end"] in text
    path = tmp_path / "staged_cpu.toml"
    path.write_text(_HEAD + text, encoding="utf-8")
    return path


class _Handle:
    """A started server: its stop is recorded (the real one returns once its processes are gone
    and its GPU memory is back)."""

    def __init__(self, key: str, port: int, events: list[tuple[str, str]]) -> None:
        self.key, self.events, self.base_url = key, events, f"http://127.0.0.1:{port}/v1"

    def stop(self, timeout_s: float = 30.0) -> None:
        self.events.append(("stopped", self.key))


class _Recorded:
    """The scripted model behind a stage's client, recording its first call."""

    def __init__(self, key: str, events: list[tuple[str, str]]) -> None:
        self.key, self.events, self.inner, self.name = key, events, scripted(), f"scripted {key}"

    def chat(self, requests: Any) -> Any:
        if ("call", self.key) not in self.events:
            self.events.append(("call", self.key))
        return self.inner.chat(requests)

    def close(self) -> None:
        pass


@pytest.fixture()
def servers(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The stubs, in agent.reproduce.stage_run alone (a session's own test server starts in a
    thread meanwhile, with the real ones): each server's start (spawn, then /health 200, in the
    order given; serve_node's test has the real one wait for each), client and stop recorded in
    ``events``; the keys in ``fail`` exit at once when spawned."""
    from serving.errors import BackendError

    state: dict[str, Any] = {"events": [], "fail": set(), "ports": {}, "commands": {}}
    events = state["events"]

    def start_in_order(plans, *, ready_timeout_s, say):
        handles = []
        for name, plan, _host, port, _log in plans:
            cmd = list(plan.command)
            key = cmd[cmd.index("--served-model-name") + 1]
            assert key == name and cmd[cmd.index("--port") + 1] == str(port)
            state["ports"][str(port)], state["commands"][key] = key, cmd
            events.append(("spawn", key))
            if key in state["fail"]:
                for h in reversed(handles):
                    h.stop()
                raise BackendError("server exited with code 1; log tail:\n<no log>")
            events.append(("healthy", key))
            handles.append(_Handle(key, port, events))
        return handles

    def client(spec, registry):
        assert spec.kind == "openai" and spec.base_url.startswith("http://127.0.0.1:")
        assert state["ports"][spec.base_url.split(":")[2].split("/")[0]] == spec.model
        return _Recorded(spec.model, events)

    monkeypatch.setattr(stage_run, "_start_in_order", start_in_order)
    monkeypatch.setattr(NodeStart, "resolved", lambda self: self)  # no weights folder looked up
    monkeypatch.setattr(stage_run, "_open_client", client)
    return state


def _run(cfg: Any, out: Path) -> Any:
    return run_mod.reproduce(cfg, out, registry=default_registry(), inventory=Inventory(), html_report=False)


def _metrics(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes() for p in sorted(out.glob("matrix/*/*/runs/*/metrics.json"))
    }


def test_the_run_starts_each_stages_servers_after_the_previous_stages_stopped(servers, tmp_path: Path):
    cfg = load_repro(_config(tmp_path))
    events = servers["events"]
    res = _run(cfg, tmp_path / "out")
    assert events == [
        ("spawn", "smollm2-135m"), ("healthy", "smollm2-135m"), ("call", "smollm2-135m"),
        ("stopped", "smollm2-135m"),
        ("spawn", "tiny-qwen3"), ("healthy", "tiny-qwen3"), ("call", "tiny-qwen3"), ("stopped", "tiny-qwen3"),
    ]  # fmt: skip
    assert {r["backbone"] for r in res.rows} == {"smol", "tiny"}
    # each stage's server: the CPU build's command with the plan's port (8000, then 8010)
    assert servers["ports"] == {"8000": "smollm2-135m", "8010": "tiny-qwen3"}
    assert all(c[1:3] == ["-m", "vllm.entrypoints.openai.api_server"] for c in servers["commands"].values())


def test_a_failing_server_names_its_stage_keeps_the_finished_stage_and_the_restart_skips_it(
    servers, tmp_path: Path
):
    path = _config(tmp_path)
    cfg = load_repro(path)
    out = tmp_path / "out"
    events = servers["events"]
    servers["fail"].add("tiny-qwen3")
    with pytest.raises(stage_run.StageStartError) as err:
        _run(cfg, out)
    msg = str(err.value)
    assert "stage 1: the server of tiny-qwen3 (port 8010) did not start" in msg
    assert "server exited with code 1" in msg and "--resume` goes on from this stage" in msg
    # stage 0 ran and was stopped before stage 1's server was spawned (it exited at once)
    assert events == [
        ("spawn", "smollm2-135m"), ("healthy", "smollm2-135m"), ("call", "smollm2-135m"),
        ("stopped", "smollm2-135m"), ("spawn", "tiny-qwen3"),
    ]  # fmt: skip
    # stage 0's results are on disk, done
    plan = plan_matrix(load_matrix(out / "matrix.toml"), out / "matrix")
    done = {c.folder: cell_done(out / "matrix", c) for c in plan.cells}
    assert done == {"smol/main": True, "tiny/main": False}
    kept = _metrics(out)
    assert kept and all(k.startswith("matrix/smol/") for k in kept)
    # the restart: stage 0 finished, so its server is not started again; stage 1 runs
    servers["fail"].clear()
    events.clear()
    res = _run(cfg, out)
    assert events == [
        ("spawn", "tiny-qwen3"), ("healthy", "tiny-qwen3"), ("call", "tiny-qwen3"), ("stopped", "tiny-qwen3"),
    ]  # fmt: skip
    assert {k: v for k, v in _metrics(out).items() if k in kept} == kept  # nothing computed lost
    assert {r["backbone"] for r in res.rows} == {"smol", "tiny"}


def _two_servers_one_stage(monkeypatch: pytest.MonkeyPatch, events: list[tuple[str, str]], second: Any):
    """A stage of two servers whose second start raises ``second`` (the first starts): its
    plans and the machine check stubbed in agent.reproduce.node_serve (module-local names)."""
    from types import SimpleNamespace

    from agent.reproduce import node_serve

    class _Start:
        def __init__(self, key: str, port: int) -> None:
            self.server = SimpleNamespace(node="local", stage=0, key=key, port=port, gpus=())
            self.url = f"http://127.0.0.1:{port}/v1"

        def resolved(self) -> Any:
            return self

    def start_in_order(plans, *, ready_timeout_s, say):
        ((key, _plan, _host, port, _log),) = plans
        events.append(("spawn", key))
        if key == "b":
            raise second
        return [_Handle(key, port, events)]

    monkeypatch.setattr(node_serve, "check_machine", lambda starts: None)
    monkeypatch.setattr(
        node_serve,
        "server_plans",
        lambda starts, inv, logs: [(s.server.key, None, "", s.server.port, logs) for s in starts],
    )
    monkeypatch.setattr(stage_run, "_start_in_order", start_in_order)
    return stage_run.ServedStages([_Start("a", 8000), _Start("b", 8010)], None, Path("logs"))


@pytest.mark.parametrize("second", [KeyboardInterrupt(), OSError("no such file: vllm")])
def test_a_stage_stopped_at_its_second_server_stops_the_first(monkeypatch: pytest.MonkeyPatch, second: Any):
    """Ctrl-C while a stage's second server starts stops the first and stays a Ctrl-C; any other
    failure stops it too and names the stage and engine."""
    events: list[tuple[str, str]] = []
    served = _two_servers_one_stage(monkeypatch, events, second)
    want = KeyboardInterrupt if isinstance(second, KeyboardInterrupt) else stage_run.StageStartError
    with pytest.raises(want) as err:
        served._start(0, served.starts)
    assert events == [("spawn", "a"), ("spawn", "b"), ("stopped", "a")]
    if want is stage_run.StageStartError:
        assert "stage 0: the server of b (port 8010) did not start" in str(err.value)


def test_a_stop_that_fails_does_not_keep_the_other_servers_running():
    events: list[tuple[str, str]] = []

    class _Stuck(_Handle):
        def stop(self, timeout_s: float = 30.0) -> None:
            super().stop(timeout_s)
            raise stage_run.BackendError("pid 7 still holds 40 GiB of GPU memory")

    handles = [_Handle("a", 8000, events), _Stuck("b", 8010, events), _Handle("c", 8020, events)]
    with pytest.raises(stage_run.BackendError, match="pid 7 still holds"):
        stage_run._stop(handles)
    assert events == [("stopped", "c"), ("stopped", "b"), ("stopped", "a")]
