"""``[model] decoding``: the paper's way (``prompt``: JSON asked for in the prompt only, the final
text read for its first JSON object, the reflection in A.3's text form, a reply that does not
parse a recorded fallback with its text) against the schema (``schema``: structured outputs),
on the scripted model over the small market, every call type of the agent included."""

from __future__ import annotations

import json

import pytest
from moira_support import mean_reversion, payload, scripted, small_config, small_store

from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json
from agent.pairs.moira import calls
from agent.pairs.moira.config import MaxTokens, PromptConfig
from agent.pairs.moira.trace import read_trace
from localfin.errors import ConfigError
from serving.chat.types import ChatResult, Sampling, Usage

PRINCIPLE = "When the trading-window z-score is stretched, trade toward the mean."
AGENT_CALLS = {"pair_selection", "direction", "reflection", "break_check", "news_verify"}


def _chatty(reply):
    """The reply of ``reply`` inside prose, as a model without constrained decoding writes it."""

    def wrapped(req):
        return f"Let me look at the data.\n{reply(req) if callable(reply) else json.dumps(reply)}\nDone."

    return wrapped


def _direction(req):
    # every fifth step the model answers in words only: no JSON object, a recorded fallback
    step = int(payload(req)["current_step"].split()[1])
    return "I would go SHORT_LONG here." if step % 5 == 0 else _chatty(mean_reversion)(req)


def _text_reflection(req):
    return f"The agent stayed FLAT too often.\nPrinciples:\n1. {PRINCIPLE}"


def _run(tmp_path, decoding, **scripts):
    cfg, text = small_config(small_store(), model={"decoding": decoding}, lifecycle={"validation_period": 23})
    backend = scripted(**scripts)
    res = run_experiment(cfg, tmp_path / decoding, config_text=text, backend=backend)
    return res, backend, tmp_path / decoding


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    from moira_support import pick_first, verify_reply

    return _run(
        tmp_path_factory.mktemp("decoding"),
        "prompt",
        select=_chatty(pick_first),
        direction=_direction,
        reflection=_text_reflection,
        break_check=_chatty(
            {
                "semantic_relationship_signal": "stable",
                "leg_a_financial_sentiment": "neutral",
                "leg_b_financial_sentiment": "neutral",
                "sentiment_symmetry": "mixed_or_neutral",
                "news_break_level": "HEALTHY",
                "is_relationship_break_signal": False,
                "reason": "nothing material",
            }
        ),
        news_verify=_chatty(verify_reply),
    )


def test_the_papers_decoding_sends_no_schema_to_the_engine_and_reads_the_final_text(paper):
    res, backend, out = paper
    seen = {r.call_type for r in backend.calls}
    assert seen == AGENT_CALLS  # the restatement sends news_verify, boundaries the break check
    for r in backend.calls:
        assert r.constrained is False, r.call_type
        if r.call_type == "reflection":
            # A.3's text form: no schema, the prompt asks for a "Principles:" line
            assert r.json_schema is None and 'a line reading "Principles:"' in r.messages[0].content
        else:
            assert r.json_schema is not None and "Reply with" in r.messages[0].content
    extra = res.runs[0]["extra"]
    # prose around the JSON is read; the text-form reflection gave its principle (replayed,
    # accepted or rolled back by the training return)
    training = read_json(out / "runs" / res.runs[0]["run_id"] / "training.json")
    assert training["cycles"][1]["proposed_principles"] == [PRINCIPLE]
    assert training["cycles"][1]["training_return"] is not None
    assert "pair_selection" not in extra["test"]["fallbacks_by_call_type"]
    assert "break_check" not in extra["test"].get("fallbacks_by_call_type", {})


def test_a_reply_that_does_not_parse_is_a_recorded_fallback_with_its_text(paper):
    res, _, out = paper
    run = res.runs[0]
    test = run["extra"]["test"]
    n = test["fallbacks_by_call_type"]["direction"]
    assert n > 0 and test["fallback_kinds_by_call_type"]["direction"] == {"no_json": n}
    tr = read_trace(out / "runs" / run["run_id"] / "trace.parquet")
    fb = tr[(tr["phase"] == "test") & (tr["fallback"] != "") & (tr["call_type"] == "direction")]
    assert len(fb) == n and set(fb["reply"]) == {"I would go SHORT_LONG here."}
    assert set(fb["fallback"]) == {"invalid reply: no JSON object in the reply"}
    assert all(json.loads(d)["action"] == "FLAT" for d in fb["decision"])  # the step falls back to FLAT
    # summary.md and summary.json count them per call type, the decoding named
    summary = read_json(out / "summary.json")
    assert summary["decoding"] == "prompt"
    assert summary["fallbacks_by_call_type"]["direction"]["test"]["fallbacks"] == n
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "Fallbacks per call type (decoding `prompt`" in md
    d = summary["fallbacks_by_call_type"]["direction"]
    tr, te = d["train"], d["test"]
    kinds = f"no_json {tr['fallbacks'] + n}"
    assert f"| direction | {tr['calls']} | {tr['fallbacks']} | {te['calls']} | {n} | {kinds} |" in md


def test_the_schema_path_constrains_every_agent_call(tmp_path):
    res, backend, out = _run(tmp_path, "schema")
    assert {r.call_type for r in backend.calls} == AGENT_CALLS
    assert all(r.constrained and r.json_schema is not None for r in backend.calls)
    assert read_json(out / "summary.json")["decoding"] == "schema"
    assert res.runs[0]["extra"]["test"]["invalid_replies"] == 0


