"""The rehearsal's checks on hand-made journals: each flags what it is there to flag (no engine)."""

from __future__ import annotations

from pathlib import Path

from agent.reproduce.rehearse.checks import check_calls, journal_records
from agent.reproduce.rehearse.sizes import image_tokens
from agent.reproduce.rehearse.standins import engine_groups
from agent.reproduce.spec import load_repro
from serving.journal import Journal
from serving.registry import default_registry
from serving.replies import build_result
from serving.types import ChatRequest, Usage

SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


def _journal(tmp_path: Path, pairs) -> list[dict]:
    d = tmp_path / "cell"
    d.mkdir(parents=True)
    with Journal(d / "journal.sqlite") as j:
        j.put_many(pairs)
    return journal_records(tmp_path)


def _pair(
    key: str,
    raw: str,
    *,
    thinking: bool | None,
    max_tokens: int = 16384,
    temperature=None,
    constrained=False,
    json_schema=SCHEMA,
    **kw,
):
    # server-default sampling: temperature and top_p left unset, the run seed set; the
    # reproduction configs' decoding: the schema checks the reply, nothing constrains it
    req = ChatRequest.simple(
        key, "Direction?", thinking=thinking, json_schema=json_schema, call_type="direction",
        max_tokens=max_tokens, temperature=temperature, top_p=None, seed=0, constrained=constrained,
    )  # fmt: skip
    res = build_result(
        req, raw, finish_reason="stop", usage=Usage(10, 5), latency_s=0.1, backend="t", revision="r", **kw
    )
    return req, res


def _by(checks, name):
    return {c.path + ":" + c.call_type: c for c in checks if c.name == name}


def test_the_settings_check_passes_the_configs_settings_and_flags_others(tmp_path: Path) -> None:
    cfg, reg = load_repro("moira_table5_a2"), default_registry()
    good = [
        _pair("qwen3-32b", 'r</think>{"action": "FLAT"}', thinking=True),
        _pair("qwen3-32b-nothink", '{"action": "FLAT"}', thinking=False),
    ]
    ok = _by(check_calls(cfg, "engine", _journal(tmp_path / "a", good), reg), "settings")["engine:direction"]
    assert ok.ok, ok.detail
    bad = [
        _pair("qwen3-32b", 'r</think>{"action": "FLAT"}', thinking=False, max_tokens=512, temperature=0.7),
    ]
    flagged = _by(check_calls(cfg, "engine", _journal(tmp_path / "b", bad), reg), "settings")[
        "engine:direction"
    ]
    assert flagged.ok is False
    assert (
        "max_tokens [512] != config 16384" in flagged.detail
        and "thinking False != backbone True" in flagged.detail
    )
    assert "server_default" in flagged.detail


def test_the_split_check_needs_reasoning_split_off_in_thinking_replies(tmp_path: Path) -> None:
    cfg, reg = load_repro("moira_table5_a2"), default_registry()
    split = [_pair("qwen3-32b", 'plan</think>{"action": "FLAT"}', thinking=True)]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "a", split), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok and c.seen == {"thinking_calls": 1, "with_reasoning": 1, "tags_after_split": 0}
    # a thinking reply whose answer came back with no reasoning at all: nothing was split
    none = [_pair("qwen3-32b", '{"action": "FLAT"}', thinking=True, reasoning="")]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "b", none), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok is False and "none with reasoning split off" in c.detail


def test_a_free_answer_may_write_a_think_tag_after_the_split_but_not_without_one(tmp_path: Path) -> None:
    cfg, reg = load_repro("moira_table5_a2"), default_registry()
    # a random stand-in closes its thinking again in its answer: answer text, read for its JSON
    after = [_pair("qwen3-32b", 'plan</think>{"action": "FLAT"}</think>', thinking=True)]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "a", after), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok, c.detail
    assert c.seen["tags_after_split"] == 1 and "after the split" in c.detail
    # nothing split off, or a tag under structured outputs: the split missed
    missed = [_pair("qwen3-32b", '{"action": "FLAT"}</think>', thinking=True, reasoning="")]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "b", missed), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok is False and "a think tag left in the answer text" in c.detail
    held = [_pair("qwen3-32b", 'plan</think>{"action": "FLAT"}</think>', thinking=True, constrained=True)]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "c", held), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok is False and "a think tag left in the answer text" in c.detail


def test_a_free_reply_of_a_call_that_does_not_think_may_hold_a_tag(tmp_path: Path) -> None:
    cfg, reg = load_repro("moira_table5_a2"), default_registry()
    # thinking off: nothing to split, the tag is one of the random model's tokens (answer text)
    free = [_pair("qwen3-32b-nothink", '{"action": "FLAT"}</think>', thinking=False, reasoning="")]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "a", free), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok, c.detail
    assert c.seen["tags_after_split"] == 1
    # under structured outputs a tag is still a miss
    held = [
        _pair(
            "qwen3-32b-nothink", '{"action": "FLAT"}</think>', thinking=False, reasoning="", constrained=True
        )
    ]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "b", held), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok is False and "a think tag left in the answer text" in c.detail
    # no schema at all (a native tool call's reply, a one-word verdict): free, whatever the flag
    bare = [_pair("qwen3-32b-nothink", "YES</think>", thinking=False, reasoning="", json_schema=None)]
    c = _by(check_calls(cfg, "engine", _journal(tmp_path / "c", bare), reg), "thinking split")[
        "engine:direction"
    ]
    assert c.ok, c.detail


