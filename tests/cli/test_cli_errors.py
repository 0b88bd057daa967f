"""One error path for every command: bad input gives a single `error: ...` line on stderr that
says what is wrong, exit code 2, no traceback, nothing on stdout, and starts no engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every default folder of ours under tmp_path, so a failing command leaves nothing behind
    in the repository."""
    for name, sub in (
        ("LOCALFIN_HOME", "home"),
        ("LOCALFIN_DATA_DIR", "data"),
        ("LOCALFIN_REPORTS_DIR", "reports"),
        ("LOCALFIN_RUNS_DIR", "runs"),
    ):
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.delenv("LOCALFIN_STORE", raising=False)
    monkeypatch.delenv("LOCALFIN_BANK", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "bad.jsonl").write_text('{"source_id": "s1"}\n')
    (tmp_path / "q.jsonl").write_text('{"question": "q"}\n')
    return tmp_path


#: (command line, words the error line must contain). One per command of `localfin --help`.
CASES = [
    (["frobnicate"], "No such command 'frobnicate'"),
    (["models", "list", "extra"], "unexpected extra argument"),
    (["models", "prepare", "qwen3-4b"], "nothing to prepare"),
    (["models", "prepare", "no-such-model"], "unknown model key 'no-such-model'; allowed:"),
    (["data", "import"], "give at least one of --prices"),
    (["data", "import", "--prices", "absent.csv"], "absent.csv: file not found"),
    (["data", "import", "--prices", "absent.csv", "--max-daily-factor", "0.5"], "max_daily_factor=0.5"),
    (["data", "info", "--store", "absent.sqlite"], "no market store at absent.sqlite"),
    (["data", "synth", "--sessions", "10"], "n_sessions=10 must be >= 300"),
    (["pairs", "screen", "--date", "2021-01-04", "--top", "0"], "top_k"),
    (["pairs", "screen", "--date", "2021-01-04", "--store", "absent.sqlite"], "no market store"),
    (["pairs", "screen", "--date", "2021-01-04", "--price-field", "open"], "price_field='open'; allowed"),
    (["pairs", "screen-sweep", "--pool", "x=AAA,BBB", "--years", "2020-2019"], "--years '2020-2019'"),
    (["pairs", "lifecycle-sweep", "--pool", "x=A,B", "--years", "2020", "--vary", "corr_min=a"], "--vary"),
    (["pairs", "screen-eval", "--truth", "absent.json"], "truth file absent.json: cannot read it"),
    (["pairs", "screen-eval", "--truth", "bad.json"], "truth file bad.json: not valid JSON"),
    (["pairs", "run", "--config", "absent.toml"], "cannot read config absent.toml"),
    (["pairs", "demo", "--model", "no-such-model"], "unknown model key 'no-such-model'"),
    (["pairs", "matrix", "--config", "absent.toml"], "cannot read matrix config absent.toml"),
    (["pairs", "baselines", "--pool", "x=AAA", "--years", "2020", "--out", "o"], "at least two tickers"),
    (
        ["pairs", "baselines", "--pool", "x=AAA,BBB", "--years", "2020", "--out", "o", "--methods", "finmem"],
        "--methods finmem: FinMem calls a model",
    ),
    (
        ["pairs", "baselines", "--pool", "x=AAA,BBB", "--years", "2020", "--out", "o", "--option", "eg_z=1"],
        "--option 'eg_z=1'; allowed: METHOD.KEY=VALUE",
    ),
    (["plugins", "list", "--kind", "widgets"], "--kind 'widgets'; allowed: models, backends, baselines"),
    (["pairs", "demo", "--model", "qwen3-32b"], "no config.json in"),
    (["bench", "moira-lockstep", "--max-cycles", "-1"], "--max-cycles=-1; allowed: >= 0"),
    (["bank", "build", "absent.jsonl", "--embedder", "hashing"], "absent.jsonl: cannot read it"),
    (["bank", "add", "bad.jsonl", "--embedder", "hashing", "--bank", "b"], "bad.jsonl:1: not a valid entry"),
    (["bank", "query", "q", "--tau", "2", "--embedder", "hashing"], "tau must be a finite cosine in [-1, 1]"),
    (["bank", "query", "q", "--embedder", "hashing", "--bank", "absent"], "no bank at absent"),
    (["bank", "stats", "--bank", "absent"], "no bank at absent"),
    (["bank", "analyze", "q.jsonl", "--embedder", "hashing", "--order", "sideways"], "order='sideways'"),
    (["bank", "analyze", "q.jsonl", "--embedder", "hashing", "--taus", "a,b"], "--taus 'a,b'"),
    (["bank", "build", "q.jsonl", "--embedder", "word2vec"], "embedder='word2vec'; allowed: minilm, hashing"),
    (["bench", "kernels", "--bogus"], "No such option: --bogus"),
    (["bench", "retrieval", "--bogus"], "No such option: --bogus"),
    (["bench", "decade", "--tickers", "0"], "--tickers must be >= 2, got 0"),
    (["bench", "retrieval", "--sizes", "a,b"], "localfin bench retrieval: argument --sizes: invalid"),
    (["bench", "serving", "--max-tokens", "0"], "--max-tokens, --max-concurrency, --min-requests"),
    (["bench", "cpu-settings", "--variants", "turbo"], "turbo"),
    (["bench", "agent", "--agents", "finmem"], "finmem"),
    (["bench", "all", "--bogus"], "No such option: --bogus"),
    (["bench", "all", "--timeout", "soon"], "Invalid value for '--timeout'"),
    (["bench", "gpu-check", "--models", "gpt-2"], "--models ['gpt-2']; allowed:"),
    (["bench", "qa-ocr", "--threads", "x"], "Invalid value for '--threads'"),
    (["bench", "qa-tau", "--threads", "x"], "Invalid value for '--threads'"),
    (["bench", "prompt-layout", "--block-size", "x"], "Invalid value for '--block-size'"),
    (["bench", "moira-news-share", "--settings", "s.toml"], "Missing option '--experiment'"),
    (["bench", "tokens", "--out", "x"], "--prices is required to run the prompts"),
    (["bench", "vllm-serve", "--out", "x"], "give --journal (export) or --dataset (exported)"),
    (["chat", "tiny-qwen3", "hi", "--schema", "bad.json"], "schema file bad.json: not valid JSON"),
    (["chat", "qwen3-4b", "hi"], "no config.json in"),
    (["chat", "tiny-qwen3", "hi"], "built at run time; give its directory (--model-path"),
    (["serve", "no-such-model", "--dry-run"], "unknown model key 'no-such-model'"),
    (["serve", "qwen3-4b", "--host", "a b", "--dry-run"], "host='a b'; allowed"),
    (["serve", "qwen3-4b", "--port", "0", "--dry-run"], "--port 0: allowed 1..65535"),
    (["serve", "qwen3-4b", "--quantization", "int4", "--dry-run"], "--quantization 'int4': allowed fp8"),
    (["demo", "--model", "qwen3-32b"], "no config.json in"),
    (
        ["qa", "eval", "--variant", "full", "--dataset", "tatqa", "--data", "q.jsonl"],
        "--variant='full'; allowed",
    ),
    (["qa", "build-bank", "--dataset", "nope", "--data", "q.jsonl"], "unknown QA dataset 'nope'; allowed:"),
    (["qa", "analyze", "absent"], "no evaluation run folders"),
    (["qa", "judge-check", "--data", "q.jsonl", "--limit", "0"], "--limit=0; allowed: >= 1"),
    (["qa", "demo", "--model", "no-such-model"], "unknown model key 'no-such-model'"),
    (["qa", "demo-set", "--out", "d", "--train", "0"], "n_train=0; allowed: a whole number >= 1"),
    (["qa", "datasets", "--bogus"], "No such option: --bogus"),
    (["report", "absent"], "RUN_DIR=absent is not a folder"),
    (["export", "absent", "--out", "o"], "PATH=absent is not a folder"),
    (["export", ".", "--out", "o", "--format", "xlsx"], "--format='xlsx'; allowed: csv, parquet"),
    (["audit", "absent"], "PATH=absent does not exist"),
    (
        ["pairs", "baselines", "--pool", "x=AAA,BBB", "--years", "2020", "--out", "o", "--execution", "vwap"],
        "execution='vwap'; allowed: close, next_open",
    ),
    (["reproduce", "list", "--bogus"], "No such option: --bogus"),
    (["reproduce", "check", "table99"], "unknown reproduction config 'table99'"),
    (["reproduce", "check", "x", "--config", "y.toml"], "CONFIG x and --config y.toml given"),
    (["reproduce", "settings", "table99"], "unknown reproduction config 'table99'"),
    (["reproduce", "run", "table99"], "unknown reproduction config 'table99'"),
    (["reproduce", "run", "all"], "a full run takes one CONFIG"),
    (["reproduce", "run"], "CONFIG is missing"),
    (["reproduce", "smoke", "moira_table3_main", "--model", "no-such-model"], "unknown model key"),
    (["reproduce", "rehearse", "table99"], "unknown reproduction config 'table99'"),
    (
        [
            "reproduce",
            "serve",
            "finacumen_table1",
            "--nodes",
            "2",
            "--gpus-per-node",
            "8",
            "--gpu",
            "h200",
            "--node",
            "n9",
        ],
        "--node 'n9': no server of this placement runs there; allowed: node0, node1",
    ),
    (
        ["reproduce", "rehearse", "moira_table5_a2", "--paths", "gpu"],
        "--paths 'gpu'; allowed: engine, server",
    ),
    (
        ["reproduce", "plan", "table99", "--gpus", "1", "--gpu", "h200"],
        "unknown reproduction config 'table99'",
    ),
    (["reproduce", "plan", "moira_table3_main", "--gpus", "0"], "--gpus 0; allowed: a whole number >= 1"),
    (
        ["reproduce", "plan", "moira_table3_main", "--gpu", "v100"],
        "--gpu 'v100'; allowed: h100, h200, a100-80g, l40s",
    ),
    (["gpu-check", "--out", "/dev/null"], "--out /dev/null is not a folder"),
    (["reproduce", "check", "moira_table3_main", "--gpus", "2"], "--gpus and --gpu go together"),
    # the flag form of earlier releases (deprecated aliases)
    (["reproduce", "table99"], "unknown reproduction config 'table99'"),
    (["reproduce", "--rehearse", "table99"], "unknown reproduction config 'table99'"),
    (["reproduce", "--plan", "--smoke", "moira_table3_main"], "--smoke and --plan exclude each other"),
]


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_bad_input_is_one_error_line_with_exit_code_2(argv, words, isolated, cli, monkeypatch):
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(isolated / "no-models"))
    r = cli(*argv)
    lines = r.err.strip().splitlines()
    assert r.code == 2, r.err
    assert [ln for ln in lines if "error:" in ln] == [lines[-1]], r.err
    assert lines[-1].startswith("error: ") and words in lines[-1], r.err
    assert "Traceback" not in r.err and r.out == ""