def _settings(decoding: str) -> calls.CallSettings:
    return calls.CallSettings(
        "smollm2-135m", Sampling(temperature=0.0), MaxTokens(), PromptConfig(), decoding
    )


def _result(text: str, finish: str = "stop") -> ChatResult:
    return ChatResult(text, None, None, None, finish, Usage(1, 1), 0.0, "t", "m", "r", "reflection", "k")


@pytest.mark.parametrize(
    ("text", "principles"),
    [
        (f"Short note.\nPrinciples:\n- {PRINCIPLE}", [PRINCIPLE]),
        (
            f"Note.\n**Principles:**\n1. {PRINCIPLE}\n2) Weigh the price change against the spread first.",
            None,
        ),
        (f"Principles: {PRINCIPLE}", [PRINCIPLE]),
        ("R.\nPrinciples:\n- 1.5 standard deviations of the spread call for a trade.", None),
    ],
)
def test_the_reflection_text_form_is_read_after_its_principles_line(text, principles):
    parsed = calls.parse_reflection(_result(text), _settings("prompt"))
    assert parsed.fallback is None
    if principles is not None:
        assert parsed.value["principles"] == principles
    elif text.startswith("R."):
        assert parsed.value["principles"] == ["1.5 standard deviations of the spread call for a trade."]
    else:
        assert parsed.value["principles"][1] == "Weigh the price change against the spread first."
        assert parsed.value["reflection"] == "Note."


@pytest.mark.parametrize(
    ("text", "finish", "why"),
    [
        ("The agent did fine; keep going.", "stop", "no 'Principles:' line"),
        ("Reflection.\nPrinciples:\n", "stop", "no principle after"),
        ("Reflection.\nPrinciples:\n" + "\n".join([PRINCIPLE] * 4), "stop", "schema violation"),
        ("Reflection.\nPrinciples:\n- Be careful", "stop", "schema violation"),  # shorter than 20
        (f"Reflection.\nPrinciples:\n- {PRINCIPLE}", "length", "cut at max_tokens"),
    ],
)
def test_a_reflection_text_that_cannot_be_read_is_a_fallback(text, finish, why):
    parsed = calls.parse_reflection(_result(text, finish), _settings("prompt"))
    assert parsed.value is None and why in parsed.fallback


def test_an_unknown_decoding_is_an_error_naming_the_key():
    with pytest.raises(ConfigError, match=r"model\.decoding='free'; allowed: schema, prompt"):
        small_config(small_store(), model={"decoding": "free"})
    with pytest.raises(ConfigError, match=r"model\.decoding"):
        _settings("json")


def test_a_reply_whose_reflection_breaks_the_strict_ban_loses_its_principles(tmp_path):
    # A.3's ban covers the whole reply under direction_rule "any_recommendation": a valid
    # principle does not survive a reflection that recommends a direction
    def reflection(req):
        text = "FLAT was over-used. Choose SHORT_LONG when the spread is far above its mean."
        return json.dumps({"reflection": text, "principles": [PRINCIPLE]})

    cfg, text = small_config(small_store(), policy={"max_cycles": 1, "direction_rule": "any_recommendation"})
    res = run_experiment(cfg, tmp_path / "x", config_text=text, backend=scripted(reflection=reflection))
    training = read_json(tmp_path / "x" / "runs" / res.runs[0]["run_id"] / "training.json")
    c1 = training["cycles"][1]
    assert c1["rejected_principles"] == [{"text": PRINCIPLE, "rule": "reflection_direction"}]
    assert c1["training_return"] is None and training["principles"] == []


def test_a_shared_training_counts_once_in_the_fallback_table():
    from agent.pairs.experiment.summary import fallback_lines, fallbacks_by_call_type

    def run(rid, test_fb):
        phase = {
            "tokens_by_call_type": {"direction": {"calls": 10}},
            "fallbacks_by_call_type": {"direction": test_fb} if test_fb else {},
            "fallback_kinds_by_call_type": {"direction": {"no_json": test_fb}} if test_fb else {},
        }
        train = {
            "tokens_by_call_type": {"direction": {"calls": 30}, "reflection": {"calls": 2}},
            "fallbacks_by_call_type": {"reflection": 1},
            "fallback_kinds_by_call_type": {"reflection": {"cut": 1}},
        }
        shared = ["full-beta-s0", "full-no_beta-s0"]
        return {"run_id": rid, "extra": {"test": phase, "train": train, "training_shared_with": shared}}

    by = fallbacks_by_call_type([run("full-no_beta-s0", 2), run("full-beta-s0", 3)])
    assert by["direction"]["train"] == {"calls": 30, "fallbacks": 0, "kinds": {}}
    assert by["direction"]["test"] == {"calls": 20, "fallbacks": 5, "kinds": {"no_json": 5}}
    assert by["reflection"]["train"] == {"calls": 2, "fallbacks": 1, "kinds": {"cut": 1}}
    lines = fallback_lines(by, "prompt")
    assert "| direction | 30 | 0 | 20 | 5 | no_json 5 |" in lines
    assert "| reflection | 2 | 1 | 0 | 0 | cut 1 |" in lines
