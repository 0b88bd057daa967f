"""`localfin qa`: commands are registered, bad arguments give one-line errors with exit code 2,
and `analyze` reads evaluation folders (made here with a scripted backend, no model)."""

from __future__ import annotations

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
