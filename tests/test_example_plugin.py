"""The example plugin under examples/plugin, and the plugin of docs/extending.md's walkthrough
(written from the guide's code blocks alone), installed as a user installs them offline (pip
writes their dist-info with entry_points.txt into a throwaway folder put on PYTHONPATH), then used
by the command-line program in child processes: `localfin plugins list` lists them, `localfin
pairs run` runs a plugin baseline beside the agent and `localfin pairs baselines` without it (the
guide's own commands and Python example), and `localfin qa eval` evaluates the example's dataset
with its scorer and its tool.

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
import re
import shlex
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

from serving.chat.scripted import Rule, ScriptedBackend


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


def _pip_install(srcs: list[Path], site: Path) -> None:
    """``pip install --target`` of copies of ``srcs`` (the build writes into its source folder),
    offline, as docs/extending.md says (``--no-build-isolation --no-index``; ``--no-deps``: with
    ``--target``, pip would install localfin itself again)."""
    works = []
    for src in srcs:
        works.append(site.parent / f"src-{src.name}")
        shutil.copytree(src, works[-1])
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
    cmd += ["--disable-pip-version-check", "--no-cache-dir"]
    proc = subprocess.run([*cmd, "--target", str(site), *map(str, works)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


GUIDE = ROOT / "docs" / "extending.md"


def _guide_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def guide_plugin(dest: Path) -> Path:
    """The plugin of the guide's walkthrough, written from its code blocks (each opens with a
    comment naming its file under ``my-plugin/``) into ``dest``: nothing but what the guide shows."""
    for body in _guide_blocks("toml") + _guide_blocks("python"):
        first, _, rest = body.partition("\n")
        m = re.fullmatch(r"# (my-plugin/\S+)", first)
        if m:
            path = dest / m.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(rest, encoding="utf-8")
    return dest / "my-plugin"


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
    _pip_install([PLUGIN, guide_plugin(root / "guide")], site)
    _test_backend(site)
    return site


def _localfin(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _python(site, "-m", "localfin_cli.main", *args, cwd=cwd)


def _python(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALFIN_STORE", "LOCALFIN_DATA_DIR")}
    paths = [str(site), str(ROOT / "tests" / "agent" / "pairs"), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["LOCALFIN_RUNS_DIR"] = str(cwd / "runs")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env)


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


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("│").split("│")]


def test_plugins_list_shows_the_guides_row_and_keeps_one_kind(site, tmp_path):
    proc = _localfin(site, "plugins", "list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the guide's plugin, with the cells the guide shows (column widths follow the longest entry)
    shown = next(b for b in _guide_blocks("text") if "ratio_bands" in b)
    want = _cells(next(line for line in shown.splitlines() if "ratio_bands" in line))
    rows = [_cells(line) for line in proc.stdout.splitlines() if line.startswith("│")]
    assert want in rows, proc.stdout
    only = _localfin(site, "plugins", "list", "--kind", "tools", "--json", cwd=tmp_path).stdout
    assert [json.loads(line)["name"] for line in only.splitlines()] == ["pct_change"]


def test_plugins_list_names_kind_distribution_version_and_a_broken_plugins_problem(site, tmp_path):
    broken = tmp_path / "broken-site"
    info = broken / "broken_plugin-0.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.2\n")
    (info / "entry_points.txt").write_text("[localfin.tools]\nnope = no_such_module:TOOL\n")
    proc = _localfin(Path(f"{broken}{os.pathsep}{site}"), "plugins", "list", "--json", cwd=tmp_path)
    assert proc.returncode == 1  # a refused plugin: the installation needs fixing
    listed = {
        tuple(json.loads(line)[k] for k in ("name", "kind", "dist", "version", "problem"))
        for line in proc.stdout.splitlines()
    }
    assert {
        ("ratio_bands", "baselines", "my-plugin", "0.1.0", ""),
        ("bollinger", "baselines", "localfin-example-plugin", "0.1.0", ""),
        ("pct_change_qa", "qa_datasets", "localfin-example-plugin", "0.1.0", ""),
        ("pct_change", "tools", "localfin-example-plugin", "0.1.0", ""),
        ("scripted_test", "backends", "localfin-test-backend", "0.1", ""),
    } <= listed
    (nope,) = [row for row in listed if row[0] == "nope"]
    assert nope[1:4] == ("tools", "broken-plugin", "0.2")
    assert nope[4].startswith("does not load: ModuleNotFoundError"), nope


def test_the_guides_commands_run_the_plugin_baseline_without_a_model(site, tmp_path):
    """The guide's `localfin pairs baselines` line, as written, on the tests' small synthetic
    market in the default store (it stands in for `localfin data synth --import`: the same
    tickers, and 2015 inside it)."""
    from moira_support import small_store

    (tmp_path / "localfin_data").mkdir()
    shutil.copy(small_store(), tmp_path / "localfin_data" / "market.sqlite")
    block = next(b for b in _guide_blocks("bash") if "pairs baselines" in b).replace("\\\n", " ")
    line = next(ln for ln in block.splitlines() if ln.startswith("localfin pairs baselines"))
    proc = _localfin(site, *shlex.split(line)[1:], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = tmp_path / "runs" / "bands" / "staples" / "2015" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [
        "eg_z-beta-seed0",
        "eg_z-no_beta-seed0",
        "ratio_bands-beta-seed0",
        "ratio_bands-no_beta-seed0",
    ]
    assert f"`{runs.relative_to(tmp_path)}/ratio_bands-no_beta-seed0/`" in GUIDE.read_text(encoding="utf-8")
    metrics = json.loads((runs / "ratio_bands-no_beta-seed0" / "metrics.json").read_text())
    assert metrics["kind"] == "baseline" and metrics["method"] == "ratio_bands"
    assert metrics["extra"]["plugin"] == "plugin my-plugin (my_plugin.bands:RATIO_BANDS)"
    assert metrics["extra"]["config"]["options"] == {"window": 10, "width": 2.0}  # --option, the default
    notes = [str(n) for n in pd.read_parquet(runs / "ratio_bands-no_beta-seed0" / "steps.parquet")["note"]]
    assert notes and all(n.startswith("z=") for n in notes), notes[:3]
    table = pd.read_csv(tmp_path / "runs" / "bands" / "runs.csv")
    assert sorted(table["method"]) == ["eg_z", "eg_z", "ratio_bands", "ratio_bands"]
    assert "ratio_bands" in (tmp_path / "runs" / "bands" / "rolling.md").read_text()


def test_the_guides_run_baseline_example_writes_the_folder_it_names(site, tmp_path):
    from moira_support import small_store

    (tmp_path / "localfin_data").mkdir()
    shutil.copy(small_store(), tmp_path / "localfin_data" / "market.sqlite")
    code = next(b for b in _guide_blocks("python") if "run_baseline(" in b)
    (tmp_path / "example.py").write_text(code)
    proc = _python(site, "example.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = re.search(r"print\(res\.run_dir\)  # (\S+)", code).group(1)
    assert proc.stdout.splitlines()[0] == said and (tmp_path / said / "metrics.json").is_file()
    ret, sharpe = map(float, proc.stdout.splitlines()[1].split())
    assert math.isfinite(ret) and math.isfinite(sharpe)
