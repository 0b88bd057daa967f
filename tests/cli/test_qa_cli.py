"""`localfin qa`: commands are registered, bad arguments give one-line errors with exit code 2,
and `analyze` reads evaluation folders (made here with a scripted backend, no model)."""

from __future__ import annotations

import json

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.solver.react import SolverConfig
from localfin_cli.main import main
from serving.chat.scripted import Rule, ScriptedBackend


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
            "--out",
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
            "--out",
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
        backend = ScriptedBackend([Rule("qa_base", f"It is the total.\nAnswer: {answer}")])
        evaluate(items, backend, tmp_path / name, EvalConfig("base", SolverConfig(model="m")), scorer=scorer)
    assert main(["qa", "analyze", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| right | base | 2 | 1.000 |" in out and "| wrong | base | 2 | 0.000 |" in out
    assert (tmp_path / "analysis.json").exists()


def test_eval_of_fintmmbench_judges_the_answers_after_the_run(cli, tmp_path, monkeypatch):
    """`qa eval --dataset fintmmbench`: the solver's answers are scored by the judge pass (its
    own journal), not by the string scorer, which refuses that benchmark."""
    import localfin_cli.qa_cmd as qa_cmd
    from serving.models.registry import default_registry

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

    backend = ScriptedBackend([Rule("qa_base", solve), Rule("judge", judge)])
    monkeypatch.setattr(qa_cmd, "_backend", lambda kind, model, url, *http: (backend, default_registry()))
    run = tmp_path / "run"
    res = cli("qa", "eval", "--variant", "base", "--dataset", "fintmmbench", "--data", tmm, "--out", run)
    assert res.code == 0, res.err
    judged = json.loads((run / "judge_scores.json").read_text(encoding="utf-8"))
    assert judged["correct"] == 1 and judged["n"] == 2
    assert '"judge"' in res.out
    assert {r.call_type for r in backend.calls} == {"qa_base", "judge"}
    # --scorer authors_em: the authors' SQuAD match alone grades the same answers, no judge
    backend.calls.clear()
    res = cli("qa", "eval", "--variant", "base", "--dataset", "fintmmbench", "--data", tmm, "--out", run,
              "--scorer", "authors_em")  # fmt: skip
    assert res.code == 0, res.err
    assert backend.calls == []  # the answers replay from the journal
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert scores["correct"] == 0 and '"judge"' not in res.out  # "Apple" is not "Apple Inc."
    res = cli("qa", "eval", "--variant", "base", "--dataset", "fintmmbench", "--data", tmm, "--out", run,
              "--scorer", "official")  # fmt: skip
    assert res.code == 2
    assert "scorer 'official' for fintmmbench; allowed: localfin, authors, authors_em" in res.err


def _demo_items(path, *, missing_image: bool) -> None:
    rows = [
        {"id": f"d{i}", "split": "test", "question": "What is the total? Round to 0 decimals.",
         "context": "Total 42", "images": ["images/absent.png"] if missing_image and i == 0 else [],
         "answer": 42, "decimals": 0}
        for i in range(2)
    ]  # fmt: skip
    lines = [json.dumps(r) for r in rows] + ['{"id": "bad", "question": "q", "answer": "x", "decimals": 0}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_eval_reports_skipped_and_incomplete_records(cli, tmp_path, monkeypatch):
    """The data line names both lists the loader keeps: records skipped and items loaded without a
    part (here an image absent from this copy, kept with --keep-missing-images)."""
    import localfin_cli.qa_cmd as qa_cmd
    from serving.models.registry import default_registry

    data = tmp_path / "items.jsonl"
    _demo_items(data, missing_image=True)
    backend = ScriptedBackend([Rule("qa_base", {"reasoning": "r", "answer": "42"})])  # the CPU model's Base
    monkeypatch.setattr(qa_cmd, "_backend", lambda kind, model, url, *http: (backend, default_registry()))
    args = ("qa", "eval", "--variant", "base", "--dataset", "demo", "--data", data)
    res = cli(*args, "--out", tmp_path / "kept", "--keep-missing-images")
    assert res.code == 0, res.err
    assert (
        f"demo {data}: 2 items selected; 1 records skipped (first: answer 'x' is not a number); "
        f"1 items loaded incomplete (first: image file missing: {tmp_path}/images/absent.png (1 of 1))"
    ) in res.err
    res = cli(*args, "--out", tmp_path / "skipped")
    assert res.code == 0, res.err
    assert f"demo {data}: 1 items selected; 2 records skipped (first: image file missing" in res.err
    assert "loaded incomplete" not in res.err


def test_eval_of_fintmmbench_offers_retrieve_over_its_corpus(cli, tmp_path, monkeypatch):
    import localfin_cli.qa_cmd as qa_cmd
    from serving.models.registry import default_registry

    tmm = tmp_path / "fintmm"
    (tmm / "data").mkdir(parents=True)
    qa = [
        {"uuid": "t1", "question": "What was AAPL's close on 2022-03-07?", "answers": [{"answer": "152.5"}]}
    ]
    (tmm / "QA.json").write_text(json.dumps(qa), encoding="utf-8")
    rows = [{"Symbol": "AAPL", "Date": "2022-03-07", "indicator_name": "Close", "indicator_value": 152.5,
             "UUID": "p1"}]  # fmt: skip
    (tmm / "data" / "StockPrice.json").write_text(json.dumps(rows), encoding="utf-8")

    def solve(req) -> str:
        props = (req.json_schema or {}).get("properties", {})
        if "plan" in props:
            return json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
        if not any("Output of retrieve" in m.content for m in req.messages):
            return json.dumps(
                {"thought": "t", "action": "retrieve", "args": {"query": "AAPL close 2022-03-07"}}
            )
        return json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": "152.5"}})

    judge = json.dumps({"verdict": "correct", "reason": "same"})
    backend = ScriptedBackend([Rule("qa_solve", solve), Rule("judge", judge)])
    monkeypatch.setattr(qa_cmd, "_backend", lambda kind, model, url, *http: (backend, default_registry()))
    run = tmp_path / "run"
    args = ("--variant", "ft", "--dataset", "fintmmbench", "--data", tmm, "--tools", "retrieve")
    res = cli("qa", "eval", *args, "--out", run)
    assert res.code == 0, res.err
    assert json.loads((run / "manifest.json").read_text(encoding="utf-8"))["tools"] == ["retrieve"]
    trace = json.loads((run / "trace.jsonl").read_text(encoding="utf-8").splitlines()[0])
    step = next(s for s in trace["steps"] if s["action"] == "retrieve")
    assert step["tool_ok"] and "(uuid p1)" in step["observation"] and trace["gate_ok"] is True


def test_judge_check_prints_both_rates(cli, tmp_path, monkeypatch):
    """`qa judge-check`: the judge on the items' gold answers and on perturbed wrong ones."""
    import localfin_cli.qa_cmd as qa_cmd
    from serving.models.registry import default_registry

    tmm = tmp_path / "fintmm"
    tmm.mkdir()
    qa = [
        {"uuid": "t1", "question": "What was AAPL's close on day one?", "answers": [{"answer": "152.5"}]},
        {"uuid": "t2", "question": "Did it close higher?", "answers": [{"answer": "Yes"}]},
    ]
    (tmm / "QA.json").write_text(json.dumps(qa), encoding="utf-8")

    def judge(req) -> str:  # a judge that takes every candidate for right
        return json.dumps({"verdict": "correct", "reason": "same"})

    backend = ScriptedBackend([Rule("judge", judge)])
    monkeypatch.setattr(qa_cmd, "_backend", lambda kind, model, url, *http: (backend, default_registry()))
    res = cli("qa", "judge-check", "--data", tmm, "--judge", "qwen3-4b-nothink", "--out", tmp_path / "out")
    assert res.code == 0, res.err
    doc = json.loads(res.out.strip().splitlines()[-1])
    assert (doc["gold_right_rate"], doc["wrong_caught_rate"], doc["wrong_n"]) == (1.0, 0.0, 2)
    assert doc["perturbations"] == {"number": 1, "yes_no": 1}
    assert "qwen3-4b-nothink: 2/2 gold answers judged right, 0/2 perturbed answers judged wrong" in res.err
    assert (tmp_path / "out" / "judge_check.json").is_file()
