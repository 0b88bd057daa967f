"""`localfin qa`: commands are registered, bad arguments give one-line errors with exit code 2,
and `analyze` reads evaluation folders (made here with a scripted backend, no model)."""

from __future__ import annotations

import json

from agent.qa.evaluate import EvalConfig, evaluate
from agent.qa.items import Gold, QAItem, Question
from agent.qa.react import SolverConfig
from localfin_cli.main import main
from serving.scripted import Rule, ScriptedBackend


class _Score:
    def __init__(self, correct: bool) -> None:
        self.correct, self.score, self.detail = correct, float(correct), ""


def test_qa_commands_are_registered(capsys):
    assert main(["qa", "--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("build-bank", "eval", "analyze", "demo"):
        assert cmd in out


def test_bad_variant_and_missing_data_are_exit_2(capsys, tmp_path):
    data = tmp_path / "items.jsonl"
    assert main(["qa", "eval", "--variant", "ft", "--dataset", "tatqa", "--data", str(data)]) == 2
    assert "not found" in capsys.readouterr().err
    data.write_text(
        '{"id": "x", "question": "q?", "answer_type": "span", "answer": ["a"], "paragraphs": ["p"]}\n'
    )
    rc = main(
        [
            "qa",
            "eval",
            "--variant",
            "full",
            "--dataset",
            "tatqa",
            "--data",
            str(data),
            "--run-dir",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "--variant='full'; allowed: base, ft, ft_fm" in err and err.count("error:") == 1
    rc = main(
        [
            "qa",
            "eval",
            "--variant",
            "ft_fm",
            "--dataset",
            "tatqa",
            "--data",
            str(data),
            "--bank-sizes",
            "some",
            "--run-dir",
            str(tmp_path / "r"),
        ]
    )
    assert rc == 2 and "--bank-sizes entry 'some'" in capsys.readouterr().err


def test_analyze_prints_the_variant_table(capsys, tmp_path):
    items = [
        QAItem(Question(f"q{i}", "demo", "What is the total?", context="Total 42"), Gold(42))
        for i in range(2)
    ]
    scorer = lambda d, gold, pred: _Score(pred == "42")  # noqa: E731
    for name, answer in (("right", "42"), ("wrong", "7")):
        backend = ScriptedBackend([Rule("qa_solve", {"reasoning": "r", "answer": answer})])
        evaluate(items, backend, tmp_path / name, EvalConfig("base", SolverConfig(model="m")), scorer=scorer)
    assert main(["qa", "analyze", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| right | base | 2 | 1.000 |" in out and "| wrong | base | 2 | 0.000 |" in out
    assert (tmp_path / "analysis.json").exists()


def test_eval_of_fintmmbench_judges_the_answers_after_the_run(cli, tmp_path, monkeypatch):
    """`qa eval --dataset fintmmbench`: the solver's answers are scored by the judge pass (its
    own journal), not by the string scorer, which refuses that benchmark."""
    import localfin_cli.qa_cmd as qa_cmd
    from serving.registry import default_registry

    tmm = tmp_path / "fintmm"
    tmm.mkdir()
    qa = [
        {
            "uuid": "t1",
            "question": "Which firm closed higher on day one?",
            "answers": [{"answer": "Apple Inc."}],
        },
        {"uuid": "t2", "question": "Which firm traded more on day two?", "answers": [{"answer": "Adobe"}]},
    ]
    (tmm / "QA.json").write_text(json.dumps(qa), encoding="utf-8")

    def solve(req) -> str:
        return json.dumps({"reasoning": "read it", "answer": "Apple"})

    def judge(req) -> str:
        ok = "Apple Inc." in req.messages[-1].content
        return json.dumps({"verdict": "correct" if ok else "incorrect", "reason": "compared"})

    backend = ScriptedBackend([Rule("qa_solve", solve), Rule("judge", judge)])
    monkeypatch.setattr(qa_cmd, "_backend", lambda kind, model, url: (backend, default_registry()))
    run = tmp_path / "run"
    res = cli("qa", "eval", "--variant", "base", "--dataset", "fintmmbench", "--data", tmm, "--run-dir", run)
    assert res.code == 0, res.err
    judged = json.loads((run / "judge_scores.json").read_text(encoding="utf-8"))
    assert judged["correct"] == 1 and judged["n"] == 2
    assert '"judge"' in res.out
    assert {r.call_type for r in backend.calls} == {"qa_solve", "judge"}
