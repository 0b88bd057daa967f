"""Child processes run offline: the server command and its environment come from one plan
(`localfin serve` and `start_server` cannot drift apart again), and that environment forces
every offline switch and, on CPU, the KV-cache size. The engine child itself is run in a
loopback-only network namespace by tests/serving/test_serving_engine.py
(test_killed_engine_batch_resumes_from_the_journal)."""

from __future__ import annotations

import pytest

from localfin import env
from serving.http import server
from serving.models.registry import default_registry


def test_server_env_forces_offline_and_the_cpu_kv_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # a user's setting cannot switch the hub back on
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    reg = default_registry()
    cpu = server.server_env(reg.get("smollm2-135m"))
    assert {k: cpu[k] for k in env.offline_env()} == env.offline_env()
    assert cpu["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert "VLLM_CPU_KVCACHE_SPACE" not in server.server_env(reg.get("qwen3-4b"))
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    assert server.server_env(reg.get("smollm2-135m"))["VLLM_CPU_KVCACHE_SPACE"] == "3"


def test_serve_and_start_server_run_the_same_plan(tiny_registry, tmp_path) -> None:
    """Both run through a :class:`server.Launcher` given here (nothing process-wide is patched:
    the session's own test server may start meanwhile, in another thread, with the real one)."""
    spec = tiny_registry.get("tiny-qwen3")
    seen: dict[str, tuple[list[str], dict[str, str]]] = {}

    class Process:  # a server that answers /health at once
        pid, returncode = 0, None

        def poll(self) -> None:
            return None

    def call(cmd, env):
        seen["serve"] = (cmd, env)
        return 0

    def spawn(cmd, *, env, **kwargs):
        seen["start_server"] = (cmd, env)
        return Process()

    launcher = server.Launcher(spawn=spawn, call=call, healthy=lambda url, headers: True)
    plan = server.plan_server(spec, port=8123, api_key="k")
    assert server.serve(plan, launcher=launcher) == 0
    server.start_server(spec, port=8123, api_key="k", log_path=tmp_path / "s.log", launcher=launcher)
    assert seen["serve"] == seen["start_server"] == (list(plan.command), plan.env)
    assert plan.env["HF_HUB_OFFLINE"] == "1" and plan.env["VLLM_CPU_KVCACHE_SPACE"]
    assert plan.shown().endswith("--api-key '***'") and plan.command[-1] == "k"


def test_a_public_bind_without_a_key_is_noted(tiny_registry) -> None:
    plan = server.plan_server(tiny_registry.get("tiny-qwen3"), host="0.0.0.0")
    assert plan.notes == ("serving on 0.0.0.0 without an API key",)
