"""What a new user meets in the first hour, command by command: a healthy run is audited as
healthy whatever folder its config names its store from; a prompt folder holding a copy of every
packaged prompt is taken; a first run's summary says only what happened; every name and date a
user types is checked before any engine starts, the message naming the user's own option and,
for a date, the data's range (exit 2); a failed import leaves nothing it created and never says
"done" before its error. The model is the fake OpenAI server of the fault tests (no engine)."""

from __future__ import annotations

import json
import shutil
import sys
from importlib import resources
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agent" / "pairs"))  # moira_support
sys.path.insert(0, str(HERE.parent / "faults"))  # fake_openai, faults_support

from fake_openai import FakeOpenAI  # noqa: E402
from faults_support import openai_config  # noqa: E402
from moira_support import small_store  # noqa: E402

#: the small market's data range (moira_support.SMALL: 700 sessions from 2013-01-02)
SMALL_RANGE = "from 2013-01-02 to 2015-09-21"


@pytest.fixture()
def server():
    srv = FakeOpenAI(api_key=None)
    yield srv
    srv.close()


def _relative_store_config(root: Path, base_url: str, **tables) -> Path:
    """``root/cfg/c.toml`` naming its store ``market.sqlite`` beside it (a relative path)."""
    config = openai_config(root / "cfg", base_url, **tables)
    shutil.copy(small_store(), root / "cfg" / "market.sqlite")
    text = config.read_text().replace(f'store = "{small_store()}"', 'store = "market.sqlite"')
    assert 'store = "market.sqlite"' in text
    config.write_text(text)
    return config


# -- a healthy run is audited as healthy ----------------------------------------------------------


def test_audit_finds_nothing_damaged_in_a_run_whose_config_names_its_store_relatively(
    cli, server, tmp_path, monkeypatch
):
    from agent.pairs.experiment.config import load_config

    _relative_store_config(tmp_path, server.base_url)
    monkeypatch.chdir(tmp_path)  # the config's folder is not the working directory
    run = cli("pairs", "run", "--config", "cfg/c.toml", "--out", "exp")
    assert run.code == 0, run.err
    # the folder's copy states where its store is: read from there it names the same store
    copy = (tmp_path / "exp" / "config.toml").read_text()
    assert f'store = "{tmp_path / "cfg" / "market.sqlite"}"' in copy
    assert load_config(tmp_path / "exp" / "config.toml").store == tmp_path / "cfg" / "market.sqlite"
    audit = cli("audit", "exp")
    assert audit.code == 0, audit.out + audit.err
    assert "DAMAGED" not in audit.out and "0 violation(s)" in audit.out
    sent = server.n
    again = cli("pairs", "run", "--config", "cfg/c.toml", "--out", "exp", "--resume")
    assert again.code == 0 and server.n == sent, again.err  # the same config: resumed, all replayed
    assert cli("audit", "exp").code == 0


# -- a prompt folder with every packaged prompt; a first run's summary --------------------------


def test_a_prompt_folder_holding_every_packaged_prompt_runs_and_the_summary_says_what_ran(
    cli, server, tmp_path, monkeypatch
):
    prompts = tmp_path / "cfg" / "prompts"
    prompts.mkdir(parents=True)
    packaged = resources.files("agent").joinpath("prompts")
    names = sorted(p.name for p in packaged.iterdir() if p.name.endswith(".yaml"))
    assert {"qa_solve.yaml", "pairs_select.yaml", "demo_pair_pick.yaml"} <= set(names)
    for name in names:
        (prompts / name).write_text(packaged.joinpath(name).read_text("utf-8"))
    config = openai_config(tmp_path / "cfg", server.base_url, prompt={"dir": str(prompts)})
    config.write_text(config.read_text().replace(f'dir = "{prompts}"', 'dir = "prompts"'))  # beside it
    monkeypatch.chdir(tmp_path)
    run = cli("pairs", "run", "--config", config, "--out", "exp")
    assert run.code == 0, run.err
    summary = (tmp_path / "exp" / "summary.md").read_text()
    # FinMem did not run (no baseline): its prompts are not listed; the agent's five are, from the folder
    assert f"Prompt texts: {prompts} (5 of 5 prompt files" in summary and "pairs_finmem" not in summary
    doc = json.loads((tmp_path / "exp" / "summary.json").read_text())
    assert sorted(doc["prompts"]) == [
        "pairs_break",
        "pairs_direction",
        "pairs_news_verify",
        "pairs_reflect",
        "pairs_select",
    ]
    # a first run replays nothing: repeats of its own requests are said as such
    head = summary.splitlines()[2]
    assert "from the journal" not in head, head
    assert doc["replayed_from_journal"] == 0 and doc["model_calls"] == server.n
    # a resume replays every request from the journal, and says so
    sent, asked = server.n, doc["model_calls"] + doc["repeated_requests"]
    assert cli("pairs", "run", "--config", config, "--out", "exp", "--resume").code == 0 and server.n == sent
    again = (tmp_path / "exp" / "summary.md").read_text().splitlines()[2]
    assert f"0 model calls, {asked} answered from the journal of an earlier run" in again, again


