"""The command forms: `reproduce` subcommands and the flag form they replace (both reach the same
mode function), `--config FILE`, `--out` with `--run-dir` as a hidden alias, `pairs run --model`,
and `bench` subcommands built from each benchmark's own parser."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from localfin_cli import bench_cmd, reproduce_cmd

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "agent" / "reproduce" / "configs"

# (subcommand form, flag form, mode function, its arguments after the context)
FORMS = [
    (["list"], ["--list"], "do_list", ()),
    (
        ["check", "all", "--data-root", "D"],
        ["--check", "all", "--data-root", "D"],
        "do_check",
        ("all", Path("D")),
    ),
    (
        ["run", "moira_table3_main", "--out", "O", "--data-root", "D"],
        ["moira_table3_main", "--out", "O", "--data-root", "D"],
        "do_run",
        ("moira_table3_main", Path("O"), Path("D")),
    ),
    (
        ["smoke", "all", "--out", "O", "--model", "tiny-qwen3"],
        ["--smoke", "all", "--out", "O", "--model", "tiny-qwen3"],
        "do_run",
        ("all", Path("O"), None),
    ),
    (
        ["rehearse", "moira_table5_a2", "--paths", "engine", "--out", "O"],
        ["--rehearse", "moira_table5_a2", "--paths", "engine", "--out", "O"],
        "do_rehearse",
        ("moira_table5_a2", Path("O"), "engine", None),
    ),
    (
        ["plan", "moira_table3_main", "--gpus", "4", "--gpu", "h100", "--out", "O"],
        ["moira_table3_main", "--plan", "--gpus", "4", "--gpu", "h100", "--out", "O"],
        "do_plan",
        ("moira_table3_main", 4, "h100", Path("O")),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("new", "old", "mode", "args"), FORMS, ids=[f[0][0] for f in FORMS])
def test_both_reproduce_forms_reach_the_same_mode(cli, monkeypatch, caplog, new, old, mode, args):
    calls: list[tuple] = []

    def fake(name: str):
        def mode_function(*a, **kw):  # the command's context left out
            calls.append((name, [x for x in a if not hasattr(x, "find_root")], kw))

        return mode_function

    for name in ("do_list", "do_check", "do_run", "do_rehearse", "do_plan"):
        monkeypatch.setattr(reproduce_cmd, name, fake(name))
    with caplog.at_level(logging.WARNING, logger="localfin_cli.reproduce_cmd"):
        assert cli("reproduce", *new).code == 0
        assert not caplog.records
        assert cli("reproduce", *old).code == 0
    (first_mode, first, first_kw), (second_mode, second, second_kw) = calls
    assert first_mode == second_mode == mode
    assert first == second == list(args)
    if mode == "do_run":  # the flag form always continued a folder's run; the subcommand asks
        assert (first_kw["resume"], second_kw["resume"]) == (False, True)
        assert first_kw.get("smoke", False) == second_kw.get("smoke", False) == (new[0] == "smoke")
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "deprecated" in warning and f"`localfin reproduce {new[0]}" in warning


def test_list_and_plan_print_the_same_in_both_forms(cli):
    new, old = cli("reproduce", "list"), cli("reproduce", "--list")
    assert new.code == old.code == 0 and new.out == old.out
    assert "moira_table3_main" in new.out and "finacumen_table2" in new.out
    plan = ["moira_table5_a2", "--gpus", "2", "--gpu", "h200"]
    new, old = cli("reproduce", "plan", *plan), cli("reproduce", "--plan", *plan)
    assert new.code == old.code == 0 and new.out == old.out and "qwen3-32b" in new.out
    by_file = cli("reproduce", "plan", "--config", SHIPPED / "moira_table5_a2.toml", *plan[1:])
    # the same, its commands naming the config as the user did (all at once on 2 GPUs: the servers)
    named = by_file.out.replace(str(SHIPPED / "moira_table5_a2.toml"), "moira_table5_a2")
    assert by_file.code == 0 and named == new.out and "all backbones at once" in new.out


def test_reproduce_run_refuses_a_used_folder_unless_resumed(cli, monkeypatch, tmp_path):
    import agent.reproduce.check
    import agent.reproduce.run

    ran: list[Path] = []

    def fake_run(cfg, target, **kw):
        ran.append(Path(target))
        return SimpleNamespace(report=Path(target) / "reproduction.md")

    monkeypatch.setattr(agent.reproduce.check, "check_config", lambda cfg, data_root=None, **kw: [])
    monkeypatch.setattr(agent.reproduce.run, "reproduce", fake_run)
    out = tmp_path / "out"
    out.mkdir()
    (out / "reproduction.json").write_text("{}")
    r = cli("reproduce", "run", "moira_table6_a3", "--out", out)
    assert r.code == 2 and "already holds a run" in r.err and "--resume" in r.err and not ran
    r = cli("reproduce", "run", "moira_table6_a3", "--out", out, "--resume")
    assert r.code == 0 and ran == [out] and f"moira_table6_a3: report {out / 'reproduction.md'}" in r.out
    assert cli("reproduce", "moira_table6_a3", "--out", out).code == 0 and ran == [out, out]  # flag form


def test_qa_run_dir_is_a_hidden_alias_of_out(cli, tmp_path, caplog):
    from localfin.errors import ConfigError
    from localfin_cli._common import renamed

    with caplog.at_level(logging.WARNING):
        assert renamed(None, Path("r"), "--run-dir", "--out") == Path("r")
    assert "--run-dir is deprecated" in caplog.text and "use --out" in caplog.text
    assert renamed(Path("o"), None, "--run-dir", "--out") == Path("o")
    with pytest.raises(ConfigError, match="--run-dir and --out given"):
        renamed(Path("o"), Path("r"), "--run-dir", "--out")
    helptext = cli("qa", "eval", "--help").out
    assert "--out" in helptext and "--run-dir" not in helptext
    data = tmp_path / "d.jsonl"
    data.write_text(
        '{"id": "x", "question": "q?", "answer_type": "span", "answer": ["a"], "paragraphs": ["p"]}\n'
    )
    args = ["qa", "eval", "--variant", "base", "--dataset", "tatqa", "--data", data, "--backend", "nope"]
    r = cli(*args, "--out", tmp_path / "a", "--run-dir", tmp_path / "b")
    assert r.code == 2 and "--run-dir and --out given" in r.err


def test_pairs_run_model_overrides_the_backbone(cli, tmp_path):
    from agent.api import load_experiment_config

    config = ROOT / "agent" / "pairs" / "configs" / "demo.toml"
    base, _ = load_experiment_config(config)
    cfg, text = load_experiment_config(config, model="tiny-qwen3")
    assert base.model.backbone == "smollm2-135m" and cfg.model.backbone == "tiny-qwen3"
    assert 'backbone = "tiny-qwen3"' in text
    assert Path(cfg.store) == Path(base.store) == config.parent / "market.sqlite"  # the file's folder
    out = tmp_path / "exp"
    r = cli("pairs", "run", "--config", config, "--model", "no-such-model", "--out", out)
    assert r.code == 2 and "unknown model key 'no-such-model'; allowed: " in r.err and "smollm2-135m" in r.err
    assert not out.exists()


def test_bench_help_lists_every_benchmark_without_importing_them():
    code = (
        "import sys; from localfin_cli.main import main; rc = main(['bench', '--help']); "
        "print('IMPORTED', sorted(m for m in sys.modules if m.startswith('bench.')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "IMPORTED []" in run.stdout, run.stdout[-300:]
    for name in bench_cmd.BENCHMARKS:
        assert f" {name} " in run.stdout, name


@pytest.mark.parametrize("name", sorted(bench_cmd.BENCHMARKS))
def test_every_benchmark_option_is_a_command_option(name):
    import importlib

    module = importlib.import_module(bench_cmd.BENCHMARKS[name][0])
    ap = module.parser()
    cmd = bench_cmd.build_command(name)
    opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    wanted = {o for a in ap._actions if a.option_strings and a.dest != "help" for o in a.option_strings}
    assert wanted <= opts, sorted(wanted - opts)
    assert bench_cmd.argv_from(ap, {p.name: p.default for p in cmd.params}) == []  # defaults: nothing


def test_bench_passes_the_options_given_on(cli, monkeypatch):
    import bench.serving.backends
    import bench.serving.vllm_serve

    seen: list[list[str]] = []
    monkeypatch.setattr(bench.serving.vllm_serve, "main", lambda argv: seen.append(argv) or 0)
    monkeypatch.setattr(bench.serving.backends, "main", lambda argv: seen.append(argv) or 3)
    r = cli(
        "bench", "vllm-serve", "--journal", "a", "--journal", "b", "--out", "o", "--no-ours", "--rates", "1,2"
    )
    assert r.code == 0
    assert seen.pop() == ["--journal", "a", "--journal", "b", "--out", "o", "--rates", "1,2", "--no-ours"]
    assert cli("bench", "vllm-serve", "--out", "o", "--max-concurrency", "16").code == 0
    assert seen.pop() == ["--out", "o"]  # the benchmark's own default is not repeated
    assert cli("-v", "bench", "serving", "--tiny").code == 3  # the benchmark's exit code
    assert seen.pop() == ["--tiny"]
