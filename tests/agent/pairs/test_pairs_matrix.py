"""The experiment matrix: the file format (parse, merge with a base, expansion, errors naming the
key), the TOML writer, and a 2-backbone x 2-windows x 2-exposure x 2-seed matrix on the scripted
model: one engine per backbone, normal experiment folders, the summary rows equal to the
report's, resume without any model call."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

import pytest
from matrix_support import matrix_text, scripted_factory
from moira_support import small_store

from agent.pairs.experiment.config import load_config
from agent.pairs.experiment.matrix import run_matrix
from agent.pairs.experiment.matrix_config import DEFAULT_SEEDS, load_matrix, parse_matrix
from agent.pairs.experiment.plan import cell_done, plan_matrix
from agent.pairs.market.records import read_json
from agent.report.matrix_summary import write_matrix_summary
from localfin.configfile import dumps
from localfin.errors import ConfigError

CONFIGS = Path(__file__).resolve().parents[3] / "agent" / "pairs" / "configs"


def _parse(text: str, base_dir: Path = Path(".")):
    return parse_matrix(tomllib.loads(text), base_dir=base_dir)


def test_toml_writer_round_trips_the_documents_we_generate():
    doc = {
        "experiment": {"name": "x", "seeds": [0, 1], "cost_bps": 1.5, "pool": ["A", "B"]},
        "windows": {"train_start": dt.date(2020, 1, 2), "test_end": "2020-03-04"},
        "model": {"backbone": "k", "thinking": False, "max_tokens": {"direction": 64}},
        "variants": [{"name": "full"}, {"name": "a3", "consolidation": False}],
        "odd": {"a key with spaces": 'quote " and \\ backslash', "ü": "é"},
    }
    assert tomllib.loads(dumps(doc)) == doc
    with pytest.raises(TypeError, match="nan"):
        dumps({"t": {"x": float("nan")}})


def test_packaged_cpu_matrix_expands_to_two_engines_of_six_runs(tmp_path):
    cfg = load_matrix(CONFIGS / "matrix_cpu.toml")
    plan = plan_matrix(cfg, tmp_path)
    assert [c.folder for c in plan.cells] == ["smollm2-135m/main", "tiny-qwen3/main"]
    assert len(plan.engines) == 2
    for c in plan.cells:
        assert c.config.seeds == (0, 1, 2) and c.config.exposures == ("no_beta", "beta")
        assert c.config.store == tmp_path.resolve() / "market.sqlite"
        assert len(c.config.run_ids()) == 6
    assert [c.config.model.backbone for c in plan.cells] == ["smollm2-135m", "tiny-qwen3"]
    text = "\n".join(plan.describe())
    assert "2 experiments, 12 runs, 2 engines" in text and "full-beta-s2" in text


def test_base_merge_backbone_overrides_windows_sets_and_variants(tmp_path):
    (tmp_path / "sub").mkdir()
    base = tmp_path / "sub" / "base.toml"
    base.write_text(
        '[experiment]\nname = "b"\nstore = "m.sqlite"\nseeds = [7]\nexposures = ["beta"]\n'
        '[windows]\ntrain_start = "2015-01-02"\ntrain_end = "2015-01-20"\n'
        'test_start = "2015-01-21"\ntest_end = "2015-03-02"\n'
        "[model]\ntemperature = 0.5\nmax_num_seqs = 8\n[policy]\nmax_cycles = 3\n"
    )
    text = (
        '[matrix]\nname = "m"\nbase = "sub/base.toml"\n\n'
        '[[backbones]]\nkey = "qwen3-4b"\nname = "q4-think"\nthinking = true\n\n'
        '[[backbones]]\nkey = "qwen3-4b"\nname = "q4-nothink"\nthinking = false\ntemperature = 0.0\n\n'
        '[[backbones]]\nkey = "qwen3-4b"\nname = "q4-http"\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n\n'
        "[policy]\nconsolidation = true\n\n"
        '[[variants]]\nname = "full"\n\n[[variants]]\nname = "a3"\nconsolidation = false\n\n'
        '[[variants]]\nname = "a4"\nreselection = false\nfixed_pair = "AAA/BBB"\n'
    )
    cfg = _parse(text, tmp_path)
    assert cfg.seeds == DEFAULT_SEEDS and cfg.exposures == ("beta",)  # base seeds ignored, exposures kept
    plan = plan_matrix(cfg, tmp_path / "out")
    assert [c.folder for c in plan.cells] == ["q4-think/main", "q4-nothink/main", "q4-http/main"]
    think, nothink, http = (c.config for c in plan.cells)
    assert think.store == (tmp_path / "sub" / "m.sqlite").resolve()  # the base's relative store
    assert think.model.thinking is True and think.model.temperature == 0.5
    assert nothink.model.thinking is False and nothink.model.temperature == 0.0
    assert think.model.max_num_seqs == 8 and think.windows.test_end == dt.date(2015, 3, 2)
    assert http.model.backend == "openai"
    assert [v.name for v in think.variants] == ["full", "a3", "a4"]
    assert think.variants[1].policy.consolidation is False and think.variants[1].policy.max_cycles == 3
    assert think.variants[2].selection.reselection is False
    assert think.variants[2].selection.fixed_pair == "AAA/BBB"
    # thinking on/off of one key share an engine; the HTTP entry is another
    assert [len(g) for g in plan.engines] == [2, 1]
    # each cell's text is an ordinary experiment config
    (tmp_path / "cell.toml").write_text(plan.cells[0].config_text)
    assert load_config(tmp_path / "cell.toml") == think
    assert think.name == "m-q4-think-main"


def test_unknown_tables_pass_through_to_the_experiment_config():
    text = (
        '[matrix]\nname = "m"\nbackbones = ["smollm2-135m"]\n'
        '[windows]\ntrain_start = "2015-01-02"\ntrain_end = "2015-01-20"\n'
        'test_start = "2015-01-21"\ntest_end = "2015-03-02"\n'
        "[frobnicate]\nx = 1\n"
    )
    cfg = _parse(text)
    assert cfg.document["frobnicate"] == {"x": 1}
    # the experiment config (not the matrix) is the one that judges the table
    with pytest.raises(ConfigError, match=r"backbone 'smollm2-135m', windows 'main'.*<top>\.frobnicate"):
        cfg.cells()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[experiment]\nname='x'\n", r"\[matrix\] table is missing"),
        ("[matrix]\nname='m'\nbogus=1\n", r"unknown key\(s\) matrix\.bogus; allowed: name, base"),
        ("[matrix]\nname='m'\n", "backbones is missing"),
        ("[matrix]\nname='m'\nbackbones=[]\n[windows]\n", "missing key"),
        ("[matrix]\nname='m'\nbackbones=['a']\n", "windows is missing"),
        ("[matrix]\nname='m/x'\nbackbones=['a']\n", r"matrix\.name='m/x'; allowed"),
        ("[matrix]\nname='m'\nbackbones=['a', 'a']\n[[windows]]\nname='w'\n", "missing key"),
        ("[matrix]\nname='m'\nseeds=[1, 1]\nbackbones=['a']\n", "windows is missing"),
        ("[matrix]\nname='m'\nbackbones=[{name='x'}]\n", r"backbones\[0\]\.key is required"),
        ("[matrix]\nname='m'\nbackbones=[{key='a', temp=1}]\n", r"backbones\.temp of backbone 'a'"),
        ("[matrix]\nname='m'\nbackbones=['a']\n[[backbones]]\nkey='b'\n", "backbones given twice"),
        ("[matrix]\nname='m'\nbase='absent.toml'\nbackbones=['a']\n", "cannot read matrix.base"),
    ],
)
def test_bad_matrix_files_name_the_key(text, message):
    with pytest.raises(ConfigError, match=message):
        _parse(text)


def test_semantic_errors_name_the_key():
    win = (
        '[windows]\ntrain_start="2015-01-02"\ntrain_end="2015-01-20"\n'
        'test_start="2015-01-21"\ntest_end="2015-03-02"\n'
    )
    with pytest.raises(ConfigError, match=r"backbones names \['a', 'a'\] repeat"):
        _parse("[matrix]\nname='m'\nbackbones=['a', 'a']\n" + win)
    with pytest.raises(ConfigError, match=r"matrix\.seeds=\[1, 1\]"):
        _parse("[matrix]\nname='m'\nseeds=[1, 1]\nbackbones=['a']\n" + win)
    with pytest.raises(ConfigError, match=r"matrix\.exposures=\['gamma'\]"):
        _parse("[matrix]\nname='m'\nexposures=['gamma']\nbackbones=['a']\n" + win)
    with pytest.raises(ConfigError, match=r"windows\[0\]\.test_end='soon'"):
        _parse("[matrix]\nname='m'\nbackbones=['a']\n" + win.replace('"2015-03-02"', '"soon"'))
    bad_window = win.replace('test_start="2015-01-21"', 'test_start="2015-01-10"')
    with pytest.raises(ConfigError, match=r"windows\.test_start=2015-01-10 must come after train_end"):
        _parse("[matrix]\nname='m'\nbackbones=['a']\n" + bad_window).cells()


def _run_files(out: Path) -> dict[str, tuple]:
    import pandas as pd

    got = {}
    for metrics in sorted(out.glob("*/*/runs/*/metrics.json")):
        d = metrics.parent
        got[str(d.relative_to(out))] = (read_json(metrics), pd.read_parquet(d / "steps.parquet"))
    return got


def test_scripted_matrix_runs_one_engine_per_backbone_and_resumes_without_calls(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(matrix_text(small_store(), tmp_path / "no-weights"))
    cfg = load_matrix(config)
    opened: list[str] = []

    def factory(cell, registry):
        opened.append(cell.folder)
        return scripted_factory(cell, registry)

    out = tmp_path / "out"
    res = run_matrix(
        cfg, out, config_text=config.read_text(), backend_factory=factory, summary=write_matrix_summary
    )
    # two backbones: two engines, each serving both windows sets
    assert opened == ["smol/main", "tiny/main"]
    assert [c.folder for c in res.cells] == ["smol/main", "smol/later", "tiny/main", "tiny/later"]
    assert all(c.status == "ran" and c.runs == 4 and c.model_calls > 0 for c in res.cells)
    for c in plan_matrix(cfg, out).cells:
        assert cell_done(out, c)
        m = read_json(out / c.folder / "manifest.json")
        assert m["model"]["key"] == c.config.model.backbone
    # the summary: one setting per backbone x windows x exposure, 2 seeds each, the report's rows
    rows = read_json(out / "summary.json")["settings"]
    agent = [r for r in rows if r["setting"].startswith("Moira")]
    assert len(agent) == 8 and all(r["n_runs"] == 2 and r["seeds"] == [0, 1] for r in agent)
    assert {r["setting"] for r in agent} == {"Moira · smollm2-135m", "Moira · tiny-qwen3"}
    # the two non-LLM baselines, per windows set x exposure (the same runs in each backbone's folder)
    assert len(rows) - len(agent) == 2 * 2 * 2
    from agent.report.matrix_summary import matrix_settings

    assert rows == _plain(matrix_settings(out)) == _plain(res.settings)
    assert "Sharpe ± SE" in (out / "summary.md").read_text()
    assert all(r["frictions"]["settlement"].startswith("with frictions") for r in rows)
    # runs.csv: every run of every experiment at the matrix level, each experiment's own beside it
    import pandas as pd

    table = pd.read_csv(out / "runs.csv")
    assert len(table) == sum(len(pd.read_csv(out / c.folder / "runs.csv")) for c in res.cells) == 4 * (4 + 4)
    assert set(table["group"]) == {c.folder for c in res.cells}
    manifest = read_json(out / "manifest.json")
    assert manifest["mode"] == "local" and manifest["model_calls"] == sum(c.model_calls for c in res.cells)
    before = _run_files(out)

    # a second invocation needs --resume; a resumed complete matrix starts no engine
    with pytest.raises(ConfigError, match="pass --resume"):
        run_matrix(
            cfg, out, config_text=config.read_text(), backend_factory=factory, summary=write_matrix_summary
        )
    opened.clear()
    again = run_matrix(
        cfg,
        out,
        config_text=config.read_text(),
        backend_factory=factory,
        summary=write_matrix_summary,
        resume=True,
    )
    assert opened == [] and all(c.status == "done before" for c in again.cells)
    assert _plain(again.settings) == rows
    # a cell without its manifest reruns from its journal: no model call
    (out / "tiny" / "later" / "manifest.json").unlink()
    third = run_matrix(
        cfg,
        out,
        config_text=config.read_text(),
        backend_factory=factory,
        summary=write_matrix_summary,
        resume=True,
    )
    assert opened == ["tiny/later"]  # the engine of the tiny backbone only
    redo = [c for c in third.cells if c.status == "ran"]
    assert [c.folder for c in redo] == ["tiny/later"] and redo[0].model_calls == 0 and redo[0].replayed > 0
    after = _run_files(out)
    assert list(before) == list(after)
    for k, (m, steps) in before.items():
        assert after[k][0] == m
        assert after[k][1].equals(steps)
    with pytest.raises(ConfigError, match="differs from the matrix file"):
        run_matrix(cfg, out, config_text=config.read_text() + "\n# edited\n", resume=True)


def _plain(rows):
    """Rows as JSON would give them back (tuples as lists, NaN as None)."""
    import json

    from agent.pairs.market.records import _clean  # the writer's own cleaning

    return json.loads(json.dumps(_clean({"r": rows})))["r"]


def test_cli_dry_run_lists_engines_and_runs_and_writes_nothing(cli, tmp_path):
    out = tmp_path / "mx"
    r = cli("pairs", "matrix", "--config", CONFIGS / "matrix_cpu.toml", "--out", out, "--dry-run")
    assert r.code == 0, r.err
    assert "engine 1: smollm2-135m (vllm in-process)" in r.out and "engine 2: tiny-qwen3" in r.out
    assert r.out.count("full-no_beta-s") == 6 and not out.exists()
    bad = cli("pairs", "matrix", "--config", CONFIGS / "matrix_cpu.toml", "--ray", " ", "--dry-run")
    assert bad.code == 2 and "--ray is empty" in bad.err


def test_registry_for_applies_model_path_and_builds_a_missing_tiny_model_once(tmp_path, monkeypatch):
    from agent.pairs.experiment.plan import registry_for

    monkeypatch.setenv("LOCALFIN_MODEL_CACHE", str(tmp_path / "cache"))
    text = (
        '[matrix]\nname = "m"\n[[backbones]]\nkey = "tiny-qwen3"\n[[backbones]]\nkey = "tiny-llama"\n'
        'name = "given"\nmodel_path = "/somewhere/else"\n'
        '[windows]\ntrain_start = "2015-01-02"\ntrain_end = "2015-01-20"\n'
        'test_start = "2015-01-21"\ntest_end = "2015-03-02"\n'
    )
    built, given = _parse(text).cells()
    assert registry_for(given).get("tiny-llama").path == Path("/somewhere/else")
    assert not (tmp_path / "cache").exists()  # a given path is never built
    reg = registry_for(built)
    path = tmp_path / "cache" / "tiny-qwen3"
    assert reg.get("tiny-qwen3").resolve_path() == path
    stamp = (path / "config.json").stat().st_mtime_ns
    registry_for(built)  # present: not built again
    assert (path / "config.json").stat().st_mtime_ns == stamp
