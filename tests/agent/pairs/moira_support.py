"""Shared helpers of the Moira tests (not a conftest): a small synthetic market with a planted
structural break inside the test window, configs written as TOML text, and a scripted "model"
whose replies are a function of the prompt (so decisions depend on the data they were shown)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.synthetic import BreakSpec, SyntheticConfig, generate_market, write_market
from agent.pairs.experiment.config import ExperimentConfig, parse_config
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest

#: The small market: 700 sessions from 2013-01-02; LMNS (paired with CIRQ) restates its
#: accounts at session 580 (2015-04-06): test step 56, between the boundaries at 47 and 70.
SMALL = SyntheticConfig(n_sessions=700, breaks=(BreakSpec("LMNS", 580, "restatement", -0.30),), n_decoys=2)
BREAK_DATE = "2015-04-06"
#: train: sessions 510-524 (15); test: sessions 525-609 (85)
WINDOWS = {
    "train_start": "2014-12-26",
    "train_end": "2015-01-16",
    "test_start": "2015-01-19",
    "test_end": "2015-05-15",
}

#: Prompt sizes for the tiny random Qwen3 (a 4,096-token context) on the small market.
TINY_PROMPT = {
    "reason_max_chars": 40,
    "reflection_max_chars": 60,
    "principle_max_chars": 60,
    "description_max_chars": 0,
    "news_per_leg": 1,
    "reflection_max_records": 6,
}

_CACHE: dict[str, Path] = {}


def small_store() -> Path:
    """The small market's store, built once per test process (read-only: copy before editing)."""
    if "small" not in _CACHE:
        root = Path(tempfile.mkdtemp(prefix="moira-small-"))
        atexit.register(shutil.rmtree, root, True)
        files = write_market(generate_market(SMALL), root / "files")
        with MarketStore(root / "market.sqlite") as store:
            import_files(
                store, prices=[files["prices"]], news=[files["news"]], companies=[files["companies"]]
            )
        _CACHE["small"] = root / "market.sqlite"
    return _CACHE["small"]


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML for {v!r}")


def toml_text(tables: dict[str, Any]) -> str:
    """A TOML document of plain tables (values: str, int, float, bool, lists; ``model.max_tokens``
    style dotted names allowed; ``variants`` as a list of dicts)."""
    out = []
    for name, body in tables.items():
        if name == "variants":
            for v in body:
                out.append("[[variants]]")
                out += [f"{k} = {_toml_value(x)}" for k, x in v.items()]
            continue
        out.append(f"[{name}]")
        out += [f"{k} = {_toml_value(x)}" for k, x in body.items()]
    return "\n".join(out) + "\n"


def small_config(store: Path, **overrides: dict[str, Any]) -> tuple[ExperimentConfig, str]:
    """A short experiment on the small market: 1 seed, No-Beta, 2 replay cycles, no baseline
    (override any table by passing ``table={...}``; keys merge into the defaults)."""
    tables: dict[str, Any] = {
        "experiment": {"name": "t", "store": str(store), "seeds": [0], "exposures": ["no_beta"]},
        "windows": dict(WINDOWS),
        "model": {"backbone": "smollm2-135m", "temperature": 0.0},
        "policy": {"max_cycles": 2},
        "screen": {"lookback": 500, "min_sessions": 252},
        # the agent alone unless a test asks for baselines (an absent table means all of them)
        "baselines": {"methods": []},
    }
    for name, body in overrides.items():
        if name == "variants":
            tables["variants"] = body
        else:
            tables[name] = {**tables.get(name, {}), **body}
    text = toml_text(tables)
    return parse_config(tomllib.loads(text)), text


def training_oracle() -> dict[str, str]:
    """Best action of CIRQ/LMNS (No-Beta) at each training step label of
    :func:`small_config`'s window, from the prices of :func:`small_store`."""
    from agent.pairs.market.view import MarketView
    from agent.pairs.screen.causal import ScreenConfig

    cfg, _ = small_config(small_store())
    with MarketStore(small_store(), create=False) as store:
        view = MarketView(store, (), ScreenConfig(lookback=500, min_sessions=252), end=cfg.windows.test_end)
    days = view.sessions(cfg.windows.train_start, cfg.windows.train_end)
    best = {}
    for k, d in enumerate(days[:-1]):
        g = view.index(d)
        r_a = view.price("CIRQ", g + 1) / view.price("CIRQ", g) - 1
        r_b = view.price("LMNS", g + 1) / view.price("LMNS", g) - 1
        best[f"step {k + 1:03d}"] = "LONG_SHORT" if r_a > r_b else "SHORT_LONG"
    return best


