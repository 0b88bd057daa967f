"""Request/result values, reply parsing and the registry: validation that names the parameter."""

from __future__ import annotations

import pytest

from serving.chat.replies import build_result, first_json_object, parse_reply, split_reasoning
from serving.chat.types import ChatRequest, ChatResult, Message, Usage, image_data_url
from serving.errors import ConfigError, ModelNotPreparedError
from serving.http.server import serve_args
from serving.models.registry import ModelSpec, default_registry

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
        "reason": {"type": "string", "maxLength": 40},
    },
    "required": ["action", "reason"],
    "additionalProperties": False,
}


def req(**kw) -> ChatRequest:
    base = dict(model="tiny-qwen3", messages=(Message("user", "hi"),), max_tokens=16)
    base.update(kw)
    return ChatRequest(**base)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("max_tokens", 0, "max_tokens"),
        ("max_tokens", 2.5, "max_tokens"),
        ("temperature", -1.0, "temperature"),
        ("top_p", 0.0, "top_p"),
        ("thinking", "yes", "thinking"),
        ("call_type", "Bad Label", "call_type"),
        ("messages", (), "messages"),
        ("model", "", "model"),
        ("repetition_penalty", 9.0, "repetition_penalty"),
        ("json_schema", {"x": object()}, "json_schema"),
    ],
)
def test_request_validation_names_the_parameter(field, value, needle):
    with pytest.raises(ConfigError, match=needle):
        req(**{field: value})


def test_message_role_and_images_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="role"):
        Message("robot", "x")
    with pytest.raises(ConfigError, match="data:image"):
        Message("user", "x", ("http://example.com/a.png",))
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 16)
    url = image_data_url(png)
    assert url.startswith("data:image/png;base64,")
    m = Message("user", "see", (url,))
    assert m.to_openai()["content"][1]["image_url"]["url"] == url


def test_key_is_stable_and_sensitive_to_every_field():
    a, b = req(), req()
    assert a.key() == b.key()
    variants = [
        req(max_tokens=17),
        req(temperature=0.5),
        req(seed=1),
        req(thinking=True),
        req(json_schema=SCHEMA),
        req(call_type="direction"),
        req(stop=("x",)),
        req(messages=(Message("user", "hi!"),)),
    ]
    keys = {v.key() for v in variants}
    assert a.key() not in keys and len(keys) == len(variants)
    assert ChatRequest.from_dict(req(json_schema=SCHEMA).to_dict()) == req(json_schema=SCHEMA)


def test_split_reasoning_variants():
    assert split_reasoning('<think>\nplan\n</think>\n\n{"a":1}') == ('{"a":1}', "plan")
    assert split_reasoning("plan</think>answer") == ("answer", "plan")
    assert split_reasoning("<think>never closed") == ("", "never closed")
    assert split_reasoning("plain") == ("plain", None)


def test_in_thinking_mode_a_tagless_reply_is_reasoning_as_vllms_qwen3_parser_reads_it():
    # thinking on + a reasoning parser: the reply starts in reasoning, tags or not
    assert split_reasoning("still pondering the spread", thinking=True) == ("", "still pondering the spread")
    assert split_reasoning("plan</think>{}", thinking=True) == ("{}", "plan")
    assert split_reasoning('plan <tool_call>{"name": "x"}', thinking=True) == (
        '<tool_call>{"name": "x"}',
        "plan",
    )
    assert split_reasoning("plan <tool_call>x") == ("plan <tool_call>x", None)  # not in thinking mode


def test_thinks_follows_the_parser_and_the_request_then_the_default():
    from serving.chat.replies import thinks
    from serving.models.registry import default_registry

    reg = default_registry()
    q4, q4off, l8 = reg.get("qwen3-4b"), reg.get("qwen3-4b-nothink"), reg.get("llama-3.1-8b")
    assert thinks(req(model="qwen3-4b"), q4) and not thinks(req(model="qwen3-4b"), q4off)
    assert thinks(req(model="qwen3-4b", thinking=True), q4off)
    assert not thinks(req(model="qwen3-4b", thinking=False), q4)
    assert not thinks(req(model="llama-3.1-8b", thinking=True), l8)  # no reasoning parser