# -- names and dates, checked before any engine ---------------------------------------------------


@pytest.fixture()
def qa_items(tmp_path: Path) -> Path:
    data = tmp_path / "items.jsonl"
    data.write_text(
        '{"id": "x", "question": "q?", "answer_type": "span", "answer": ["a"], "paragraphs": ["p"]}\n'
    )
    return data


@pytest.fixture()
def no_engine(monkeypatch):
    """Any backend the QA commands would open: an error saying so (nothing may get that far)."""
    from localfin.errors import LocalfinError

    def refuse(*_a, **_k):
        raise LocalfinError("an engine was started before the names were checked")

    monkeypatch.setattr("localfin_cli.qa_cmd._backend", refuse)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["eval", "--variant", "ft", "--tools", "python,pct"], "--tools has 'pct'; allowed: python, lookup"),
        (["eval", "--variant", "ft", "--model", "no-such"], "--model: unknown model key 'no-such'; allowed:"),
        (["eval", "--variant", "ft_fm", "--embedder", "w2v"], "--embedder='w2v'; allowed: minilm, hashing"),
        (["eval", "--variant", "ft", "--backend", "http"], "--backend 'http'; allowed: vllm, openai"),
        (["eval", "--variant", "ft", "--sandbox-missing", "skip"], "--sandbox-missing='skip'; allowed"),
        (
            ["eval", "--variant", "ft", "--tools", "lookup", "--store", "absent.sqlite"],
            "--store absent.sqlite",
        ),
        (["build-bank", "--judge", "no-such"], "--judge: unknown model key 'no-such'"),
        (["build-bank", "--tools", "python,python"], "--tools='python,python' names a tool twice"),
        (["judge-check", "--judge", "no-such"], "--judge: unknown model key 'no-such'"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_qa_names_are_checked_before_any_engine_in_the_options_words(
    args, words, cli, qa_items, no_engine, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    r = cli("qa", *args, "--dataset", "tatqa", "--data", qa_items, "--out", tmp_path / "run")
    assert r.code == 2, r.err
    last = r.err.strip().splitlines()[-1]
    assert last.startswith("error: ") and words in last, r.err
    assert "ToolsetConfig" not in r.err and not (tmp_path / "run").exists()


def test_an_unknown_dataset_names_the_option(cli, qa_items, no_engine, tmp_path):
    r = cli("qa", "eval", "--variant", "base", "--dataset", "tatqaa", "--data", qa_items)
    assert r.code == 2 and "--dataset: unknown QA dataset 'tatqaa'; allowed: tatqa," in r.err


@pytest.mark.parametrize(("date", "where"), [("2012-06-01", "before"), ("2016-01-04", "after")])
def test_a_screen_date_outside_the_data_gives_its_range(date, where, cli):
    r = cli("pairs", "screen", "--date", date, "--store", small_store())
    assert r.code == 2, r.err
    assert f"--date {date} is {where} the data: the store {small_store()} holds prices {SMALL_RANGE}" in r.err
    assert r.out == ""


def test_a_screen_date_outside_the_real_data_gives_its_range(cli, shared_data, tmp_path):
    store = tmp_path / "staples.sqlite"
    prices = shared_data / "prices" / "staples_energy_daily_2003_2023.csv"
    imported = cli("data", "import", "--prices", prices, "--pool", "KO,PEP,PG", "--store", store)
    assert imported.code == 0, imported.err
    for date, where in (("2003-01-02", "before"), ("2024-01-02", "after")):
        r = cli("pairs", "screen", "--date", date, "--store", store, "--pool", "KO,PEP")
        assert r.code == 2, r.err
        assert (
            f"is {where} the data: the store {store} holds prices of KO, PEP from 2003-10-30 to 2023-10-27"
            in r.err
        )
    inside = cli("pairs", "screen", "--date", "2023-10-27", "--store", store, "--lookback", "252")
    assert inside.code == 0 and "last session 2023-10-27" in inside.out, inside.err
    unknown = cli("pairs", "screen", "--date", "2020-01-02", "--store", store, "--pool", "KO,XOM")
    assert unknown.code == 2 and "--pool has XOM, not in the store" in unknown.err


def test_a_window_outside_the_data_gives_the_stores_range_before_any_folder(cli, tmp_path):
    config = openai_config(
        tmp_path / "cfg",
        "http://127.0.0.1:9/v1",  # nothing listens there: the check comes first
        windows={
            "train_start": "2030-01-02",
            "train_end": "2030-01-31",
            "test_start": "2030-02-01",
            "test_end": "2030-03-29",
        },
    )
    r = cli("pairs", "run", "--config", config, "--out", tmp_path / "exp")
    assert r.code == 2, r.err
    assert (
        "windows.train_start .. windows.train_end = 2030-01-02 .. 2030-01-31 lies outside the data" in r.err
    )
    assert f"holds prices {SMALL_RANGE}" in r.err and not (tmp_path / "exp").exists()


def test_baseline_years_outside_the_data_give_the_stores_range(cli, tmp_path):
    r = cli(
        "pairs", "baselines", "--pool", "x=GRNF,HRBK", "--years", "2030", "--out", tmp_path / "o",
        "--store", small_store(),
    )  # fmt: skip
    assert r.code == 2, r.err
    said = (
        f"--years 2030 (pool x) lies outside the data: the store {small_store()} holds prices of GRNF, HRBK"
    )
    assert f"{said} {SMALL_RANGE}" in r.err
    assert not (tmp_path / "o").exists()


def test_a_failed_import_leaves_no_file_it_created_and_never_says_done(cli, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("date,ticker,close\n2020-01-02,AAA,10\n2020-01-03,AAA,-5\n")
    store = tmp_path / "new" / "market.sqlite"
    r = cli("data", "import", "--prices", bad, "--store", store)
    assert r.code == 2 and "non-positive value -5" in r.err
    assert not (tmp_path / "new").exists()  # neither the store nor the folder made for it
    assert "done" not in r.err and "reading and validating files: stopped at 0/1" in r.err, r.err
    # an existing store stays, as it was
    good = tmp_path / "good.csv"
    good.write_text("date,ticker,close\n2020-01-02,BBB,10\n2020-01-03,BBB,11\n")
    kept = tmp_path / "kept.sqlite"
    assert cli("data", "import", "--prices", good, "--store", kept).code == 0
    before = kept.read_bytes()
    assert cli("data", "import", "--prices", bad, "--store", kept).code == 2
    assert kept.read_bytes() == before


def test_data_synth_writes_its_files_beside_the_store(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCALFIN_DATA_DIR", str(tmp_path / "elsewhere"))
    r = cli("data", "synth", "--sessions", "300", "--import", "--store", tmp_path / "s" / "market.sqlite")
    assert r.code == 0, r.err
    assert sorted(p.name for p in (tmp_path / "s" / "synthetic").iterdir()) == [
        "companies.csv",
        "filings.parquet",
        "news.jsonl",
        "prices.csv",
        "truth.json",
    ]
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "localfin_data").exists()
