"""The authors' agent loop, theirs and ours, on the same scripted replies: their ``ToolCallAgent``
from the pinned snapshot (its model a stand-in that replies from the script and records every
request) and our :mod:`agent.qa.solver.authors_loop`, with the same tools (their Python tool's
run and ours answer alike; the lookup reads the same corpus; OCR has no image). Every request
(system prompt, conversation with the policy messages, step-limit notes, tool calls and tool
messages, tool specs) and the final answer must be equal. Without the snapshot this skips."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import ClassVar

import pytest
from authors_support import FakeLLM, snapshot, their_modules

from agent.qa.authors.checkout import open_authors_code
from agent.qa.authors.tool_texts import lookup_hints
from agent.qa.core.items import Question
from agent.qa.solver.react import QASolver
from agent.qa.solver.solver_config import SolverConfig
from agent.qa.tools.base import ToolResult
from agent.qa.tools.fin_lookup import FinancialDataLookupTool, FinCorpus
from serving.lockstep import run_lockstep
from serving.replies import build_result
from serving.types import ToolCall, Usage

ROWS = [
    {"Symbol": "AAPL", "Date": "2022-01-03", "indicator_name": "closePrice", "indicator_value": "182.01"},
    {"Symbol": "AAPL", "Date": "2022-01-04", "indicator_name": "closePrice", "indicator_value": "179.7"},
    {"Symbol": "MSFT", "Date": "2022-03-31", "indicator_name": "closePrice", "indicator_value": "308.31"},
]

#: per step: (reply text, [(tool name, arguments JSON)])
SCRIPT = [
    ("<Think>inventory</Think>", [("python_execute", json.dumps({"code": "print(3)"}))]),
    ("I think the answer is 3", []),
    ("still thinking", []),
    (
        "",
        [
            (
                "financial_data_lookup",
                json.dumps({"source": "stock_price", "symbol": "aapl", "date": "2022-01-03"}),
            )
        ],
    ),
    (
        "",
        [
            ("financial_data_lookup", json.dumps({"source": "stock_price", "symbol": "ZZZZ"})),
            ("financial_data_lookup", json.dumps({"source": "news", "date": "2022-Q1"})),
        ],
    ),
    ("", [("no_such_tool", "{}")]),
    ("", [("python_execute", "{not json")]),
    ("", [("ocr_extract", json.dumps({"use_context_image": True}))]),
    ("done", [("terminate", json.dumps({"final_answer": " 3 USD ", "status": "success"}))]),
]


class _Python:
    name = "python"
    description = "python"
    args_schema: ClassVar[dict] = {"type": "object"}

    def __call__(self, args):
        return ToolResult(True, "3\n")

    def close(self):
        return None


def _corpus(tmp_path):
    data = tmp_path / "corpus" / "data"
    data.mkdir(parents=True)
    (data / "StockPrice.json").write_text(json.dumps(ROWS), encoding="utf-8")
    (data / "News.json").write_text(json.dumps([{"Symbol": ["AAPL"], "Date": "2022-02-01", "text": "x"}]))
    (data / "FinancialTable.json").write_text("[]", encoding="utf-8")
    return tmp_path / "corpus"


def _plain(msgs):
    """Requests' messages as comparable dicts (a missing content reads as "")."""
    out = []
    for m in msgs:
        d = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            d["tool_calls"] = [
                (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]
            ]
        for k in ("name", "tool_call_id"):
            if m.get(k):
                d[k] = m[k]
        out.append(d)
    return out


