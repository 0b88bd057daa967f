"""What users of lm-eval, vLLM and backtesting tools expect of a command line: a mistyped command
or choice gets "did you mean", a GPU kind is taken in any case, `reproduce list` fits the
terminal, `qa datasets` lists the QA datasets, `qa eval` takes `--seed` and `--limit`."""

from __future__ import annotations

import json

import pytest

from localfin_cli.suggest import closest, with_suggestion
from serving.chat.scripted import Rule, ScriptedBackend


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["bench", "kernel"], "No such command 'kernel'. Did you mean 'kernels'?"),
        (["pair", "run"], "Did you mean 'pairs'?"),
        (["reproduce", "plan", "moira_table3_main", "--gpus", "4", "--gpu", "h10"], "did you mean 'h100'?"),
        (
            ["qa", "eval", "--variant", "ft-fm", "--dataset", "demo", "--data", "x"],
            "--variant='ft-fm'; allowed: base, ft, ft_fm; did you mean 'ft_fm'?",
        ),
        (["chat", "qwen3-4", "hi"], "did you mean 'qwen3-4b'?"),
    ],
)
def test_a_mistyped_command_or_choice_gets_did_you_mean(cli, args, words) -> None:
    run = cli(*args)
    assert run.code == 2 and words in run.err and run.err.count("error:") == 1, run.err


def test_nothing_is_suggested_where_nothing_is_close() -> None:
    assert (
        with_suggestion("--variant='zzz'; allowed: base, ft, ft_fm")
        == "--variant='zzz'; allowed: base, ft, ft_fm"
    )
    assert with_suggestion("no such file: x") == "no such file: x"
    assert closest("H200", ["h100", "h200"]) == "h200" and closest("h200", ["h100", "h200"]) is None


def test_a_gpu_kind_is_taken_in_any_case(cli) -> None:
    upper = cli("reproduce", "plan", "moira_table3_main", "--gpus", "4", "--gpu", "H100")
    lower = cli("reproduce", "plan", "moira_table3_main", "--gpus", "4", "--gpu", "h100")
    assert upper.code == lower.code == 0, upper.err
    assert upper.out == lower.out


def test_reproduce_list_fits_the_terminal_and_keeps_one_line_a_config_in_a_pipe(cli, monkeypatch) -> None:
    from agent.reproduce.spec import load_all

    names = [c.name for c in load_all()]
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = cli("reproduce", "list").out.splitlines()
    assert len(piped) == len(names) + 1 and [x.split()[0] for x in piped[1:]] == names
    for width in (80, 120, 400):
        monkeypatch.setenv("COLUMNS", str(width))
        out = cli("reproduce", "list").out
        assert max(len(x) for x in out.splitlines()) <= width, width
        for c in load_all():  # every config and every word of what it reproduces is there
            assert c.name in out and all(w in out.split() for w in c.title.split()), (width, c.name)


def test_qa_datasets_lists_every_dataset_with_what_it_reads(cli, tmp_path) -> None:
    from agent.qa.data.extensions import dataset_names

    (tmp_path / "benchmarks" / "finmmr").mkdir(parents=True)
    run = cli("qa", "datasets", "--data-root", tmp_path, "--json")
    assert run.code == 0, run.err
    rows = {r["dataset"]: r for r in map(json.loads, run.out.splitlines())}
    assert list(rows) == dataset_names()
    assert all(r["reads"] for r in rows.values()), "every dataset says what files it reads"
    assert rows["finmmr"]["present"] == "yes" and rows["tatqa"]["present"] == "no"
    assert rows["finmmr"]["subsets"] == "easy, medium, hard"
    assert rows["tatqa"]["scorers"].startswith("official (default)")
    assert "QA.json" in rows["fintmmbench"]["reads"] and "localfin qa demo-set" in rows["demo"]["reads"]
    text = cli("qa", "datasets", "--data-root", tmp_path).out
    assert f"finmmr (localfin): present at {tmp_path / 'benchmarks' / 'finmmr'}" in text


def test_qa_eval_takes_a_seed_and_a_limit(cli, tmp_path, monkeypatch) -> None:
    import localfin_cli.qa_cmd as qa_cmd
    from serving.models.registry import default_registry

    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "question": f"What is {i}+1?",
                    "answer_type": "arithmetic",
                    "answer": i + 1,
                    "paragraphs": [f"{i}+1 is {i + 1}."],
                }
            )
            + "\n"
            for i in range(3)
        )
    )
    backend = ScriptedBackend([Rule("qa_base", json.dumps({"reasoning": "sum", "answer": "2"}))])
    monkeypatch.setattr(qa_cmd, "_backend", lambda kind, model, url, *http: (backend, default_registry()))
    run = cli(
        "qa", "eval", "--variant", "base", "--dataset", "tatqa", "--data", data, "--out", tmp_path / "r",
        "--seed", "11", "--limit", "2",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert len(backend.calls) == 2 and {r.seed for r in backend.calls} == {11}


def test_reproduce_rehearse_hands_the_rehearsal_an_absolute_folder(cli, tmp_path, monkeypatch) -> None:
    """The default output folder is relative (runs/rehearse): the rehearsal writes configs into its
    subfolders that name their data by it, so it gets the folder as an absolute path."""
    from localfin.errors import LocalfinError

    seen: list = []

    def stop(cfgs, base, **kw):
        seen.append(base)
        raise LocalfinError("stopped before any engine")

    monkeypatch.setattr("agent.reproduce.rehearse.rehearsal.rehearse", stop)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCALFIN_RUNS_DIR", raising=False)
    run = cli("reproduce", "rehearse", "moira_table3_main")
    assert run.code == 1 and "stopped before any engine" in run.err
    assert seen == [tmp_path / "runs" / "rehearse"] and seen[0].is_absolute()
