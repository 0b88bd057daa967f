"""The real ``vllm serve`` (the tiny Qwen3 on 127.0.0.1) killed mid-run: the N-th engine call
of the run kills the server's process group before it sends its requests (a gate, not a timer).
The client's retries find the port closed, the run stops with ServerUnavailableError (exit code
4 on the command line) and every answered call journaled; a new server on the same port, and
the resumed run ends with the uninterrupted run's replies and results. Slow: two server starts."""

from __future__ import annotations

import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from faults_support import SHAPE, assert_same_results, journal_keys
from moira_support import TINY_PROMPT, small_config, small_store

from agent.pairs.experiment.run import run_experiment
from localfin.errors import ServerUnavailableError
from serving.open import BackendSpec, open_backend

pytestmark = pytest.mark.slow

KILL_AT = 20


class _KillServerAt:
    """Passes calls to ``inner``; its ``at``-th call first kills ``server`` (SIGKILL to its group)."""

    def __init__(self, inner: Any, server: Any, at: int) -> None:
        self.inner, self.server, self.at, self.calls, self.name = inner, server, at, 0, inner.name

    def chat(self, requests):
        self.calls += 1
        if self.calls == self.at:
            os.killpg(self.server.process.pid, signal.SIGKILL)
            self.server.process.wait()
        return self.inner.chat(requests)

    def close(self) -> None:
        self.inner.close()


def _client(url: str) -> Any:
    spec = BackendSpec(
        "openai", "tiny-qwen3", base_url=url, api_key="k", max_retries=2, backoff_s=0.05, backoff_max_s=0.1
    )
    return open_backend(spec)


def test_a_killed_vllm_server_restarted_resumes_to_the_uninterrupted_result(
    tmp_path: Path, tiny_registry: Any
) -> None:
    pytest.importorskip("vllm")
    from serving.http.server import free_port, start_server

    spec = replace(tiny_registry.get("tiny-qwen3"), max_model_len=4096)
    cfg, text = small_config(
        small_store(),
        **SHAPE,
        model={"backbone": "tiny-qwen3", "temperature": 0.0, "thinking": False},
        prompt=TINY_PROMPT,
        screen={"top_k": 3},
    )
    port = free_port()
    server = start_server(spec, port=port, api_key="k", log_path=tmp_path / "serve1.log")
    try:
        ref = tmp_path / "ref"
        client = _client(server.base_url)
        run_experiment(cfg, ref, config_text=text, backend=client)
        client.close()
        out = tmp_path / "exp"
        killer = _KillServerAt(_client(server.base_url), server, KILL_AT)
        with pytest.raises(ServerUnavailableError, match="did not answer after 3 attempt"):
            run_experiment(cfg, out, config_text=text, backend=killer)
        killer.close()
    finally:
        server.stop()
    journaled = journal_keys(out / "journal.sqlite")
    assert len(journaled) >= KILL_AT - 1  # every call answered before the kill is kept

    server = start_server(spec, port=port, api_key="k", log_path=tmp_path / "serve2.log")
    try:
        client = _client(server.base_url)
        res = run_experiment(cfg, out, config_text=text, backend=client, resume=True)
        client.close()
    finally:
        server.stop()
    assert res.replayed >= len(journaled)  # nothing journaled was sent again
    assert res.model_calls == len(journal_keys(ref / "journal.sqlite")) - len(journaled)
    assert_same_results(ref, out)
