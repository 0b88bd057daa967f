"""The news the direction prompt carries (``[prompt] direction_news``): ``latest`` (paper A.2,
"latest available news": each leg's newest item) or ``window`` (every item of the lookback
window under the budget). Pair selection keeps its own count either way."""

from __future__ import annotations

import json
import tomllib

import pytest
from moira_support import scripted, small_config, small_store

from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.run import run_experiment
from localfin.errors import ConfigError

SHAPE = {"windows": {"test_end": "2015-02-27"}, "policy": {"max_cycles": 0}}
NEWS = {"news_per_leg": 5, "news_lookback_sessions": 20, "news_token_budget": 4096}


def _news(tmp_path, view: str) -> tuple[list[int], list[int]]:
    _, text = small_config(small_store(), **SHAPE, prompt={**NEWS, "direction_news": view})
    cfg = parse_config(tomllib.loads(text))
    be = scripted()
    run_experiment(cfg, tmp_path / view, config_text=text, backend=be)
    per_leg = []
    for r in be.calls:
        if r.call_type == "direction":
            c = json.loads(r.messages[-1].content)["active_candidate"]
            per_leg += [len(c["news_a"]), len(c["news_b"])]
    selection = [
        len(items)
        for r in be.calls
        if r.call_type == "pair_selection"
        for items in json.loads(r.messages[-1].content)["recent_news_by_ticker"].values()
    ]
    return per_leg, selection


def test_latest_shows_each_legs_newest_item_and_window_every_item(tmp_path) -> None:
    latest, sel_latest = _news(tmp_path, "latest")
    window, sel_window = _news(tmp_path, "window")
    assert latest and max(latest) == 1 and sum(latest) > 0  # one item a leg where there is news
    assert max(window) > 1  # the 20-session window holds more than one item a leg somewhere
    assert sel_latest == sel_window  # pair selection does not change


def test_direction_news_names_the_allowed_values() -> None:
    with pytest.raises(ConfigError, match=r"prompt\.direction_news='newest'; allowed: latest, window"):
        small_config(small_store(), prompt={"direction_news": "newest"})
