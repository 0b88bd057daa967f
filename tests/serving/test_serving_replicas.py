"""Data-parallel replicas behind one backend (serving/engines/replicas.py): every replica gets its part
of a call at once, results come back in order, a conversation stays on its replica, and a
layout of several replicas opens one engine per replica."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from serving.chat.scripted import ScriptedBackend
from serving.chat.types import ChatRequest, Message
from serving.engines import vllm_engine
from serving.engines.replicas import ReplicatedBackend
from serving.errors import BackendError, ConfigError
from serving.hardware.gpus import EngineLayout, GpuRef, ReplicaSlot
from serving.open import BackendSpec, open_backend

Opts = vllm_engine.EngineOptions  # built here, never started


class _Replica(ScriptedBackend):
    """A scripted replica that answers with its own number, and waits at a barrier shared with
    the others (so the test proves they run at the same time: a barrier never passes otherwise)."""

    def __init__(self, k: int, barrier: threading.Barrier | None = None, fail: bool = False) -> None:
        super().__init__(default=lambda r: f"replica {k}: {r.messages[-1].content}")
        self.k, self.barrier, self.fail = k, barrier, fail
        self.spec = SimpleNamespace(key="m")
        self.options = Opts()
        self.engine_start_s = None

    def start(self) -> float:
        self.started = getattr(self, "started", 0) + 1
        return 0.0

    def chat(self, requests: Any) -> Any:
        assert getattr(self, "started", 0) == 1  # started once, before any call reached it
        if self.barrier is not None:
            self.barrier.wait(timeout=60)
        if self.fail:
            raise BackendError("engine died")
        return super().chat(requests)


def _req(system: str, user: str, step: str = "") -> ChatRequest:
    msgs = (Message("system", system), Message("user", user)) + ((Message("user", step),) if step else ())
    return ChatRequest(model="m", messages=msgs, max_tokens=8)


def test_a_call_is_spread_over_the_replicas_at_once_and_comes_back_in_order() -> None:
    barrier = threading.Barrier(2)
    be = ReplicatedBackend([_Replica(0, barrier), _Replica(1, barrier)])
    reqs = [_req("s", f"q{i}") for i in range(4)]
    out = be.chat(reqs)
    assert [r.text.split(": ")[1] for r in out] == ["q0", "q1", "q2", "q3"]
    assert [r.text.split(":")[0] for r in out] == ["replica 0", "replica 1", "replica 0", "replica 1"]


def test_a_conversation_stays_on_its_replica() -> None:
    """A ReAct question's later steps start with its first two messages: they go where its first
    step went, whatever else the call holds."""
    be = ReplicatedBackend([_Replica(0), _Replica(1), _Replica(2)])
    first = be.chat([_req("s", "a"), _req("s", "b"), _req("s", "c")])
    later = be.chat([_req("s", "c", "step 2"), _req("s", "a", "step 2"), _req("s", "new")])
    where = {r.text.split(": ")[1]: r.text.split(":")[0] for r in first}
    assert later[0].text.split(":")[0] == where["c"] and later[1].text.split(":")[0] == where["a"]
    assert be.replica_of(_req("s", "b", "step 9")) == 1


def test_a_failing_replica_ends_the_call_with_the_others_answers_kept() -> None:
    be = ReplicatedBackend([_Replica(0), _Replica(1, fail=True)])
    with pytest.raises(BackendError, match="engine died") as info:
        be.chat([_req("s", "q0"), _req("s", "q1"), _req("s", "q2")])
    assert sorted(info.value.done) == [0, 2]  # replica 0's answers travel with the error to the journal


def test_replicas_serve_one_model() -> None:
    other = _Replica(1)
    other.spec = SimpleNamespace(key="other")
    with pytest.raises(ConfigError, match="replicas serve"):
        ReplicatedBackend([_Replica(0), other])
    with pytest.raises(ConfigError, match="allowed: 2 or more"):
        ReplicatedBackend([_Replica(0)])


def test_a_layout_of_two_replicas_opens_two_engines_each_with_its_own_gpu() -> None:
    from serving.models.registry import default_registry

    slots = (ReplicaSlot((GpuRef("local", 0),), 0.4), ReplicaSlot((GpuRef("local", 1),), 0.9))
    spec = BackendSpec("vllm", "tiny-qwen3", engine=Opts(layout=EngineLayout(1, 1, None, slots)))
    be = open_backend(spec, default_registry())  # nothing starts before the first call
    try:
        assert isinstance(be, ReplicatedBackend) and len(be.replicas) == 2
        assert [r.options.layout.replicas for r in be.replicas] == [(slots[0],), (slots[1],)]
        settings = be.settings()
        assert settings["replicas"] == 2 and settings["engine"]["async_scheduling"] is False
    finally:
        be.close()
