"""Baselines of installed plugins (entry-point group ``localfin.baselines``): a throwaway
distribution on sys.path, run by the baseline runner on the small synthetic market. A plugin sees
nothing after the session it decides at, its run folder is a built-in baseline's, its options
come strictly from ``[baselines.<name>]``, and a broken plugin is an error naming it."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from moira_support import WINDOWS, small_store

from agent.data.store import MarketStore
from agent.pairs.baselines.config import BaselinesConfig, parse_baselines
from agent.pairs.baselines.plugins import BASELINES, PluginBaselineConfig, baseline_names, is_seeded
from agent.pairs.baselines.runner import run_baseline
from agent.pairs.experiment.config import ModelConfig
from localfin.errors import ConfigError
from localfin.plugins import PluginError

PLUGIN = """
from dataclasses import dataclass

from agent.pairs.baselines.plugins import BaselinePlugin, Decision

SEEN = []


@dataclass(frozen=True)
class Opts:
    flip: bool = False


def decide(view):
    SEEN.append(view)
    a, b = ("SHORT_LONG", "LONG_SHORT") if view.options.flip else ("LONG_SHORT", "SHORT_LONG")
    return Decision(a if view.step % 2 == 0 else b, f"step {view.step}")


ALTERNATE = BaselinePlugin("alternate", decide, "long A on even steps", seeded=True, options=Opts)


def make_named_wrong():
    return BaselinePlugin("other_name", decide)


def bad_action(view):
    return "BUY"


def boom(view):
    raise RuntimeError("no data for this")


BAD_ACTION = BaselinePlugin("bad_action", bad_action)
BOOM = BaselinePlugin("boom", boom)
"""


@pytest.fixture()
def plugin_site(tmp_path, monkeypatch):
    def install(entry_points: str, name: str = "fake-baselines") -> None:
        site = tmp_path / "site"
        site.mkdir()
        (site / "fake_baselines.py").write_text(PLUGIN)
        info = site / f"{name.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        monkeypatch.syspath_prepend(str(site))
        importlib.invalidate_caches()
        BASELINES.refresh()

    yield install
    monkeypatch.undo()
    sys.modules.pop("fake_baselines", None)
    importlib.invalidate_caches()
    BASELINES.refresh()


GOOD = "[localfin.baselines]\nalternate = fake_baselines:ALTERNATE\n"


def _pool() -> tuple[str, ...]:
    with MarketStore(small_store(), create=False) as store:
        return tuple(sorted(store.tickers()))


def test_a_plugin_baseline_runs_causally_and_writes_a_baseline_run(plugin_site, tmp_path):
    plugin_site(GOOD)
    assert baseline_names()[-1] == "alternate" and is_seeded("alternate") and not is_seeded("eg_z")
    assert BASELINES.origin("alternate") == "plugin fake-baselines (fake_baselines:ALTERNATE)"
    seen = sys.modules["fake_baselines"].SEEN
    seen.clear()
    opts = sys.modules["fake_baselines"].Opts(flip=True)
    with MarketStore(small_store(), create=False) as store:
        res = run_baseline(
            store,
            PluginBaselineConfig("alternate", opts),
            pool=_pool(),
            train=(WINDOWS["train_start"], WINDOWS["train_end"]),
            test=(WINDOWS["test_start"], WINDOWS["test_end"]),
            exposure="no_beta",
            out_dir=tmp_path,
        )
    steps = pd.read_parquet(res.run_dir / "steps.parquet")
    n = res.metrics.n_transitions
    assert n == len(steps) == len(seen) == res.extra["n_sessions"] - 1
    # every view ends at the session it decides at: nothing after it, and nothing writable
    for i, (view, day) in enumerate(zip(seen, steps["date"], strict=True)):
        assert view.step == i and str(view.session) == str(day)
        assert len(view.price_a) == len(view.price_b) == len(view.dates) == view.t + 1
        assert view.dates[view.first].item().isoformat() == str(steps["date"].iloc[0])
        with pytest.raises(ValueError, match="read-only"):
            view.price_a[-1] = 0.0
    assert seen[0].train[1] < seen[0].first and seen[0].position == "FLAT"
    assert seen[1].position == "SHORT_LONG"  # its own previous decision
    # the plugin's decisions, settled like a built-in's (every session of the pair is tradable here)
    expected = ["SHORT_LONG" if i % 2 == 0 else "LONG_SHORT" for i in range(n)]
    assert list(steps["action"]) == expected and list(steps["note"])[:2] == ["step 0", "step 1"]
    assert res.extra["plugin"].startswith("plugin fake-baselines") and res.method == "alternate"
    assert res.extra["config"] == {"method": "alternate", "options": {"flip": True}}
    assert np.isfinite(res.metrics.cumulative_return)


def test_the_baselines_table_takes_plugin_names_and_their_options(plugin_site):
    model = ModelConfig()
    with pytest.raises(ConfigError, match=r"baselines.methods has \['alternate'\]; allowed: long_short"):
        parse_baselines({"methods": ["alternate"]}, model)
    plugin_site(GOOD)
    cfg = parse_baselines(
        {"methods": ["alternate", "eg_z"], "alternate": {"flip": True}}, model, file="x.toml"
    )
    assert cfg.ordered() == ("eg_z", "alternate")
    rules = cfg.rule_configs()
    assert rules[-1] == PluginBaselineConfig("alternate", sys.modules["fake_baselines"].Opts(flip=True))
    assert BaselinesConfig(methods=("alternate",)).rule_configs()[0].options.flip is False  # defaults
    with pytest.raises(ConfigError, match=r"x.toml.*baselines.alternate.flop"):
        parse_baselines({"methods": ["alternate"], "alternate": {"flop": True}}, model, file="x.toml")
    with pytest.raises(ConfigError, match=r"baselines.alternate.flip='yes'; allowed: true or false"):
        parse_baselines({"methods": ["alternate"], "alternate": {"flip": "yes"}}, model)
    with pytest.raises(ConfigError, match=r"allowed: long_short, .*, finmem, alternate"):
        BaselinesConfig(methods=("altrenate",))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "bad_action = fake_baselines:BAD_ACTION",
            r"'bad_action' \(plugin fake-baselines .*\) returned 'BUY'",
        ),
        (
            "boom = fake_baselines:BOOM",
            r"'boom' \(plugin fake-baselines .*\) failed at .*RuntimeError: no data",
        ),
    ],
)
def test_a_plugin_that_breaks_its_contract_is_an_error_naming_it(plugin_site, tmp_path, entry, message):
    plugin_site(f"[localfin.baselines]\n{entry}\n")
    name = entry.split(" =")[0]
    with MarketStore(small_store(), create=False) as store, pytest.raises(PluginError, match=message):
        run_baseline(
            store,
            PluginBaselineConfig(name),
            pool=_pool(),
            train=(WINDOWS["train_start"], WINDOWS["train_end"]),
            test=(WINDOWS["test_start"], WINDOWS["test_end"]),
            exposure="no_beta",
            out_dir=tmp_path,
        )


def test_a_plugin_cannot_take_a_builtin_name_or_misname_itself(plugin_site):
    plugin_site("[localfin.baselines]\neg_z = fake_baselines:ALTERNATE\n")
    with pytest.raises(PluginError, match="registers baseline 'eg_z', which localfin already has"):
        baseline_names()


def test_a_misnamed_plugin_is_refused(plugin_site):
    plugin_site("[localfin.baselines]\nsomething = fake_baselines:make_named_wrong\n")
    with pytest.raises(PluginError, match=r"plugin fake-baselines .*'something' is refused: its name is"):
        baseline_names()
