"""Evaluation: run folders (journal, trace, scores, manifest), resuming a killed run, and the
proof that no test-time prompt contains a gold answer and that the gate never receives one."""

from __future__ import annotations

import json

import pytest
from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa.core.items import Gold, QAItem
from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.memory.memory import ExperienceMemory
from agent.qa.solver import react
from agent.qa.solver.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.store import ExperienceBank
from localfin.errors import ConfigError
from serving.errors import BackendError

TOOLS = lambda q: [Calculator()]  # noqa: E731
_VOLATILE = {"wall_s", "engine_s", "latency_s", "model_latency_s"}


def _stable(rows):
    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k not in _VOLATILE}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    return clean(rows)


def _trace(run_dir):
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]


def test_run_folder_holds_journal_trace_scores_and_manifest(tmp_path):
    items = change_items(4, "test")
    data = tmp_path / "items.jsonl"
    data.write_text("demo file\n")
    s = evaluate(
        items,
        qa_backend(),
        tmp_path / "run",
        EvalConfig("ft", SolverConfig(model="m")),
        tools=TOOLS,
        scorer=num_scorer,
        data_files=[data],
    )
    assert s.n == 4 and s.accuracy == 1.0 and s.gate_pass_rate == 1.0 and s.mean_tool_steps == 1.0
    assert s.mean_total_tokens > 0 and s.model_calls == 12 and s.replayed == 0
    run = tmp_path / "run"
    assert {p.name for p in run.iterdir()} >= {
        "journal.sqlite",
        "trace.jsonl",
        "scores.json",
        "manifest.json",
    }
    row = _trace(run)[0]
    for key in (
        "item_id",
        "steps",
        "answer",
        "correct",
        "score",
        "gate_ok",
        "fallbacks",
        "prompt_tokens",
        "completion_tokens",
        "engine_s",
        "wall_s",
    ):
        assert key in row
    assert [st["action"] for st in row["steps"]] == ["", "calc", "final_answer"]
    assert row["steps"][1]["observation"] == "200.0" and row["steps"][2]["gate"]["ok"] is True
    man = json.loads((run / "manifest.json").read_text())
    assert man["model"] == "m" and man["model_revision"] == "scripted" and man["seed"] == 0
    assert man["variant"] == "ft" and man["tools"] == ["calc"] and len(man["items"]) == 4
    assert len(man["data_files"][str(data)]) == 64 and "python" in man["packages"]
    assert man["config"]["solver"]["max_steps"] == 16


def test_base_variant_uses_no_tools(tmp_path):
    backend = qa_backend()
    s = evaluate(
        change_items(2, "test"),
        backend,
        tmp_path / "run",
        EvalConfig("base", SolverConfig(model="m")),
        tools=TOOLS,
        scorer=num_scorer,
    )
    assert s.model_calls == 2 and s.gate_pass_rate is None and s.mean_tool_steps == 0
    # the paper's model-only Base: one free-text call, no schema, the answer line read
    assert all(r.call_type == "qa_base" and r.json_schema is None for r in backend.calls)
    trace = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    assert [t["answer"] for t in trace] == ["1", "1"]


def test_variant_and_memory_must_agree(tmp_path):
    with pytest.raises(ConfigError, match="ft_fm needs an experience memory"):
        evaluate([], qa_backend(), tmp_path, EvalConfig("ft_fm", SolverConfig(model="m")), scorer=num_scorer)
    with pytest.raises(ConfigError, match="allowed: base, ft, ft_fm"):
        EvalConfig("full", SolverConfig(model="m"))


class _Dying:
    """Passes ``budget`` requests to the inner backend, then dies like a killed process."""

    name = "dying"

    def __init__(self, inner, budget: int) -> None:
        self.inner, self.budget = inner, budget

    def chat(self, requests):
        if self.budget < len(requests):
            raise BackendError("engine killed")
        self.budget -= len(requests)
        return self.inner.chat(requests)

    def close(self):
        return None


def test_killed_evaluation_resumes_from_its_journal(tmp_path):
    items = change_items(4, "test")
    cfg = EvalConfig("ft", SolverConfig(model="m"), chunk_size=2)
    ref = evaluate(items, qa_backend(), tmp_path / "ref", cfg, tools=TOOLS, scorer=num_scorer)
    with pytest.raises(BackendError, match="killed"):
        evaluate(items, _Dying(qa_backend(), budget=6), tmp_path / "run", cfg, tools=TOOLS, scorer=num_scorer)
    assert not (tmp_path / "run" / "trace.jsonl").exists()
    backend = qa_backend()
    resumed = evaluate(items, backend, tmp_path / "run", cfg, tools=TOOLS, scorer=num_scorer)
    assert resumed.replayed == 6 and resumed.model_calls == ref.model_calls - 6 == len(backend.calls)
    assert _stable(_trace(tmp_path / "run")) == _stable(_trace(tmp_path / "ref"))
    # a full replay keeps the engine time measured when the calls were made
    replay = evaluate(items, qa_backend(), tmp_path / "run", cfg, tools=TOOLS, scorer=num_scorer)
    assert replay.model_calls == 0 and replay.mean_engine_s == resumed.mean_engine_s > 0
    assert replay.run_wall_s == resumed.run_wall_s
    timings = json.loads((tmp_path / "run" / "timings.json").read_text())
    assert [a["model_calls"] for a in timings["attempts"]] == [6, resumed.model_calls, 0]
    assert [a["failed"] for a in timings["attempts"]] == [True, False, False]
    assert len(timings["shares"]) == ref.model_calls  # every call's engine time, the killed ones too


