"""`localfin reproduce check`: one line per item, the fix for each missing one, exit 1."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.reproduce.check import check_config
from agent.reproduce.nyse import count_sessions
from agent.reproduce.spec import load_repro


@pytest.fixture()
def bare_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No GPU weights, no store, no benchmarks, no GPU: what this CPU machine has (the sandbox
    probe answers as on a machine where bubblewrap works, and the GPUs are seen as none by a
    fixed probe, so the lines do not depend on this one)."""
    from agent.qa import sandbox
    from agent.reproduce import check
    from serving.hardware import gpus

    none = gpus.Inventory((gpus.Node("vm"),), "no nvidia-smi on PATH")
    monkeypatch.setattr(gpus, "visible_inventory", lambda: none)
    monkeypatch.setattr(check, "visible_inventory", lambda: none)
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("LOCALFIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOCALFIN_STORE", raising=False)
    monkeypatch.setattr(sandbox, "probe", lambda config=None: {"uid": 65534})
    return tmp_path


def _items(out: str) -> list[str]:
    """The item lines of check's output and its verdict, the count line: the output's last line,
    after the ledger's "What differs" sections (which follow the items after a blank line)."""
    verdict = out.rstrip("\n").splitlines()[-1]
    assert " items checked, " in verdict, "the verdict is the last line"
    return [*out.split("\n\n", 1)[0].splitlines(), verdict]


def test_check_lines_on_a_bare_machine(cli, bare_machine: Path) -> None:
    t = bare_machine
    run = cli("reproduce", "check", "moira_table6_a3")
    assert run.code == 1
    assert "\nmoira_table6_a3: What differs from the paper\n" in run.out  # after the items
    assert _items(run.out) == [
        f"MISSING moira_table6_a3: market store: no store at {t}/data/market.sqlite; fix: localfin data "
        f"import --herculean <Herculean folder> --store {t}/data/market.sqlite",
        f"MISSING moira_table6_a3: model qwen3-32b: no config.json in {t}/models/Qwen3-32B; fix: copy "
        f"Qwen/Qwen3-32B into {t}/models/Qwen3-32B (or set LOCALFIN_MODELS_DIR)",
        "MISSING moira_table6_a3: placement: no GPU visible (no nvidia-smi on PATH): qwen3-32b needs 73.1 "
        "GiB of one GPU at tp 1; qwen3-32b-nothink needs 73.1 GiB of one GPU at tp 1; fix: run on a GPU "
        "machine; to check one from here: localfin reproduce check moira_table6_a3 --gpus N --gpu KIND",
        "3 items checked, 3 missing",
    ]
    run = cli("reproduce", "check", "finacumen_table2")
    assert run.code == 1
    b = f"{t}/data/benchmarks"
    assert _items(run.out) == [
        f"MISSING finacumen_table2: benchmark bizbench: nothing at {b}/bizbench; fix: put "
        "the released bizbench files there (layout: agent/qa/loaders/bizbench.py (data/train-*.parquet, "
        "data/test-*.parquet)) or pass --data-root",
        f"MISSING finacumen_table2: benchmark finmmr: nothing at {b}/finmmr; fix: put the "
        "released finmmr files there (layout: agent/qa/loaders/finmmr.py (data/{validation,test}/*.json + "
        "images/)) or pass --data-root",
        f"MISSING finacumen_table2: benchmark fintmmbench: nothing at {b}/fintmmbench; fix: put the released "
        "fintmmbench files there (layout: agent/qa/loaders/fintmm.py (QA.json + data/)) or pass --data-root",
        f"MISSING finacumen_table2: benchmark finmme: nothing at {b}/finmme; fix: put the released finmme "
        "files there (layout: agent/qa/loaders/finmme.py (data/*.parquet)) or pass --data-root",
        "OK      finacumen_table2: tool python (sandbox): bubblewrap worker starts (uid 65534)",
        f"MISSING finacumen_table2: tool lookup (market store): no store at {t}/data/market.sqlite; fix: "
        f"localfin data import --prices <daily prices CSV> --store {t}/data/market.sqlite",
        "OK      finacumen_table2: tool reparse (OCR): rapidocr_onnxruntime installed",
        f"MISSING finacumen_table2: tool retrieve (FinTMMBench corpus): no corpus at {b}/fintmmbench; "
        "fix: put the released FinTMMBench data/ folder (StockPrice.json, FinancialTable.json, News.json, "
        "Chart/) beside QA.json",
        f"MISSING finacumen_table2: model qwen3-vl-8b: no config.json in {t}/models/Qwen3-VL-8B-Instruct; "
        f"fix: copy Qwen/Qwen3-VL-8B-Instruct into {t}/models/Qwen3-VL-8B-Instruct "
        "(or set LOCALFIN_MODELS_DIR)",
        f"MISSING finacumen_table2: model qwen3-4b-nothink: no config.json in {t}/models/Qwen3-4B; "
        f"fix: copy Qwen/Qwen3-4B into {t}/models/Qwen3-4B (or set LOCALFIN_MODELS_DIR)",
        "MISSING finacumen_table2: placement: no GPU visible (no nvidia-smi on PATH): qwen3-vl-8b needs "
        "24.8 GiB of one GPU at tp 1; qwen3-4b-nothink needs 16.0 GiB of one GPU at tp 1; fix: run on a GPU "
        "machine; to check one from here: localfin reproduce check finacumen_table2 --gpus N --gpu KIND",
        "11 items checked, 9 missing",
    ]


