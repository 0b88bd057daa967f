"""The model server goes away mid-run, answers 503 or too late, refuses the key or does not
serve the model. The server is the fake OpenAI one on 127.0.0.1 (the scripted Moira model);
each fault fires at a known request (a gate), never on a timer.

Server gone: the HTTP client retries (two quick retries here), then the run stops at the call
boundary with exit code 4 and every answered call journaled (the answered part of the chunk in
flight too); the server restarted on the same port, ``--resume`` sends only the calls never
answered and ends with the uninterrupted run's result."""

from __future__ import annotations

import json

import pytest
from fake_openai import Call, Die, FakeOpenAI, Hold, Status
from faults_support import assert_same_results, journal_keys, openai_config

from localfin.errors import ServerUnavailableError
from serving.chat.types import ChatRequest, Message
from serving.engines.vllm_engine import EngineOptions
from serving.errors import BackendError
from serving.journal import Journal, JournaledBackend
from serving.open import BackendSpec, open_backend

#: the request at which the server dies (of the reference's 89)
DIES_AT = 40


def test_server_dies_mid_run_and_resume_ends_with_the_uninterrupted_result(tmp_path, reference, server, cli):
    server.gates[DIES_AT] = Die()
    config = openai_config(tmp_path, server.base_url)
    out = tmp_path / "exp"
    run = cli("pairs", "run", "--config", config, "--out", out)
    assert run.code == 4, run.err
    assert f"the model server at {server.base_url} did not answer after 3 attempt(s)" in run.err
    assert "restart the server, then rerun with --resume" in run.err
    journaled = journal_keys(out / "journal.sqlite")
    before = list(server.answered)
    assert len(journaled) == DIES_AT - 1 == len(before)  # every answered call kept: 0 lost

    server.revive()  # the server restarted
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err
    # only the calls never answered reached the model again
    assert server.n == reference.requests - len(journaled)
    assert not set(server.answered) & set(before)
    assert_same_results(reference.out, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["backend"]["max_retries"] == 2 and manifest["backend"]["backoff_s"] == 0.01
    assert manifest["config"]["model"]["max_retries"] == 2


def _request(text: str = "x", z: float = 1.0) -> ChatRequest:
    """A direction call the scripted model answers (trade toward the mean of ``z``)."""
    schema = {"type": "object", "properties": {"action": {"type": "string"}, "direction_reason": {}}}
    content = json.dumps({"active_candidate": {"z_trade": z}, "note": text})
    return ChatRequest(
        model="smollm2-135m",
        messages=(Message("user", content),),
        max_tokens=64,
        json_schema=schema,
        call_type="direction",
    )


def _client(srv: FakeOpenAI, **kw) -> object:
    spec = BackendSpec(
        "openai", "smollm2-135m", base_url=srv.base_url, backoff_s=0.01, backoff_max_s=0.02, **kw
    )
    return open_backend(spec)


def test_the_answered_part_of_a_chunk_is_journaled_when_the_server_dies(tmp_path, server):
    server.gates[2] = Die()  # the second of three concurrent requests to arrive
    client = _client(server, max_retries=1)
    reqs = [_request(str(i)) for i in range(3)]
    with Journal(tmp_path / "j.sqlite") as j:
        with pytest.raises(ServerUnavailableError, match="did not answer after 2 attempt"):
            JournaledBackend(client, j).chat(reqs)
        assert j.count() == 1 == len(server.answered)  # the one answered is kept
    client.close()


def test_503_and_a_timeout_are_retried_and_then_answered(server):
    server.gates[1] = Status(503)
    client = _client(server)
    [res] = client.chat([_request()])
    assert res.finish_reason == "stop" and res.parsed["action"] == "SHORT_LONG"
    assert server.n == 2
    client.close()

    # the first attempt hangs past the 0.3 s request timeout; the retry's arrival releases it
    hold = Hold()
    server.gates[3] = hold
    server.gates[4] = Call(lambda s: hold.release.set())
    client = _client(server, timeout_s=0.3)
    [res] = client.chat([_request()])
    assert res.finish_reason == "stop" and server.n == 4
    client.close()


def test_a_request_the_server_refuses_is_its_fallback_and_a_run_of_them_stops(server):
    for n in range(1, 4):
        server.gates[n] = Status(400)
    client = _client(server, engine=EngineOptions(max_failures_in_a_row=3))
    [bad] = client.chat([_request()])
    assert bad.finish_reason == "error" and "HTTP 400" in bad.parse_error  # recorded, run goes on
    with pytest.raises(BackendError, match="failed 3 requests in a row"):
        client.chat([_request("a"), _request("b")])
    client.close()


def test_a_wrong_key_fails_before_the_first_call(tmp_path, cli):
    srv = FakeOpenAI(api_key="secret")
    try:
        config = openai_config(tmp_path, srv.base_url)
        run = cli("pairs", "run", "--config", config, "--out", tmp_path / "exp")
        assert run.code == 2, run.err
        assert "refused the request (HTTP 401" in run.err and "LOCALFIN_API_KEY" in run.err
        assert srv.n == 0  # no chat request was sent
        assert not (tmp_path / "exp" / "journal.sqlite").exists()
        client = open_backend(BackendSpec("openai", "smollm2-135m", base_url=srv.base_url, api_key="secret"))
        client.check()  # the right key passes
        client.close()
    finally:
        srv.close()


def test_a_model_the_server_does_not_serve_fails_before_the_first_call(tmp_path, cli):
    srv = FakeOpenAI(api_key=None, model="tiny-qwen3")
    try:
        config = openai_config(tmp_path, srv.base_url)
        run = cli("pairs", "run", "--config", config, "--out", tmp_path / "exp")
        assert run.code == 2, run.err
        assert "serves ['tiny-qwen3'], not 'smollm2-135m'" in run.err
        assert srv.n == 0
    finally:
        srv.close()
