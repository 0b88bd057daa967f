"""Native tool calls across the chat interface: a request's tools and an assistant's tool calls
are plain data (journal keys of requests without them are unchanged); the HTTP backend sends the
tools and reads the server's calls; the in-process engine renders the tools with the chat
template and reads the reply with vLLM's tool-call parser of the model's registry entry; the
scripted backend reads Hermes-style calls for unit tests."""

from __future__ import annotations

import json

import pytest

from serving.errors import ConfigError
from serving.scripted import ScriptedBackend, tagged_tool_calls
from serving.types import ChatRequest, ChatResult, Message, ToolCall

TOOL = {
    "type": "function",
    "function": {
        "name": "terminate",
        "description": "end",
        "parameters": {"type": "object", "properties": {"final_answer": {"type": "string"}}},
    },
}


def test_tools_and_tool_calls_are_plain_data_and_old_keys_stand() -> None:
    plain = ChatRequest("m", (Message("user", "hi"),), max_tokens=8)
    d = plain.to_dict()
    assert "tools" not in d and "tool_choice" not in d
    assert set(d["messages"][0]) == {"role", "content", "images"}  # the fields of earlier journals
    assert plain.key() == ChatRequest.from_dict(d).key()
    conv = (
        Message("user", "q"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "terminate", '{"final_answer": "1"}'),)),
        Message("tool", "done", tool_call_id="c1", name="terminate"),
    )
    req = ChatRequest("m", conv, max_tokens=8, tools=(TOOL,), tool_choice="auto")
    back = ChatRequest.from_dict(json.loads(json.dumps(req.to_dict())))
    assert back == req and back.key() == req.key() != plain.key()
    assert req.messages[1].to_openai()["tool_calls"][0]["function"] == {
        "name": "terminate",
        "arguments": '{"final_answer": "1"}',
    }
    assert req.messages[2].to_openai() == {
        "role": "tool",
        "content": "done",
        "tool_call_id": "c1",
        "name": "terminate",
    }
    with pytest.raises(ConfigError, match="tool_choice='any'"):
        ChatRequest("m", conv, max_tokens=8, tools=(TOOL,), tool_choice="any")
    with pytest.raises(ConfigError, match=r"tools\[0\]"):
        ChatRequest("m", conv, max_tokens=8, tools=({"type": "function"},))
    with pytest.raises(ConfigError, match="assistant messages only"):
        Message("user", "x", tool_calls=(ToolCall("c", "t"),))
    res = ScriptedBackend(
        default='ok <tool_call>{"name": "terminate", "arguments": {"final_answer": "2"}}</tool_call>'
    ).chat([req])[0]
    assert res.text == "ok" and res.tool_calls == (ToolCall("call_0", "terminate", '{"final_answer": "2"}'),)
    again = ChatResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert again.tool_calls == res.tool_calls
    assert "tool_calls" not in ScriptedBackend(default="x").chat([plain])[0].to_dict()


def test_tagged_calls_skip_a_block_that_is_not_a_call() -> None:
    text, calls = tagged_tool_calls(
        'a <tool_call>{bad</tool_call> <tool_call>{"name": "x", "arguments": "{}"}</tool_call>'
    )
    assert calls == (ToolCall("call_1", "x", "{}"),) and text == "a "
    assert tagged_tool_calls("no calls") == ("no calls", ())


def test_the_http_backend_sends_the_tools_and_reads_the_servers_calls() -> None:
    from serving.openai_http import OpenAIBackend
    from serving.registry import default_registry

    reg = default_registry()
    backend = OpenAIBackend("http://127.0.0.1:9/v1", registry=reg)
    req = ChatRequest("qwen3-vl-8b", (Message("user", "q"),), max_tokens=8, tools=(TOOL,))
    body = backend._body(req, reg.get("qwen3-vl-8b"))
    assert body["tools"] == [TOOL] and body["tool_choice"] == "auto"
    call = {"id": "chatcmpl-tool-9f", "type": "function",
            "function": {"name": "terminate", "arguments": '{"final_answer": "3"}'}}  # fmt: skip
    message = {"content": None, "tool_calls": [call]}
    data = {
        "choices": [{"finish_reason": "tool_calls", "message": message}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    res = backend._result(req, data, 0.1, reg.get("qwen3-vl-8b"))
    assert res.finish_reason == "stop" and res.text == ""
    assert res.tool_calls == (ToolCall("call_0", "terminate", '{"final_answer": "3"}'),)  # ids numbered


def test_the_engine_renders_tools_and_reads_calls_with_the_models_parser(vllm_vl_backend) -> None:
    pytest.importorskip("vllm")
    backend = vllm_vl_backend
    assert backend.spec.tool_call_parser == "hermes"
    req = ChatRequest(backend.spec.key, (Message("user", "q"),), max_tokens=8, tools=(TOOL,))
    text, calls = backend.tool_calls(
        req, 'x <tool_call>\n{"name": "terminate", "arguments": {"final_answer": "4"}}\n</tool_call>'
    )
    assert text == "x " and calls == (ToolCall("call_0", "terminate", '{"final_answer": "4"}'),)
    assert backend.tool_calls(req, "no call") == ("no call", ())
    # a whole conversation with tool calls and a tool message goes through the chat template
    conv = (
        Message("user", "q"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "terminate", '{"final_answer": "1"}'),)),
        Message("tool", "done", tool_call_id="c1", name="terminate"),
        Message("user", "again"),
    )
    (res,) = backend.chat([ChatRequest(backend.spec.key, conv, max_tokens=4, tools=(TOOL,))])
    assert res.finish_reason in ("stop", "length") and res.usage.prompt_tokens > 0
    (bare,) = backend.chat([ChatRequest(backend.spec.key, (Message("user", "q"),), max_tokens=4)])
    assert res.usage.prompt_tokens > bare.usage.prompt_tokens  # the tool specs are in the prompt