def _theirs(tmp_path, agent_kind: str, max_steps: int):
    with their_modules(tmp_path / "logs") as load:
        tc = load("finacumen.ft.agent.toolcall")
        schema = load("finacumen.ft.schema")
        tools = load("finacumen.ft.tool")
        lk = load("finacumen.ft.tool.financial_data_lookup")
        py = load("finacumen.ft.tool.python_execute")
        ocr = load("finacumen.ft.tool.ocr")
        variant = load(
            "finacumen.ft.variant.finacumen" if agent_kind == "finacumen" else "finacumen.ft.variant.ft_only"
        )
        lk._DATA_DIR = _corpus(tmp_path) / "data"
        for name in ("_STOCK_PRICE", "_NEWS", "_FINANCIAL_TABLE"):
            setattr(lk, name, None)
        lk._INDEX_BY_SOURCE.clear()
        lk._TOP_SYMBOLS_CACHE.clear()

        async def run_py(self, code=None, **kw):
            return {"observation": "3\n", "success": True}

        py.PythonExecute.execute = run_py
        sent = []
        replies = iter(SCRIPT)

        class Model(FakeLLM):
            async def ask_tool(self, messages, system_msgs=None, tools=None, tool_choice=None, **kw):
                sent.append(
                    {
                        "messages": [m.to_dict() for m in (system_msgs or [])]
                        + [m.to_dict() for m in messages],
                        "tools": tools,
                        "tool_choice": str(getattr(tool_choice, "value", tool_choice)),
                    }
                )
                text, calls = next(replies)
                step = len(sent)
                return SimpleNamespace(
                    content=text,
                    tool_calls=[
                        schema.ToolCall(id=f"call_{step}_{i}", function=schema.Function(name=n, arguments=a))
                        for i, (n, a) in enumerate(calls)
                    ],
                )

        if agent_kind == "finacumen":
            system, policy = variant.build_system_prompt("B4"), variant.FINACUMEN_NEXT_STEP_PROMPT
        else:
            system, policy = variant.FT_SYSTEM_PROMPT, variant.FT_NEXT_STEP_PROMPT
        agent = tc.ToolCallAgent(
            name="a",
            system_prompt=system,
            next_step_prompt=policy,
            llm=Model(),
            available_tools=tools.ToolCollection(
                py.PythonExecute(), lk.FinancialDataLookup(), ocr.OcrExtract(), tools.Terminate()
            ),
            tool_choices=schema.ToolChoice.AUTO,
            max_steps=max_steps,
            max_observe=4000,
        )
        asyncio.run(agent.run("USER MESSAGE"))
        answer = variant._extract_final_answer(agent)
        transcript = load("finacumen.fm.cross_verify")._build_trajectory_text(agent)
        return sent, answer, transcript


class _Scripted:
    name = "scripted"

    def __init__(self):
        self.requests = []
        self.replies = iter(SCRIPT)

    def chat(self, requests):
        out = []
        for req in requests:
            self.requests.append(req)
            text, calls = next(self.replies)
            tcs = tuple(ToolCall(f"x{i}", n, a) for i, (n, a) in enumerate(calls))
            out.append(
                build_result(
                    req,
                    text,
                    finish_reason="stop",
                    usage=Usage(),
                    latency_s=0.0,
                    backend="scripted",
                    revision="",
                    tool_calls=tcs,
                )
            )
        return out


@pytest.mark.parametrize("agent_kind", ["finacumen", "ft_only"])
def test_our_loop_sends_what_theirs_sends_step_by_step(tmp_path, agent_kind, monkeypatch) -> None:
    steps = len(SCRIPT) + 1  # so the step-limit notes of two and one steps left are sent
    sent, their_answer, their_transcript = _theirs(tmp_path, agent_kind, steps)
    code = open_authors_code(snapshot())
    corpus = FinCorpus(_corpus(tmp_path / "ours"))
    tools = [
        _Python(),
        FinancialDataLookupTool(corpus, lookup_hints(code)),
        SimpleNamespace(name="ocr_extract", description="", args_schema={}, close=lambda: None),
    ]
    cfg = SolverConfig(model="m", max_steps=steps, loop="authors", max_tokens=1024, observation_chars=4000)
    solver = QASolver(cfg, tools=lambda q: tools, authors=code)
    monkeypatch.setattr("agent.qa.solver.authors_loop.problem_block", lambda *a, **k: "USER MESSAGE")
    q = Question("i1", "fintmmbench", "What?")
    backend = _Scripted()
    (traj,) = run_lockstep([solver.solve(q, variant="ft_fm" if agent_kind == "finacumen" else "ft")], backend)
    assert len(backend.requests) == len(sent) == len(SCRIPT)
    for k, (req, want) in enumerate(zip(backend.requests, sent), 1):
        mine = [m.to_openai() for m in req.messages]
        assert _plain(mine) == _plain(want["messages"]), f"step {k}"
        assert [dict(t) for t in req.tools] == want["tools"] and req.tool_choice == want[
            "tool_choice"
        ] == "auto"
        assert req.max_tokens == 1024
    assert traj.answer == their_answer == "3 USD"
    assert traj.terminated and traj.tool_steps == 7  # the terminate call is not a tool step
    assert traj.transcript == their_transcript  # what their bank's grader and summarizer read
    assert "no_tool_call" in traj.fallbacks and "unknown_tool" in traj.fallbacks
