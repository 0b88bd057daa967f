"""FinMem as the paper runs it beside Moira: its completion budget follows ``[model.max_tokens]``
(or its own fields), so a thinking backbone is not cut to FLAT by the schema-sized budget; cut
replies are counted in the summary; its backbone can be fixed (``[baselines.finmem] model``),
on a second backend in one experiment and as the single FinMem row of a matrix."""

from __future__ import annotations

import json
import tomllib

import pytest
from moira_support import scripted, small_config, small_store, toml_text, with_finmem

from agent.pairs.baselines.finmem.calls import DECISION_CALL, REFLECTION_CALL
from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.matrix_config import parse_matrix
from agent.pairs.experiment.run import run_experiment
from bank.embedder import HashingEmbedder
from localfin.errors import ConfigError
from serving.chat.scripted import Rule, ScriptedBackend

EMB = HashingEmbedder(dim=64)
SHAPE = {
    "windows": {"test_end": "2015-02-27"},
    "policy": {"max_cycles": 0},
}
FINMEM = {
    "baselines": {"methods": ["finmem"]},
    "baselines.finmem": {"momentum_sessions": 2, "news_per_leg": 1},
}


def _text(model: dict, **extra: dict) -> str:
    _, text = small_config(small_store(), **SHAPE, model=model)
    text = text.replace("[baselines]\nmethods = []\n", "")
    return text + toml_text({**FINMEM, **extra})


def _run(tmp_path, text: str, backend=None, **kw):
    cfg = parse_config(tomllib.loads(text))
    backend = backend or with_finmem(scripted())
    res = run_experiment(cfg, tmp_path / "exp", config_text=text, backend=backend, embedder=EMB, **kw)
    return cfg, res, backend


def test_finmem_on_a_thinking_backbone_gets_the_configured_budget(tmp_path):
    # qwen3-4b: the thinking backbone of the GPU configs; its 16,384-token budget reaches FinMem
    model = {"backbone": "qwen3-4b", "thinking": True}
    budgets = {"model.max_tokens": {"direction": 16384, "reflection": 8192}}
    cfg, _res, backend = _run(tmp_path, _text(model, **budgets))
    assert (cfg.baselines.finmem.max_tokens_decision, cfg.baselines.finmem.max_tokens_reflection) == (
        16384,
        8192,
    )
    decisions = [r for r in backend.calls if r.call_type == DECISION_CALL]
    reflections = [r for r in backend.calls if r.call_type == REFLECTION_CALL]
    assert decisions and reflections
    assert {r.max_tokens for r in decisions} == {16384}  # not the schema's ~200 tokens
    assert {r.max_tokens for r in reflections} == {8192}
    assert all(r.thinking is True and r.model == "qwen3-4b" for r in decisions)
    # FinMem's own fields win over [model.max_tokens]
    own = {**FINMEM["baselines.finmem"], "max_tokens_decision": 4096}
    cfg2 = parse_config(tomllib.loads(_text(model, **budgets, **{"baselines.finmem": own})))
    assert (cfg2.baselines.finmem.max_tokens_decision, cfg2.baselines.finmem.max_tokens_reflection) == (
        4096,
        8192,
    )


def test_cut_finmem_replies_are_counted_in_the_summary(tmp_path):
    def cut(req):  # a reasoning model that runs past the budget on every decision
        return " ".join(["think"] * (req.max_tokens + 5))

    base = scripted()
    backend = ScriptedBackend([*base.rules, Rule(DECISION_CALL, cut), *with_finmem(base).rules[-1:]])
    text = _text({"backbone": "smollm2-135m"})
    _cfg, res, _ = _run(tmp_path, text, backend=backend)
    doc = res.baselines[0]
    fb = doc["extra"]["fallbacks"]
    n = doc["extra"]["tokens_by_call_type"][DECISION_CALL]["calls"]
    assert fb["cut_at_max_tokens"] == n and n > 0
    row = next(line for line in (res.out_dir / "summary.md").read_text().splitlines() if "| finmem-" in line)
    assert row.rstrip().endswith(f"| {n} |")  # the "cut at max_tokens" column


def test_a_fixed_finmem_backbone_runs_on_its_own_backend(tmp_path):
    text = _text(
        {"backbone": "smollm2-135m"},
        **{"baselines.finmem": {**FINMEM["baselines.finmem"], "model": "tiny-qwen3"}},
    )
    cfg = parse_config(tomllib.loads(text))
    assert cfg.baselines.finmem.model == "tiny-qwen3" and cfg.finmem_backend_spec().model == "tiny-qwen3"
    with pytest.raises(ConfigError, match=r"baselines.finmem.model='tiny-qwen3' differs from model.backbone"):
        _run(tmp_path, text)
    agent, fm = scripted(), with_finmem(scripted())
    _cfg, res, _ = _run(tmp_path / "b", text, backend=agent, finmem_backend=fm)
    assert {r.model for r in agent.calls} == {"smollm2-135m"}
    assert {r.call_type for r in agent.calls} <= {
        "pair_selection",
        "direction",
        "reflection",
        "break_check",
        "news_verify",
    }
    assert {r.model for r in fm.calls} == {"tiny-qwen3"} and {r.call_type for r in fm.calls} >= {
        DECISION_CALL
    }
    manifest = json.loads((res.out_dir / "manifest.json").read_text())
    assert manifest["sampling"][DECISION_CALL]["model"] == "tiny-qwen3"
    assert manifest["sampling"]["direction"]["model"] == "smollm2-135m"


def test_a_fixed_finmem_backbone_is_one_row_of_the_matrix(tmp_path):
    _, text = small_config(small_store(), **SHAPE)
    text = text.replace("[baselines]\nmethods = []\n", "")
    doc = tomllib.loads(text)
    doc["baselines"] = {"finmem": {"model": "tiny-qwen3"}}
    doc["matrix"] = {"name": "m", "seeds": [0], "backbones": ["smollm2-135m", "tiny-qwen3"]}
    cells = parse_matrix(doc, base_dir=tmp_path).cells()
    methods = {c.backbone.key: c.config.baselines.methods for c in cells}
    assert "finmem" in methods["tiny-qwen3"] and "finmem" not in methods["smollm2-135m"]
    assert "eg_ddqn" in methods["smollm2-135m"]  # the other baselines stay
    doc["baselines"] = {"finmem": {"model": "llama-3.1-8b"}}
    with pytest.raises(ConfigError, match=r"llama-3\.1-8b' is not the key of a backbone"):
        parse_matrix(doc, base_dir=tmp_path).cells()
