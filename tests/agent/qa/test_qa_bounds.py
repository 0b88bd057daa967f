"""The bounds that can move a FinAcumen number are plan fields: a ``[qa]`` value reaches the tool,
the judge or the test-part draw, and changes what it does."""

from __future__ import annotations

import json

import pytest

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.data.holdout import hold_out
from agent.qa.scoring.judge import judge_requests
from agent.qa.solver.toolset import ToolsetConfig, tool_factory
from agent.reproduce.qa.plan import QAPlan, QASource
from localfin.errors import ConfigError

_NEWS = [
    {"uuid": f"n{i}", "Symbol": ["AMD"], "Date": "2024-01-0" + str(i + 1), "Title": f"AMD chip news {i}",
     "Content": "AMD shipped more chips. " * 60}
    for i in range(4)
]  # fmt: skip


def _retrieve(tmp_path, **bounds):
    data = tmp_path / "FinTMMBench" / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "News.json").write_text(json.dumps(_NEWS), encoding="utf-8")
    make = tool_factory(ToolsetConfig(names=("retrieve",), corpus_path=data.parent, **bounds))
    (tool,) = make(Question("q", "fintmmbench", "What did AMD ship?"))
    return tool


def _plan(**keys) -> QAPlan:
    return QAPlan(
        model="m", tools=("python",), sets=(QASource("S", "demo", "demo"),), variants=("ft",), **keys
    )


def test_plan_bounds_reach_the_toolset():
    p = _plan(tool_text_chars=900, corpus_shown_chars=120, corpus_max_k=3, lookup_max_window=250)
    cfg = p.toolset_bounds(ToolsetConfig)
    assert (cfg.text_chars, cfg.corpus_shown_chars, cfg.corpus_max_k, cfg.lookup_max_window) == (
        900,
        120,
        3,
        250,
    )
    assert _plan().toolset_bounds(ToolsetConfig) == ToolsetConfig()  # the plan's defaults are the tools'


def test_shown_chars_and_max_k_change_the_retrieve_tool(tmp_path):
    default, narrow = _retrieve(tmp_path), _retrieve(tmp_path, corpus_shown_chars=80, corpus_max_k=2)
    try:
        wide_text = default({"query": "AMD chips", "k": 2}).text
        narrow_text = narrow({"query": "AMD chips", "k": 2}).text
        assert len(narrow_text) < len(wide_text)
        assert all(len(line) < 160 for line in narrow_text.splitlines()[1:])
        assert default({"query": "AMD chips", "k": 3}).ok
        refused = narrow({"query": "AMD chips", "k": 3})
        assert not refused.ok and "1..2" in refused.text
        assert narrow.args_schema["properties"]["k"]["maximum"] == 2
    finally:
        default.close()
        narrow.close()


def test_tool_text_chars_cuts_every_tool_output(tmp_path):
    wide = _retrieve(tmp_path, corpus_shown_chars=2000)
    cut = _retrieve(tmp_path, corpus_shown_chars=2000, text_chars=600)
    try:
        long_text = wide({"query": "AMD chips", "k": 4}).text
        short = cut({"query": "AMD chips", "k": 4}).text
        assert 3900 < len(long_text) <= 4000 and "chars cut]" in long_text  # the default bound: 4,000
        assert len(short) <= 600 and "chars cut]" in short
    finally:
        wide.close()
        cut.close()


def test_judge_candidate_chars_bounds_what_the_judge_reads():
    item = QAItem(Question("q", "fintmmbench", "How much?"), Gold("4.2 billion"))
    answer = "4.2 billion " + "x" * 3000
    full = judge_requests([item], [answer], "j")[0].messages[-1].content
    short = judge_requests([item], [answer], "j", candidate_chars=30)[0].messages[-1].content
    assert "x" * 1900 in full and "x" * 40 not in short and "4.2 billion" in short


def test_holdout_seed_changes_the_test_part():
    items = [QAItem(Question(f"i{n}", "finmme", "?"), Gold(1)) for n in range(40)]
    ids = {s: [it.question.item_id for it in hold_out(items, 0.5, "test", seed=s)] for s in (42, 7)}
    assert ids[42] != ids[7] and len(ids[42]) == len(ids[7])
    assert _plan().holdout_seed == 42 and _plan().memory_context_chars == 600


@pytest.mark.parametrize(
    ("key", "value"),
    [("tool_text_chars", 50), ("corpus_max_k", 0), ("ocr_max_side", 10), ("judge_candidate_chars", 1),
     ("memory_context_chars", -1), ("holdout_seed", -1)],
)  # fmt: skip
def test_a_bad_bound_names_its_plan_key(key, value):
    with pytest.raises(ConfigError, match=rf"qa\.{key}=.*allowed"):
        _plan(**{key: value})
