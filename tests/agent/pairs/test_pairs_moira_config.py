"""Experiment configs from TOML: defaults, variants, the packaged demo config, and errors that
name the key and the allowed values."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agent.pairs.experiment.config import load_config, parse_config
from agent.pairs.experiment.demo import demo_config_text
from agent.pairs.lifecycle.calls import budget
from agent.prompting import load_prompt
from localfin.errors import ConfigError

BASE = """
[experiment]
name = "x"
store = "data/market.sqlite"
[windows]
train_start = "2019-01-02"
train_end = "2019-12-31"
test_start = "2020-01-02"
test_end = "2020-12-31"
"""


def test_defaults_and_relative_store(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(BASE)
    cfg = load_config(p)
    assert cfg.store == tmp_path / "data" / "market.sqlite"
    assert cfg.exposures == ("no_beta", "beta") and cfg.seeds == (0,)
    assert cfg.model.backbone == "smollm2-135m" and cfg.model.max_tokens.direction == 0  # auto
    assert cfg.variants[0].name == "full" and cfg.variants[0].policy.max_cycles == 8
    assert cfg.variants[0].policy.stop_after_rejections == 2
    assert cfg.lifecycle.validation_period == 23 and cfg.screen.top_k == 5 and cfg.cost_bps == 0.0
    assert [r[0] for r in cfg.run_ids()] == ["full-no_beta-s0", "full-beta-s0"]


def test_variants_override_policy_and_selection():
    text = (
        BASE
        + """
[policy]
max_cycles = 4
[[variants]]
name = "full"
[[variants]]
name = "a3"
consolidation = false
[[variants]]
name = "a4"
reselection = false
fixed_pair = "KO/PEP"
"""
    )
    cfg = parse_config(tomllib.loads(text))
    full, a3, a4 = cfg.variants
    assert full.policy.consolidation and a3.policy.max_cycles == 4 and not a3.policy.consolidation
    assert not a4.selection.reselection and a4.selection.fixed_pair == "KO/PEP" and a4.policy.consolidation


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ("[model]\nbackbone = 'x'\nbakend = 'vllm'\n", "model.bakend.*allowed"),
        ("[model]\nbackend = 'grpc'\n", "model.backend='grpc'; allowed: vllm, openai"),
        ("[model]\nbackend = 'openai'\n", "model.base_url is required"),
        ("[model]\ntemperature = 'hot'\n", "model.temperature='hot'; allowed: a number"),
        ("[model.max_tokens]\ndirection = 5\n", r"model.max_tokens.direction=5; allowed: 0 \(auto\)"),
        ("[policy]\nmax_cycles = -1\n", "policy.max_cycles=-1; allowed: 0..50"),
        ("[selection]\nfallback = 'random'\n", "selection.fallback='random'; allowed: keep, top_candidate"),
        ("[selection]\nfixed_pair = 'KO'\n", "selection.fixed_pair='KO'"),
        ("[screen]\ntop_k = 0\n", "top_k=0"),
        ("[lifecycle]\nvalidation_period = 0\n", "validation_period=0"),
        ("[lifecycle]\nbreak_every = 3\n", "lifecycle.break_every"),
        ("[prompt]\nnews_per_leg = 99\n", "prompt.news_per_leg=99; allowed: an integer in 0..50"),
        ("[oops]\na = 1\n", "<top>.oops"),
    ],
)
def test_errors_name_the_key_and_the_allowed_values(extra, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(tomllib.loads(BASE + extra))


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ('test_start = "2020-01-02"', 'test_start = "2019-06-01"', "must come after train_end"),
        ('name = "x"', 'name = "a b"', "experiment.name='a b'"),
        ('name = "x"', 'name = "x"\nexposures = ["gamma"]', "experiment.exposures=.*allowed: no_beta, beta"),
        ('name = "x"', 'name = "x"\nseeds = [1, 1]', "experiment.seeds"),
        ('train_end = "2019-12-31"', 'train_end = "31/12/2019"', "windows.train_end='31/12/2019'"),
    ],
)
def test_experiment_and_window_errors(old, new, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(tomllib.loads(BASE.replace(old, new)))


def test_bad_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment\nname=1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_packaged_demo_config_is_valid_and_cannot_cut_a_reply():
    text = demo_config_text("tiny-qwen3")
    assert 'backbone = "tiny-qwen3"' in text
    cfg = parse_config(tomllib.loads(text), base_dir=Path("/x"))
    assert cfg.store == Path("/x/market.sqlite") and len(cfg.run_ids()) == 2
    assert cfg.variants[0].policy.max_cycles == 2 and cfg.lifecycle.validation_period == 6
    # auto budgets are the schema bounds + 8: a bounded reply always fits
    for name in ("pairs_select", "pairs_direction", "pairs_reflect", "pairs_break", "pairs_news_verify"):
        schema = load_prompt(name).schema
        assert budget(0, schema) > 50
    assert budget(300, {}) == 300


def test_every_packaged_config_loads():
    """The shipped experiment and matrix files parse and validate (their stores need not exist)."""
    from importlib import resources

    from agent.pairs.experiment.config import load_config
    from agent.pairs.experiment.matrix_config import load_matrix

    root = resources.files("agent.pairs").joinpath("configs")
    files = sorted(p for p in root.iterdir() if p.name.endswith(".toml"))
    assert {"demo.toml", "staples_gpu.toml", "tech2023_cpu.toml"} <= {p.name for p in files}
    for p in files:
        text = p.read_text(encoding="utf-8")
        if "[matrix]" in text:
            assert load_matrix(p).cells(), p.name
        else:
            cfg = load_config(p)
            if p.name.endswith("_gpu.toml"):  # the paper's settings at scale
                assert cfg.model.server_default and cfg.no_beta_legs == "equal_shares", p.name
                assert cfg.prompt.news_token_budget > 0 and cfg.baselines.finmem.max_tokens_decision == 16384