def test_check_all_and_full_run_refusal(cli, bare_machine: Path) -> None:
    run = cli("reproduce", "check", "all")
    assert run.code == 1
    lines = _items(run.out)
    ok = [line for line in lines[:-1] if not line.startswith("MISSING ")]
    assert ok and all(line.startswith("OK ") and ": tool " in line for line in ok)  # sandbox and OCR only
    assert lines[-1] == f"{len(lines) - 1} items checked, {len(lines) - 1 - len(ok)} missing"
    # the Qwen3-4B thinking and no-think keys share one folder: one line, not two
    assert sum("moira_table3_main: model qwen3-4b" in x for x in lines) == 1
    run = cli("reproduce", "run", "moira_table3_main")
    assert run.code == 2 and "missing, nothing started" in run.err and "Llama-3.1-70B" in run.err
    assert "see `localfin reproduce check moira_table3_main`" in run.err
    run = cli("reproduce", "moira_table3_main")  # the flag form of earlier releases, deprecated
    assert run.code == 2 and "missing, nothing started" in run.err
    assert not (bare_machine / "data").exists() or not any((bare_machine / "data").iterdir())


def test_check_names_a_missing_sandbox(cli, bare_machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no bubblewrap on PATH (the real probe, not a stub), a tools variant's check fails on
    the sandbox line with the fix; a Base-only config does not need it."""
    from agent.qa import sandbox
    from agent.qa.sandbox.session import probe

    monkeypatch.setattr(sandbox, "probe", probe)  # undo the fixture's stand-in
    monkeypatch.setenv("PATH", str(bare_machine / "empty-bin"))
    run = cli("reproduce", "check", "finacumen_table2")
    assert run.code == 1
    (line,) = [x for x in run.out.splitlines() if "tool python (sandbox)" in x]
    assert line.startswith(
        "MISSING finacumen_table2: tool python (sandbox): the sandbox cannot start, so the Python tool "
        "would refuse every call: sandbox: no OS isolation available, bwrap"
    )
    assert (
        "not found on PATH; fix: install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`" in line
    )
    assert "allow unprivileged user namespaces" in line and line.endswith("; then rerun --check")
    base_only = (
        load_repro("finacumen_table2")
        .source.read_text(encoding="utf-8")
        .replace('variants = ["base", "ft", "ft_fm"]', 'variants = ["base"]')
    )
    path = bare_machine / "base_only.toml"
    path.write_text(base_only, encoding="utf-8")
    assert not [i for i in check_config(load_repro(path)) if i.what.startswith("tool ")]


def test_check_present_items(bare_machine: Path, real_store: Path, tmp_path: Path) -> None:
    """On a real store (staples 2003-2023) and with weights present, the present items say so, and
    what the store lacks (news) is still missing."""
    src = load_repro("moira_table6_a3").source.read_text(encoding="utf-8")
    text = (
        src.replace('pool = ["AAPL", "ADBE", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA"]',
                    f'pool = ["KO", "PEP", "PG"]\nstore = "{real_store}"')
        .replace('"2025-01-02"', '"2019-01-02"').replace('"2025-02-11"', '"2019-12-31"')
        .replace('"2025-02-12"', '"2020-01-02"').replace('"2025-05-30"', '"2020-12-31"')
        .replace("main = [27, 75]", "main = [252, 253]")
    )  # fmt: skip
    cfg_path = tmp_path / "staples.toml"
    cfg_path.write_text(text, encoding="utf-8")
    for d in ("Qwen3-32B",):
        (bare_machine / "models" / d).mkdir(parents=True)
        (bare_machine / "models" / d / "config.json").write_text("{}", encoding="utf-8")
    items = {i.what: i for i in check_config(load_repro(cfg_path))}
    assert items["market store"].status == "ok"
    assert items["prices KO"].status == "ok" and items["prices KO"].detail == "2003-10-30..2023-10-27"
    before = count_sessions(dt.date(2003, 10, 30), dt.date(2019, 1, 1))  # the NYSE calendar's count
    assert items["screen history"].status == "ok"
    assert items["screen history"].detail.startswith(f"{before} sessions before 2019-01-02")
    assert items["sessions main"].status == "ok"  # 252 / 253: the NYSE counts, equal to the store's
    assert items["news"].status == "missing"
    assert items["company context"].status == "ok"
    assert items["model qwen3-32b"].status == "ok"


_RELEASED = """
[reproduce]
name = "released_check"
paper = "finacumen"
table = "check"
title = "scorers on the released files"
kind = "qa"
differs = ["a test config"]

[qa]
model = "qwen3-vl-8b"
tools = ["python", "reparse"]
variants = ["base", "ft_fm"]

[[qa.bank]]
label = "FinMMR Easy validation"
dataset = "finmmr"
path = "finmmr"
split = "validation"
subset = "easy"

[[qa.sets]]
label = "TAT-QA dev"
dataset = "tatqa"
path = "tatqa"
split = "dev"
"""


def test_check_scores_each_released_benchmarks_gold_and_refuses_a_broken_scorer(
    bare_machine: Path, released_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.qa.scoring import scoring

    path = bare_machine / "released.toml"
    path.write_text(_RELEASED, encoding="utf-8")
    cfg = load_repro(path)
    items = {i.what: i for i in check_config(cfg, data_root=released_root)}
    assert items["scorer FinMMR Easy validation"].status == "ok"
    assert items["scorer FinMMR Easy validation"].detail == (
        "FinMMR get_acc (0.2 % relative): gold answers of 3 items score correct"
    )
    assert items["scorer TAT-QA dev"].detail.startswith("TAT-QA official EM/F1 on (answer, scale)")

    def broken(gold, prediction):
        raise ValueError("rule missing")

    monkeypatch.setitem(scoring.RULES, "finmmr", broken)
    items = {i.what: i for i in check_config(cfg, data_root=released_root)}
    line = items["scorer FinMMR Easy validation"].line()
    assert line.startswith(
        "MISSING released_check: scorer FinMMR Easy validation: source 'finmmr/easy': "
        "its scorer (FinMMR get_acc (0.2 % relative)) cannot score item"
    )
    assert "ValueError: rule missing" in line and "before any model call" in line
    assert items["scorer TAT-QA dev"].status == "ok"