def test_the_settings_check_flags_a_decoding_other_than_the_configs(tmp_path: Path) -> None:
    import dataclasses

    cfg, reg = load_repro("moira_table5_a2"), default_registry()
    assert cfg.document["model"]["decoding"] == "prompt"
    # a reply written freely around its JSON: the split check reads its first JSON object
    free = [_pair("qwen3-32b-nothink", 'Answer: {"action": "FLAT"} (final)', thinking=False)]
    checks = check_calls(cfg, "engine", _journal(tmp_path / "a", free), reg)
    assert _by(checks, "settings")["engine:direction"].ok
    assert _by(checks, "thinking split")["engine:direction"].ok
    constrained = [_pair("qwen3-32b-nothink", '{"action": "FLAT"}', thinking=False, constrained=True)]
    flagged = _by(check_calls(cfg, "engine", _journal(tmp_path / "b", constrained), reg), "settings")
    assert "decoding prompt, but 1 request(s) constrained" in flagged["engine:direction"].detail
    doc = {**cfg.document, "model": {**cfg.document["model"], "decoding": "schema"}}
    schema_cfg = dataclasses.replace(cfg, document=doc)
    flagged = _by(check_calls(schema_cfg, "engine", _journal(tmp_path / "c", free), reg), "settings")
    assert "decoding schema, but 1 request(s) not constrained" in flagged["engine:direction"].detail


def test_engine_groups_share_one_engine_per_architecture() -> None:
    keys = load_repro("moira_table3_main").model_keys
    assert engine_groups(keys, default_registry()) == {
        "llama": ("llama-3.1-8b", "llama-3.1-70b"),
        "qwen3": ("qwen3-4b", "qwen3-4b-nothink", "qwen3-32b", "qwen3-32b-nothink"),
    }


def test_image_tokens_follow_qwen3_vls_resize() -> None:
    assert image_tokens(256, 256) == 64  # the smallest image: 8 x 8 blocks of 32 pixels
    assert image_tokens(100, 100) == 64  # raised to the minimum pixel count
    assert image_tokens(1024, 768) == 32 * 24
    assert image_tokens(8192, 8192) == 128 * 128  # capped at 4096 x 4096 pixels


def test_a_stand_in_is_sized_as_its_gpu_entry(tmp_path: Path) -> None:
    """The QA solver picks CPU bounds for a CPU model; a stand-in must get the GPU entry's
    (image sending, paper-scale budgets), else the rehearsal would not run the GPU settings."""
    from agent.qa.solver.solver_config import solver_config_for
    from serving.open import model_facts
    from serving.registry import cpu_stand_in

    reg = default_registry()
    twin = cpu_stand_in(reg.get("qwen3-vl-8b"), tmp_path)
    facts = model_facts("qwen3-vl-8b", reg.with_spec(twin))
    assert twin.device == "cpu" and facts.device == "gpu"
    assert solver_config_for(facts) == solver_config_for(model_facts("qwen3-vl-8b", reg))
    assert solver_config_for(facts).send_images


def test_a_reused_engine_must_match_the_stand_in_but_for_the_tool_parser(tmp_path: Path) -> None:
    """The default suite's rehearsal reuses the session server (tiny Qwen3, no tool parser) for
    Qwen3-32B: the tool parser may differ and is reported; a context or reasoning parser
    other than the stand-in's is refused."""
    from dataclasses import replace

    import pytest

    from agent.reproduce.rehearse.standins import check_reuse, stand_ins
    from localfin.errors import ConfigError
    from serving.models import build_tiny_model

    path = build_tiny_model(tmp_path / "q", arch="qwen3", max_position_embeddings=32768)
    reg = default_registry()
    si = stand_ins(["qwen3-32b", "qwen3-32b-nothink"], tmp_path / "models", reg, models={"qwen3": path})
    assert si.models == {"qwen3": path} and not (tmp_path / "models").exists()  # nothing built
    session = replace(reg.get("tiny-qwen3").with_path(path), max_model_len=32768)
    notes = check_reuse(si, "qwen3", session, "server")
    assert "tool_call_parser None, the config's entry asks 'hermes'" in notes[1]
    assert len(check_reuse(si, "qwen3", session, "engine")) == 1  # the engine takes no tool parser
    with pytest.raises(ConfigError, match=r"differs in \['max_model_len'\]"):
        check_reuse(si, "qwen3", replace(session, max_model_len=2048), "server")
    with pytest.raises(ConfigError, match=r"differs in \['reasoning_parser'\]"):
        check_reuse(si, "qwen3", replace(session, reasoning_parser=None), "engine")
    penalised = replace(session, repetition_penalty=1.1)  # in process the engine's entry applies it
    assert check_reuse(si, "qwen3", penalised, "server")
    with pytest.raises(ConfigError, match=r"differs in \['repetition_penalty'\]"):
        check_reuse(si, "qwen3", penalised, "engine")
    short = build_tiny_model(tmp_path / "short", arch="qwen3")  # 4,096 positions
    with pytest.raises(ConfigError, match=r"holds 4096 positions; .* needs max_position_embeddings >= 32768"):
        stand_ins(["qwen3-32b"], tmp_path / "models", reg, models={"qwen3": short})


def test_rehearsal_sizes_are_checked() -> None:
    import pytest

    from agent.reproduce.rehearse.runs import SMALLEST, RehearsalSize
    from localfin.errors import ConfigError

    assert SMALLEST.validation_period < SMALLEST.test_sessions and SMALLEST.qa_items == 1
    with pytest.raises(ConfigError, match=r"RehearsalSize\.qa_steps=0; allowed: a whole number >= 1"):
        RehearsalSize(qa_steps=0)
    with pytest.raises(ConfigError, match="validation_period=4; allowed: fewer than test_sessions=4"):
        RehearsalSize(test_sessions=4)