def test_a_thinking_reply_cut_at_max_tokens_is_reasoning_only_and_a_fallback():
    res = build_result(
        req(json_schema=SCHEMA),
        "the spread is wide, so",
        finish_reason="length",
        usage=Usage(3, 16),
        latency_s=0.1,
        backend="t",
        revision="r",
        thinking=True,
    )
    assert res.text == "" and res.reasoning == "the spread is wide, so"
    assert res.is_fallback and res.parsed is None and "while thinking" in res.parse_error


def test_parse_reply_checks_schema():
    ok, err = parse_reply('{"action": "FLAT", "reason": "r"}', SCHEMA)
    assert err is None and ok["action"] == "FLAT"
    bad, err = parse_reply('{"action": "BUY", "reason": "r"}', SCHEMA)
    assert bad is None and "action" in err
    bad, err = parse_reply('{"action": "FLAT", "reas', SCHEMA)
    assert bad is None and err.startswith("invalid JSON")
    assert parse_reply("anything", None) == (None, None)
    fenced, err = parse_reply('```json\n{"action": "FLAT", "reason": ""}\n```', SCHEMA)
    assert err is None and fenced["reason"] == ""


def test_length_finish_is_a_fallback_even_if_text_parses():
    r = req(json_schema=SCHEMA)
    res = build_result(
        r,
        '{"action": "FLAT", "reason": "x"}',
        finish_reason="length",
        usage=Usage(3, 16),
        latency_s=0.1,
        backend="t",
        revision="r",
    )
    assert res.parsed is None and res.is_fallback and "length" in res.parse_error
    again = ChatResult.from_dict(res.to_dict())
    assert again == res


def test_thinking_reply_is_split_before_parsing():
    r = req(json_schema=SCHEMA)
    res = build_result(
        r,
        '<think>{"not": "this"}</think>{"action": "FLAT", "reason": "x"}',
        finish_reason="stop",
        usage=Usage(1, 1),
        latency_s=0.0,
        backend="t",
        revision="r",
    )
    assert res.parsed == {"action": "FLAT", "reason": "x"}
    assert res.reasoning == '{"not": "this"}'


def test_registry_keys_and_errors(tmp_path, monkeypatch):
    reg = default_registry()
    for key in [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "qwen3-4b",
        "qwen3-4b-nothink",
        "qwen3-32b",
        "qwen3-32b-nothink",
        "qwen3-vl-8b",
        "smollm2-135m",
        "tiny-qwen3",
    ]:
        assert reg.get(key).key == key
    with pytest.raises(ConfigError, match=r"unknown model key 'gpt-4'.*allowed"):
        reg.get("gpt-4")
    q = reg.get("qwen3-4b")
    assert q.reasoning_parser == "qwen3" and q.thinking_default is True
    assert reg.get("qwen3-4b-nothink").thinking_default is False
    assert reg.get("qwen3-vl-8b").accepts_images and not q.accepts_images
    assert reg.get("llama-3.1-8b").default_max_tokens == 16_384 and q.timeout_s == 600
    args = serve_args(reg.get("qwen3-32b"), port=9000, platform="cuda")
    # the least tensor parallelism; the placement widens it where one GPU cannot hold the model
    assert args[args.index("--tensor-parallel-size") + 1] == "1" and "--no-async-scheduling" in args
    assert "--reasoning-parser" in args and "--enable-prompt-tokens-details" in args
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(tmp_path))
    with pytest.raises(ModelNotPreparedError, match="Qwen/Qwen3-4B"):
        q.resolve_path()
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        ModelSpec("x", "x", "local_dir", tensor_parallel_size=0)
    with pytest.raises(ConfigError, match="source"):
        ModelSpec("x", "x", "hub")


class _Started:
    """An engine that pretends to be started: only its tokenizer answers (a one-token prompt)."""

    def get_tokenizer(self):
        return self

    def apply_chat_template(self, conv, **kw):
        return [1]


def test_a_dead_engine_raises_instead_of_recording_fallbacks(tiny_registry):
    from serving.engines.vllm_engine import VLLMBackend
    from serving.errors import BackendError

    class EngineDeadError(RuntimeError):
        pass

    backend = VLLMBackend("tiny-qwen3", registry=tiny_registry)
    backend._llm = _Started()  # pretend started; nothing is loaded

    def dies(reqs, thinking):
        raise EngineDeadError("EngineCore encountered an issue")

    backend._run_group = dies
    with pytest.raises(BackendError, match="died"):
        backend.chat([req(), req(seed=3)])
    assert backend._llm is None


