"""The example plugin under examples/plugin, installed as a user installs it (pip writes its
dist-info with entry_points.txt into a throwaway folder put on PYTHONPATH), then used by the
command-line program in child processes: `localfin pairs run` runs its baseline beside the agent,
and `localfin qa eval` evaluates its dataset with its scorer and its tool.

The "model" of both commands is the scripted test backend (unit tests only), itself registered
through the `localfin.backends` entry-point group by a second throwaway distribution: its replies
are a function of the prompt (the QA solver reads the two values from the question's context,
calls the plugin's tool and answers with the tool's output), so the checks below do not depend on
a model's luck. Everything comes from the repository (the synthetic market of the Moira tests and
the plugin's bundled items): nothing outside it is read.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "plugin"
sys.path.insert(0, str(ROOT / "tests" / "agent" / "pairs"))

#: the test-only backend: Moira's scripted replies, and a QA solver that uses the plugin's tool
BACKEND = r"""
import json
import re

from serving.scripted import Rule, ScriptedBackend


def _turn(req):
    return sum(1 for m in req.messages if m.role == "assistant")


def _act(action, **args):
    return json.dumps({"thought": f"do {action}", "action": action, "args": args})


def solve(req):
    props = (req.json_schema or {}).get("properties", {})
    if _turn(req) == 0 and "plan" in props:
        return json.dumps({"inputs": "the two values", "experience": "none", "plan": "pct_change, answer"})
    first = next(x.content for x in req.messages if x.role == "user")
    m = re.search(r"Output of pct_change:\n(\S+)", req.messages[-1].content)
    if m:
        decimals = int(re.search(r"with (\d) decimal", first).group(1))
        return _act("final_answer", answer=f"{float(m.group(1)):.{decimals}f}")
    old, new = (float(v) for v in re.findall(r"20(?:22|23): ([-\d.]+)", first))
    return _act("pct_change", old=old, new=new)


def open_scripted(spec, registry):
    from moira_support import scripted

    registry.get(spec.model)
    return ScriptedBackend([*scripted().rules, Rule("qa_solve", solve)])
