"""Numbers that move a result are settings, not constants buried in code: the principle bounds and
rules, the pair-quality words, the spread-state words, the Beta window, EG-DDQN's state scale and
depth, FinMem's relative-move window. Each default is the value the code had; each setting
reaches the place that uses it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from moira_support import small_config, small_store

from agent.pairs.baselines.eg_ddqn import DDQNConfig, _build_net
from agent.pairs.experiment.baselines import _settings
from agent.pairs.experiment.matrix_config import Backbone
from agent.pairs.market.view import spread_state_label
from agent.pairs.moira.calls import CallSettings, reflection_request
from agent.pairs.moira.config import CONSOLIDATION_FIELDS, PRINCIPLE_RULES, PolicyConfig, PromptConfig
from agent.pairs.moira.memory import PairQuality, QualityRule
from agent.pairs.moira.principles import RULES, PrincipleValidator
from localfin.errors import ConfigError
from serving.chat.types import Sampling


def _reflection_schema(prompt: PromptConfig) -> dict:
    tokens = small_config(small_store())[0].model.max_tokens
    s = CallSettings("smollm2-135m", Sampling(temperature=0.0, seed=0), tokens, prompt)
    return reflection_request(s, {"current_step": "step 010", "decisions": []}).json_schema


def test_the_principle_length_bound_of_the_reply_schema_is_the_setting() -> None:
    items = _reflection_schema(PromptConfig())["properties"]["principles"]["items"]
    assert items["minLength"] == 20 and items["maxLength"] == 160
    items = _reflection_schema(PromptConfig(principle_min_chars=35))["properties"]["principles"]["items"]
    assert items["minLength"] == 35
    assert (
        "minLength"
        not in _reflection_schema(PromptConfig(principle_min_chars=0))["properties"]["principles"]["items"]
    )
    with pytest.raises(ConfigError, match=r"prompt\.principle_min_chars=200; allowed: at most"):
        PromptConfig(principle_min_chars=200)


def test_the_validator_applies_the_configured_bounds_and_rules() -> None:
    v = PrincipleValidator(["KO", "PEP"], {"KO": "Coca-Cola"}, max_chars=0, min_words=4, min_chars=30)
    assert v.rule_broken("Trade toward the mean always.") == "too_short"  # 5 words, 29 characters
    assert v.rule_broken("Trade toward the mean when stretched.") is None
    three = PrincipleValidator([], {}, max_chars=0, min_words=3)
    assert three.rule_broken("Fade wide spreads.") is None
    assert PrincipleValidator([], {}, max_chars=0).rule_broken("Fade wide spreads.") == "too_short"
    # a rule switched off no longer rejects; the others still do
    no_ticker = PrincipleValidator(["KO"], {}, max_chars=0, rules=[r for r in RULES if r != "ticker"])
    assert no_ticker.rule_broken("Fade KO when the spread is far above its mean.") is None
    assert no_ticker.rule_broken("Fade the spread when it is wide on step 012.") == "step"
    assert ("empty", *PRINCIPLE_RULES) == RULES


def test_policy_settings_and_what_the_warmup_depends_on() -> None:
    p = PolicyConfig()
    assert (p.principle_min_words, p.principle_rules, p.warmup_floor) == (4, PRINCIPLE_RULES, True)
    with pytest.raises(ConfigError, match=r"policy.principle_rules=\['tickers'\]; allowed: distinct names"):
        PolicyConfig(principle_rules=("tickers",))
    # the two A3 conditions differ only after the warmup: they share it
    full, control = PolicyConfig(), PolicyConfig(consolidation=False, max_cycles=0)
    assert full != control and full.warmup_part() == control.warmup_part()
    assert PolicyConfig(direction_rule="any_mention").warmup_part() != full.warmup_part()
    assert set(CONSOLIDATION_FIELDS) < {f for f in PolicyConfig.__dataclass_fields__}


def test_pair_quality_and_spread_state_words_follow_their_settings() -> None:
    q = PairQuality("KO/PEP", held=10, reverted=5)
    assert q.quality == "mixed"
    assert q.quality_under(QualityRule(reverting=0.5)) == "reverting"
    assert q.quality_under(QualityRule(weak=0.6, reverting=0.7)) == "weak"
    assert PairQuality("KO/PEP", held=2, reverted=2).quality_under(QualityRule(min_held=2)) == "reverting"
    assert spread_state_label(1.5) == "above its mean: A somewhat rich against B"
    assert spread_state_label(1.5, far=1.4, near=0.5) == "far above its mean: A rich against B"
    assert spread_state_label(-0.7, far=2.0, near=0.5) == "below its mean: A somewhat cheap against B"
    with pytest.raises(ConfigError, match=r"prompt\.spread_near_z=3\.0, spread_far_z=2\.0; allowed"):
        PromptConfig(spread_near_z=3.0)
    with pytest.raises(ConfigError, match=r"prompt\.pair_quality_weak=0\.6, pair_quality_reverting=0\.55"):
        PromptConfig(pair_quality_weak=0.6)


def test_the_beta_window_reaches_the_agent_and_the_baselines() -> None:
    cfg, _ = small_config(small_store(), experiment={"beta_window": 40})
    assert cfg.beta_window == 40 and _settings(cfg).beta_window == 40
    assert small_config(small_store())[0].beta_window == 20
    with pytest.raises(ConfigError, match=r"experiment\.beta_window=2; allowed: 3\.\.2520"):
        small_config(small_store(), experiment={"beta_window": 2})


def test_eg_ddqn_state_scale_and_depth_are_settings() -> None:
    torch = pytest.importorskip("torch")
    linear = [m for m in _build_net(torch, DDQNConfig()) if isinstance(m, torch.nn.Linear)]
    assert len(linear) == 3  # two hidden layers and the output, as before
    deep = [m for m in _build_net(torch, DDQNConfig(hidden_layers=4)) if isinstance(m, torch.nn.Linear)]
    assert len(deep) == 5 and deep[-1].out_features == 3
    assert DDQNConfig().z_scale == 2.0
    with pytest.raises(ConfigError, match="z_scale=0"):
        DDQNConfig(z_scale=0)


def test_finmems_relative_move_window_names_its_payload_field() -> None:
    from agent.pairs.baselines.finmem.observe import Observation

    nan = math.nan
    obs = Observation(0, 10.0, 20.0, nan, nan, nan, nan, nan, 0.01, rel_move_sessions=10)
    payload = obs.to_payload()
    assert payload["rel_move_10_pct"] == pytest.approx(1.0) and "rel_move_5_pct" not in payload
    assert json.dumps(Observation(0, *(np.nan,) * 8).to_payload()).count("rel_move_5_pct") == 1


def test_a_backbone_may_run_its_own_exposures() -> None:
    assert Backbone("q", "qwen3-32b", exposures=("beta",)).exposures == ("beta",)
    with pytest.raises(ConfigError, match=r"backbones.exposures=\['long'\] of backbone 'q'; allowed"):
        Backbone("q", "qwen3-32b", exposures=("long",))