def payload(req: ChatRequest) -> dict[str, Any]:
    return json.loads(req.messages[-1].content)


def pick_first(req: ChatRequest) -> str:
    labels = req.json_schema["properties"]["selected_pair"]["enum"]
    return json.dumps({"selected_pair": labels[0], "pair_selection_reason": "first candidate"})


def mean_reversion(req: ChatRequest) -> str:
    """Trade toward the spread's mean when |z_trade| > 0.5, else FLAT."""
    z = payload(req)["active_candidate"]["z_trade"] or 0.0
    action = "SHORT_LONG" if z > 0.5 else "LONG_SHORT" if z < -0.5 else "FLAT"
    return json.dumps({"action": action, "direction_reason": f"z {z}"})


HEALTHY_BREAK_CHECK = {
    "semantic_relationship_signal": "stable",
    "leg_a_financial_sentiment": "neutral",
    "leg_b_financial_sentiment": "neutral",
    "sentiment_symmetry": "mixed_or_neutral",
    "news_break_level": "HEALTHY",
    "is_relationship_break_signal": False,
    "reason": "nothing material",
}


def verify_reply(req: ChatRequest) -> str:
    """A verified critical event for restatements and fraud, routine otherwise."""
    event = payload(req)["candidate_event"]
    text = json.dumps(event).lower()
    critical = "restate" in text or "fraud" in text or "going concern" in text
    return json.dumps(
        {
            "event_type": "restatement" if critical else "routine_mention",
            "affects_pair_relationship": critical,
            "severity": "CRITICAL" if critical else "LOW",
            "reasoning": "scripted",
        }
    )


def principles_reply(*sets: list[str]) -> Callable[[ChatRequest], str]:
    """Reflection replies: the k-th call returns ``sets[k]`` (the last one repeats)."""
    calls = {"n": 0}

    def reply(req: ChatRequest) -> str:
        k = min(calls["n"], len(sets) - 1)
        calls["n"] += 1
        return json.dumps({"reflection": "scripted reflection", "principles": sets[k]})

    return reply


def scripted(
    *,
    select: Any = pick_first,
    direction: Any = mean_reversion,
    reflection: Any = None,
    break_check: Any = None,
    news_verify: Any = verify_reply,
) -> ScriptedBackend:
    return ScriptedBackend(
        [
            Rule("pair_selection", select),
            Rule("direction", direction),
            Rule(
                "reflection",
                reflection
                or principles_reply(["When the trading-window z-score is stretched, trade toward the mean."]),
            ),
            Rule("break_check", break_check or HEALTHY_BREAK_CHECK),
            Rule("news_verify", news_verify),
        ]
    )


def with_finmem(base: ScriptedBackend) -> ScriptedBackend:
    """``base`` plus a FinMem script: decisions follow the trading z shown, one fixed reflection."""
    from agent.pairs.baselines.finmem.calls import DECISION_CALL, ID_FIELDS, REFLECTION_CALL

    none: dict[str, list[int]] = {f: [] for f in ID_FIELDS.values()}

    def decide(req: ChatRequest) -> str:
        p = json.loads(req.messages[1].content)
        z = p["today"]["z_trade"]
        action = "FLAT" if z is None or abs(z) < 0.3 else "SHORT_LONG" if z > 0 else "LONG_SHORT"
        return json.dumps({"action": action, "reason": f"z {z}", **none})

    def reflect(req: ChatRequest) -> str:
        return json.dumps({"reflection": "trade toward the mean", **none})

    return ScriptedBackend([*base.rules, Rule(DECISION_CALL, decide), Rule(REFLECTION_CALL, reflect)])


def kill_at_gate(proc: subprocess.Popen, marker: Path) -> None:
    """Wait for a worker's gate marker (never a timer), then kill -9 its whole process group."""
    deadline = time.monotonic() + 600  # a safety net only; the kill waits for the marker
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"worker ended before its gate: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError("worker never reached its gate")
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    marker.unlink()