"""


def _pip_install(src: Path, site: Path) -> None:
    """``pip install --target`` of a copy of ``src`` (the build writes into its source folder)."""
    work = site.parent / f"src-{src.name}"
    shutil.copytree(src, work)
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
    cmd += ["--disable-pip-version-check", "--no-cache-dir"]
    proc = subprocess.run([*cmd, "--target", str(site), str(work)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def _test_backend(site: Path) -> None:
    (site / "localfin_test_backend.py").write_text(BACKEND)
    info = site / "localfin_test_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: localfin-test-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[localfin.backends]\nscripted_test = localfin_test_backend:open_scripted\n"
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    site = root / "site"
    _pip_install(PLUGIN, site)
    _test_backend(site)
    return site


def _localfin(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    paths = [str(site), str(ROOT / "tests" / "agent" / "pairs"), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["LOCALFIN_RUNS_DIR"] = str(cwd / "runs")
    cmd = [sys.executable, "-m", "localfin_cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)


def test_pip_wrote_the_entry_points(site):
    infos = list(site.glob("localfin_example_plugin-*.dist-info"))
    assert len(infos) == 1
    text = (infos[0] / "entry_points.txt").read_text()
    for line in (
        "[localfin.baselines]",
        "bollinger = localfin_example_plugin.baseline:BOLLINGER",
        "[localfin.qa_datasets]",
        "pct_change_qa = localfin_example_plugin.dataset:DATASET",
        "[localfin.tools]",
        "pct_change = localfin_example_plugin.tools:PCT_CHANGE",
    ):
        assert line in text
    assert (site / "localfin_example_plugin" / "data" / "items.jsonl").is_file()


def test_pairs_run_runs_the_plugin_baseline(site, tmp_path):
    from moira_support import WINDOWS, small_store, toml_text

    doc = {
        "experiment": {"name": "plugin", "store": str(small_store()), "seeds": [0], "exposures": ["no_beta"]},
        # 15 training sessions, 31 test sessions
        "windows": {**WINDOWS, "test_end": "2015-03-02"},
        "model": {"backbone": "smollm2-135m", "backend": "scripted_test", "temperature": 0.0},
        "policy": {"max_cycles": 1},
        "screen": {"lookback": 500, "min_sessions": 252},
        "baselines": {"methods": ["eg_z", "bollinger"]},
        "baselines.bollinger": {"window": 10, "width": 1.5},
    }
    config = tmp_path / "exp.toml"
    config.write_text(toml_text(doc))
    out = tmp_path / "exp"
    proc = _localfin(site, "pairs", "run", "--config", str(config), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]

    run = out / "runs" / "bollinger-no_beta"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["kind"] == "baseline" and metrics["method"] == "bollinger"
    extra = metrics["extra"]
    assert extra["plugin"] == "plugin localfin-example-plugin (localfin_example_plugin.baseline:BOLLINGER)"
    assert extra["config"] == {"method": "bollinger", "options": {"window": 10, "width": 1.5}}
    egz = json.loads((out / "runs" / "eg_z-no_beta" / "metrics.json").read_text())
    assert extra["pair"] == egz["extra"]["pair"] != ""  # the same pair as the built-in baseline
    steps = pd.read_parquet(run / "steps.parquet")
    m = metrics["metrics"]
    assert len(steps) == m["n_transitions"] == extra["n_sessions"] - 1 == 30
    assert math.isfinite(m["cumulative_return"]) and math.isfinite(m["max_drawdown"])
    # the plugin's decisions, as its notes explain them (the pair has years of prices before step
    # 001, so the 10-session band is there from the first decision: every note is a z)
    notes = [str(n) for n in steps["note"]]
    assert all(n.startswith("ratio z=") for n in notes), notes[:3]
    zs = [float(n.split("=")[1].split(";")[0]) for n in notes]
    actions = list(steps["action"])
    for z, a in zip(zs, actions, strict=True):  # the band rule, step by step
        if z >= 1.5:
            assert a == "SHORT_LONG"
        elif z <= -1.5:
            assert a == "LONG_SHORT"
    assert {"LONG_SHORT", "SHORT_LONG"} & set(actions), actions
    # the experiment's own summary lists it beside the agent
    summary = (out / "summary.md").read_text()
    assert "bollinger-no_beta" in summary


def test_qa_eval_uses_the_plugin_dataset_scorer_and_tool(site, tmp_path):
    bundled = (site / "localfin_example_plugin" / "data" / "items.jsonl").read_text().splitlines()
    # the bundled items, one more whose gold the solver's answer misses, and a record that cannot be read
    wrong = json.loads(bundled[0]) | {"id": "pc-wrong", "answer": 13.0}
    data = tmp_path / "items.jsonl"
    data.write_text("\n".join([*bundled, json.dumps(wrong), '{"id": "pc-bad", "question": "?"}']) + "\n")
    run = tmp_path / "qa"
    proc = _localfin(
        site,
        "qa",
        "eval",
        "--variant",
        "ft",
        "--dataset",
        "pct_change_qa",
        "--data",
        str(data),
        "--tools",
        "pct_change",
        "--backend",
        "scripted_test",
        "--model",
        "smollm2-135m",
        "--out",
        str(run),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = proc.stdout + proc.stderr
    assert "5 items selected; 1 records skipped (first: answer None is not a number)" in said

    scores = json.loads((run / "scores.json").read_text())
    assert (scores["n"], scores["correct"]) == (5, 4)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["tools"] == ["pct_change"]
    traces = {t["item_id"]: t for t in map(json.loads, (run / "trace.jsonl").read_text().splitlines())}
    assert sorted(traces) == ["pc-001", "pc-002", "pc-003", "pc-004", "pc-wrong"]
    for line in [*bundled, json.dumps(wrong)]:
        item = json.loads(line)
        t = traces[item["id"]]
        # the plugin's scorer graded it (its own words), on the plugin's gold
        assert t["dataset"] == "pct_change_qa" and t["score_detail"].startswith("pct_change_qa rule: ")
        assert t["correct"] is (item["id"] != "pc-wrong") and t["gate_ok"] is True
        # the plugin's tool was called with the two values of the context and answered
        calls = [s for s in t["steps"] if s["action"] == "pct_change"]
        old, new = (float(v.split(": ")[1]) for v in item["context"].splitlines()[1:])
        assert calls and calls[0]["args"] == {"old": old, "new": new} and calls[0]["tool_ok"] is True
        assert calls[0]["observation"] == f"{(new - old) / abs(old) * 100:.4f}"
        assert t["answer"] == f"{(new - old) / abs(old) * 100:.{item['decimals']}f}"