# --- gold never reaches a test-time prompt or the gate ------------------------------------------
class GoldRead(BaseException):
    """Raised on any read of a trapped gold (a BaseException, so no handler in the agent hides it)."""


class TrapGold(Gold):
    armed = False

    def __getattribute__(self, name):
        if type(self).armed and not name.startswith("__"):
            raise GoldRead(f"gold.{name} read during the run")
        return object.__getattribute__(self, name)


def test_no_prompt_of_a_test_run_contains_the_gold_and_the_gate_never_receives_it(tmp_path, monkeypatch):
    # gold values that cannot occur by chance in contexts, tool outputs or scripted replies
    golds = {f"test-{i}": f"{739_211 + 7919 * i}.{40_973 + i}" for i in range(4)}
    test_items = [
        QAItem(it.question, TrapGold(float(golds[it.item_id])), split="test")
        for it in change_items(4, "test")
    ]
    TrapGold.armed = True
    with pytest.raises(GoldRead):  # the trap works
        _ = test_items[0].gold.answer
    TrapGold.armed = False
    # a bank built from training items (their own golds are seen at training time only)
    emb = HashingEmbedder(dim=256)
    with ExperienceBank.open(tmp_path / "bank") as bank:
        build_bank(
            change_items(3, "train", start=10),
            QASolver(SolverConfig(model="m"), tools=TOOLS),
            qa_backend(),
            bank,
            emb,
            tmp_path / "build",
            config=BankBuildConfig(k=2),
            scorer=num_scorer,
        )
        memory = ExperienceMemory(Retriever(bank, emb))

        gate_args: list[tuple] = []
        real_check = react.check_answer

        def spy(*args, **kwargs):
            gate_args.append(args + tuple(kwargs.values()))
            return real_check(*args, **kwargs)

        monkeypatch.setattr(react, "check_answer", spy)

        def scorer(dataset, gold, prediction):  # the only reader of gold, after the run
            TrapGold.armed = False
            return num_scorer(dataset, gold, prediction)

        backends = {}
        for v in ("base", "ft", "ft_fm"):
            backends[v] = qa_backend()
            TrapGold.armed = True
            try:
                evaluate(
                    test_items,
                    backends[v],
                    tmp_path / v,
                    EvalConfig(v, SolverConfig(model="m")),
                    tools=TOOLS,
                    memory=memory if v == "ft_fm" else None,
                    scorer=scorer,
                )
            finally:
                TrapGold.armed = False
    requests = [r for b in backends.values() for r in b.calls]
    assert {r.call_type for r in requests} == {"qa_solve", "qa_base", "qa_annotate"}
    assert sum(r.call_type == "qa_annotate" for r in requests) == 4  # memory was really used
    for r in requests:
        blob = json.dumps(r.to_dict())
        for g in golds.values():
            assert g not in blob and g[:7] not in blob
    assert len(gate_args) == 8  # every final answer of the ft and ft_fm runs (base has no gate)
    for args in gate_args:
        assert not any(isinstance(a, Gold) for a in args)
        assert not any(g in repr(a) for a in args for g in golds.values())


def test_waves_bound_the_questions_in_flight_and_change_no_result(tmp_path):
    items = change_items(5, "test")
    backend = qa_backend()
    sizes: list[int] = []
    orig = backend.chat
    backend.chat = lambda reqs: (sizes.append(len(reqs)), orig(reqs))[1]  # type: ignore[method-assign]
    evaluate(
        items,
        backend,
        tmp_path / "w",
        EvalConfig("ft", SolverConfig(model="m"), max_active=2),
        tools=TOOLS,
        scorer=num_scorer,
    )
    evaluate(
        items,
        qa_backend(),
        tmp_path / "all",
        EvalConfig("ft", SolverConfig(model="m"), max_active=None),
        tools=TOOLS,
        scorer=num_scorer,
    )
    assert max(sizes) == 2 and sizes == [2, 2, 2, 2, 2, 2, 1, 1, 1]
    assert _stable(_trace(tmp_path / "w")) == _stable(_trace(tmp_path / "all"))
