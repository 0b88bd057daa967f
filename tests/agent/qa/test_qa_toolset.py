"""The tool suite of a run: which tools each question gets, bounded schemas, one factory for
both tool variants, and the sandbox's absence handled without running code unisolated."""

from __future__ import annotations

import pytest

from agent.qa.core.items import Question
from agent.qa.core.schemas import action_schema, char_bound
from agent.qa.solver.toolset import ToolsetConfig, tool_factory
from localfin.errors import ConfigError


def test_python_is_offered_and_reparse_only_with_images(tmp_path):
    img = tmp_path / "chart.png"
    img.write_bytes(b"\x89PNG\r\n\x1a\n")
    make = tool_factory(
        ToolsetConfig(names=("python", "reparse"), python_unavailable="refuse", max_code_chars=300)
    )
    plain = make(Question("a", "demo", "What?"))
    with_img = make(Question("b", "demo", "What?", images=(str(img),)))
    try:
        assert [t.name for t in plain] == ["python"]
        assert [t.name for t in with_img] == ["python", "reparse_image"]
        assert plain[0].args_schema["properties"]["code"]["maxLength"] == 300
        schema = action_schema(
            [(t.name, t.args_schema) for t in with_img], thought_chars=50, answer_chars=50, arg_chars=100
        )
        assert char_bound(schema) < 2000  # every field bounded, so max_tokens can hold any reply
    finally:
        for t in plain + with_img:
            t.close()


def test_lookup_needs_a_store(tmp_path):
    make = tool_factory(ToolsetConfig(names=("lookup",)))
    assert make(Question("a", "demo", "What?")) == []
    with pytest.raises(Exception, match=r"market\.sqlite|not found|no such|exist"):
        tool_factory(ToolsetConfig(names=("lookup",), store_path=tmp_path / "market.sqlite"))


def test_toolset_config_names_bad_values():
    with pytest.raises(ConfigError, match="allowed: python, lookup, reparse"):
        ToolsetConfig(names=("shell",))
    with pytest.raises(ConfigError, match="allowed: raise, refuse"):
        ToolsetConfig(python_unavailable="run-anyway")