def test_every_command_has_a_bad_input_case():
    import typer.main

    from localfin_cli.main import app

    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    commands, groups = set(), set()
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if not hasattr(cmd, "list_commands"):
            commands.add(name)
            continue
        groups.add(name)
        sub_ctx = typer.Context(cmd, parent=ctx, info_name=name)
        subs = [s for s in cmd.list_commands(sub_ctx) if not cmd.get_command(sub_ctx, s).hidden]
        commands |= {f"{name} {sub}" for sub in subs}
    assert {"reproduce", "bench"} <= groups and "bench gpu-check" in commands
    covered = {" ".join(argv[:2]) if argv[0] in groups else argv[0] for argv, _ in CASES}
    assert commands <= covered, sorted(commands - covered)


def test_a_runtime_failure_exits_1_and_verbose_shows_the_traceback(tmp_path):
    """A bank whose database is not SQLite is a failure at run time (exit 1); --verbose adds
    the traceback, and the error line stays the last line."""
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / "bank.sqlite").write_text("not a database")
    base = [sys.executable, "-m", "localfin_cli.main"]
    quiet = subprocess.run([*base, "bank", "stats", "--bank", str(bank)], capture_output=True, text=True)
    loud = subprocess.run(
        [*base, "--verbose", "bank", "stats", "--bank", str(bank)], capture_output=True, text=True
    )
    assert quiet.returncode == loud.returncode == 1
    assert (
        quiet.stderr.count("\n") == 1
        and quiet.stderr.startswith("error: ")
        and "Traceback" not in quiet.stderr
    )
    assert "Traceback" in loud.stderr and loud.stderr.strip().splitlines()[-1] == quiet.stderr.strip()


def test_a_bad_anonymize_value_is_one_error_line_naming_the_key(tmp_path, cli):
    cfg = tmp_path / "x.toml"
    cfg.write_text(
        '[experiment]\nname = "t"\nanonymize = "yes"\n[windows]\ntrain_start = "2020-01-02"\n'
        'train_end = "2020-02-03"\ntest_start = "2020-02-04"\ntest_end = "2020-03-02"\n'
    )
    r = cli("pairs", "run", "--config", cfg)
    assert r.code == 2, r.err
    last = r.err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "experiment.anonymize" in last, r.err
