"""The Python API's QA call on the real demo set, answered by the scripted test model: the same
run folder and summary as ``localfin qa eval``, and an unknown model or variant fails first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import api
from agent.qa.data.demo_set import build_demo_set
from localfin.errors import ConfigError
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest


def _answering() -> ScriptedBackend:
    def reply(req: ChatRequest) -> str:
        props = (req.json_schema or {}).get("properties", {})
        if "reasoning" in props:
            return json.dumps({"reasoning": "read", "answer": "1"})
        if "plan" in props:
            return json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
        return json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": "1"}})

    return ScriptedBackend([Rule("*", reply)])


def test_evaluate_qa_runs_one_variant_into_a_run_folder(tmp_path: Path):
    data = build_demo_set(tmp_path / "demo", n_train=1, n_test=3)
    be = _answering()
    res = api.evaluate_qa("demo", data, tmp_path / "run", variant="base", split="test", limit=3, backend=be)
    [summary] = res.summaries
    assert (summary.variant, summary.n, summary.model_calls) == ("base", 3, 3) and len(be.calls) == 3
    assert (tmp_path / "run" / "scores.json").is_file()
    assert (tmp_path / "run" / "journal.sqlite").is_file()
    with pytest.raises(ConfigError, match="unknown model key 'nope'"):
        api.evaluate_qa("demo", data, tmp_path / "r2", model="nope", backend=be)
    with pytest.raises(ConfigError, match="variant='best'"):
        api.evaluate_qa("demo", data, tmp_path / "r3", variant="best", backend=be)
    assert len(be.calls) == 3 and not (tmp_path / "r2").exists()