def test_one_bad_request_is_isolated_as_a_recorded_fallback(tiny_registry):
    from serving.chat.replies import build_result
    from serving.engines.vllm_engine import VLLMBackend

    backend = VLLMBackend("tiny-qwen3", registry=tiny_registry)
    backend._llm = _Started()

    def run(reqs, thinking):
        if any(r.max_tokens == 13 for r in reqs):
            raise ValueError("prompt too long")
        return [
            build_result(
                r, "ok", finish_reason="stop", usage=Usage(1, 1), latency_s=0.0, backend="vllm", revision="r"
            )
            for r in reqs
        ]

    backend._run_group = run
    out = backend.chat([req(), req(max_tokens=13), req(seed=5)])
    assert [r.finish_reason for r in out] == ["stop", "error", "stop"]
    assert "prompt too long" in out[1].parse_error and out[1].is_fallback


def test_an_unconstrained_request_keeps_its_schema_for_the_check_and_has_its_own_key():
    constrained, free = req(json_schema=SCHEMA), req(json_schema=SCHEMA, constrained=False)
    # the default is left out of the key's document, so constrained requests keep the keys
    # they had before the field existed (journals of earlier runs still replay)
    assert "constrained" not in constrained.to_dict() and free.to_dict()["constrained"] is False
    assert constrained.key() != free.key()
    assert ChatRequest.from_dict(free.to_dict()) == free
    assert ChatRequest.from_dict(constrained.to_dict()) == constrained
    with pytest.raises(ConfigError, match="constrained"):
        req(constrained="no")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('{"action": "FLAT", "reason": "r"}', "FLAT"),
        ('Here is my answer:\n{"action": "SHORT_LONG", "reason": "wide spread"}\nThanks.', "SHORT_LONG"),
        ('```json\n{"action": "LONG_SHORT", "reason": ""}\n```', "LONG_SHORT"),
        ('Draft {not json} then {"action": "FLAT", "reason": "x"}', "FLAT"),
        ('Step 1: {"note": 1} is an object too; {"action": "FLAT", "reason": "x"}', None),
    ],
)
def test_an_unconstrained_reply_is_read_for_its_first_json_object(text, want):
    value, err = parse_reply(text, SCHEMA, constrained=False)
    if want is None:  # the first object decodes, and fails the schema: no second guess
        assert value is None and err.startswith("schema violation")
    else:
        assert err is None and value["action"] == want
    # a constrained reply must be JSON as a whole
    if not text.startswith(("{", "```")):
        assert parse_reply(text, SCHEMA)[1].startswith("invalid JSON")


def test_an_unconstrained_reply_without_json_is_a_fallback_that_keeps_its_text():
    assert first_json_object("I would go long the spread.") == (None, "no JSON object in the reply")
    assert first_json_object('{"action": "FLAT", "reas')[1].startswith("invalid JSON")
    r = req(json_schema=SCHEMA, constrained=False)
    res = build_result(
        r,
        "<think>z is 2.1</think>I choose SHORT_LONG because the spread is wide.",
        finish_reason="stop",
        usage=Usage(1, 9),
        latency_s=0.0,
        backend="t",
        revision="r",
        thinking=True,
    )
    assert res.is_fallback and res.parsed is None and res.parse_error == "no JSON object in the reply"
    assert res.text == "I choose SHORT_LONG because the spread is wide." and res.reasoning == "z is 2.1"
    thought = build_result(
        r,
        '<think>{"action": "LONG_SHORT", "reason": "draft"}</think>{"action": "FLAT", "reason": "x"}',
        finish_reason="stop",
        usage=Usage(1, 9),
        latency_s=0.0,
        backend="t",
        revision="r",
    )
    assert thought.parsed == {"action": "FLAT", "reason": "x"}  # only the final text is read


def test_only_constrained_requests_send_their_schema_to_the_server():
    from serving.http.openai_http import OpenAIBackend

    reg = default_registry()
    http = OpenAIBackend("http://127.0.0.1:9/v1", registry=reg)
    spec = reg.get("smollm2-135m")
    assert http._body(req(model="smollm2-135m", json_schema=SCHEMA), spec)["structured_outputs"] == {
        "json": SCHEMA
    }
    assert "structured_outputs" not in http._body(
        req(model="smollm2-135m", json_schema=SCHEMA, constrained=False), spec
    )
