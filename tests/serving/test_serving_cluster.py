"""The cluster machinery without a cluster: addresses and the head's probe, each node's servers
and the order a shard chooses among them, the keeper's journal (every answered call kept, a
snapshot restored on another node) and the merge of shard journals."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from serving.chat.types import ChatRequest, ChatResult, Message, Usage
from serving.cluster.connect import check_address, preflight, probe_head
from serving.cluster.endpoints import ANY, Endpoints, node_endpoints, parse_endpoints
from serving.cluster.gather import JournalOnly, merge_journal
from serving.cluster.keeper import JournalKeeper, Relay, write_snapshot
from serving.errors import ClusterUnavailableError, ConfigError, LocalfinError, ServerUnavailableError
from serving.journal import Journal


def _pair(text: str, finish: str = "stop") -> tuple[ChatRequest, ChatResult]:
    req = ChatRequest(model="m", messages=(Message("user", text),), max_tokens=8, call_type="direction")
    res = ChatResult(
        text="{}",
        reasoning=None,
        parsed={},
        parse_error=None,
        finish_reason=finish,
        usage=Usage(1, 1),
        latency_s=0.1,
        backend="b",
        model="m",
        revision="r",
        call_type="direction",
        request_key=req.key(),
    )
    return req, res


def _keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {k for (k,) in db.execute("SELECT key FROM calls")}


def test_addresses_are_checked_and_a_silent_head_is_exit_4_naming_it():
    assert check_address(" auto ") == "auto" and check_address("10.0.0.1:6379") == "10.0.0.1:6379"
    for bad in ("", "ray://10.0.0.1:10001", "10.0.0.1", "host:0", "host:port"):
        with pytest.raises(ConfigError, match="--ray"):
            check_address(bad)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        with pytest.raises(
            ClusterUnavailableError, match=rf"head at 127\.0\.0\.1:{port} did not answer"
        ) as e:
            preflight(f"127.0.0.1:{port}")
    assert e.value.exit_code == 4 and f"ray start --head --port={port}" in str(e.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        probe_head(f"127.0.0.1:{s.getsockname()[1]}")  # something answers: no error


def test_a_shard_prefers_its_node_servers_then_the_named_ones_in_turn(monkeypatch):
    monkeypatch.setenv("LOCALFIN_ENDPOINTS", "a=http://127.0.0.1:8000/v1, http://127.0.0.1:9000/v1/")
    own = node_endpoints()
    assert own == {"a": ("http://127.0.0.1:8000/v1",), ANY: ("http://127.0.0.1:9000/v1",)}
    named = Endpoints.of({"a": ["http://h1:1/v1", "http://h2:1/v1"], "b": ["http://h3:1/v1"]})
    assert named.choose("a", 5, own) == ("http://127.0.0.1:8000/v1", "node")
    assert named.choose("b", 0, own) == ("http://127.0.0.1:9000/v1", "node")  # the node's bare URL
    assert [named.choose("a", i, {})[0] for i in range(3)] == [
        "http://h1:1/v1",
        "http://h2:1/v1",
        "http://h1:1/v1",
    ]
    with pytest.raises(
        ConfigError, match=r"no server for model 'c' on node n1: start the node with LOCALFIN_ENDPOINTS"
    ):
        named.choose("c", 0, {}, where="n1")
    with pytest.raises(ConfigError, match="no model key"):
        parse_endpoints(["=http://x/v1"], "--endpoint")
    with pytest.raises(ConfigError, match="no server address"):
        parse_endpoints(["a=ftp://x"], "--endpoint")
    assert named.with_named("c", ["http://h4:1/v1"]).choose("c", 0, {}) == ("http://h4:1/v1", "run")


def test_the_keeper_keeps_every_answered_call_and_a_snapshot_restores_them_elsewhere(tmp_path):
    keeper = JournalKeeper(str(tmp_path / "keeper"))
    kept: list = []

    class Inner:
        name = "inner"

        def __init__(self) -> None:
            self.n = 0

        def chat(self, requests):
            self.n += 1
            if self.n == 2:  # the server goes away after answering the first request of the call
                raise ServerUnavailableError("gone", done={0: _pair(requests[0].messages[0].content)[1]})
            return [_pair(r.messages[0].content, "error" if "bad" in r.messages[0].content else "stop")[1]
                    for r in requests]  # fmt: skip

        def close(self) -> None:
            return None

    relay = Relay(Inner(), lambda pairs: (kept.extend(pairs), keeper.put("x/s0", pairs)))
    reqs = [_pair(t)[0] for t in ("one", "bad", "two")]
    relay.chat(reqs)
    with pytest.raises(ServerUnavailableError):
        relay.chat([_pair("three")[0], _pair("four")[0]])
    # answered calls kept (an error reply is not journaled), the answered half of the lost call too
    assert keeper.count("x/s0") == 3 and [q.messages[0].content for q, _ in kept] == ["one", "two", "three"]
    assert keeper.begin("x/s0", "n1") == 1 and keeper.begin("x/s0", "n2") == 2
    assert keeper.attempts() == {"x/s0": ["n1", "n2"]}
    snap = keeper.snapshot("x/s0")
    assert keeper.snapshot("x/s1") is None
    restored = tmp_path / "node2" / "journal.sqlite"
    assert write_snapshot(snap, restored) == 3
    assert _keys(restored) == {q.key() for q, _ in kept}
    keeper.close()
    with pytest.raises(ConfigError, match="shard key"):
        keeper.begin("../x", "n1")


def test_merging_shard_journals_keeps_each_call_once_under_the_run_label(tmp_path):
    for name, texts in (("a", ["one", "two"]), ("b", ["two", "three"])):
        with Journal(tmp_path / f"{name}.sqlite", run_id=f"shard-{name}") as j:
            j.put_many([_pair(t) for t in texts])
    dst = tmp_path / "run" / "journal.sqlite"
    assert merge_journal(dst, tmp_path / "a.sqlite", run_id="run") == 2
    assert merge_journal(dst, tmp_path / "b.sqlite", run_id="run") == 1
    assert merge_journal(dst, tmp_path / "b.sqlite", run_id="run") == 0
    with sqlite3.connect(dst) as db:
        assert {r for (r,) in db.execute("SELECT run_id FROM calls")} == {"run"}
    assert len(_keys(dst)) == 3
    with pytest.raises(LocalfinError, match="2 call\\(s\\) missing from the merged journal"):
        JournalOnly("the test run").chat([_pair("x")[0], _pair("y")[0]])
    assert JournalOnly("r", {"backend": "ray cluster"}).settings() == {"backend": "ray cluster"}
