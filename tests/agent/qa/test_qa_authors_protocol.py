"""The solver-side points of the authors' released protocol, each on a scripted model: the
memory block of whole entries (with their images, no annotator call), the summarizer over whole
trajectories with an analysis and unbounded lessons, format instructions shown to the tools
variants and never to Base, and OCR by the served model (journaled)."""

from __future__ import annotations

import json

from qa_fakes import Calculator, base_reply, change_items, change_model, num_scorer

from agent.qa.data.gold_inputs import GoldInputs, with_gold_inputs
from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.model_ocr import OCR_JOURNAL, ModelTranscriber
from agent.qa.solver.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.schema import NewEntry
from bank.store import ExperienceBank
from serving.chat.lockstep import run_one
from serving.chat.scripted import Rule, ScriptedBackend

EMB = HashingEmbedder(dim=256)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def _solve_reply(req) -> str:
    if "plan" in (req.json_schema or {}).get("properties", {}):
        return json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
    return json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": "1"}})


def test_the_entries_block_shows_whole_entries_with_their_images_and_no_annotator_call(tmp_path):
    img = tmp_path / "chart.png"
    img.write_bytes(PNG)
    q = change_items(1, "test")[0].question
    lessons = ("Use calc.",), ("Check the unit.",)
    entry = NewEntry("train-0", "demo", q.text, q.context[:600], *lessons, "777.77", images=(str(img),))
    with ExperienceBank.open(tmp_path / "bank") as bank:
        bank.add_texts([entry], EMB)
        assert bank.get([0])[0].images == (str(img),)  # stored with the entry
        memory = ExperienceMemory(Retriever(bank, EMB), MemoryConfig(block="entries", annotator=False))
        (ret,) = memory.retrieve_many([q])
        solver = QASolver(SolverConfig(model="m", max_steps=1, send_images=True), memory=memory)
        backend = ScriptedBackend([Rule("qa_solve", _solve_reply)])
        traj = run_one(solver.solve(q, retrieval=ret), backend)
    assert [r.call_type for r in backend.calls] == ["qa_solve", "qa_solve"]  # no qa_annotate
    block = traj.memory_block
    for part in ("Problem: What is the change", "Its answer: 777.77", "What worked:\n- Use calc.",
                 "What to avoid:\n- Check the unit.", "Its images: attached image(s) 1",
                 "Ignore any entry that does not fit this problem."):  # fmt: skip
        assert part in block, part
    assert len(backend.calls[0].messages[1].images) == 1  # the entry's image, ahead of the question's
    # without images for the model, the block names none and attaches none
    with ExperienceBank.open(tmp_path / "bank") as bank:
        memory = ExperienceMemory(Retriever(bank, EMB), MemoryConfig(block="entries", annotator=False))
        (ret,) = memory.retrieve_many([q])
        plain = run_one(QASolver(SolverConfig(model="m", max_steps=1), memory=memory).solve(q, retrieval=ret),
                        ScriptedBackend([Rule("qa_solve", _solve_reply)]))  # fmt: skip
    assert "Its images" not in plain.memory_block


def test_the_directives_block_without_the_annotator_shows_the_entries_as_stored(tmp_path):
    q = change_items(1, "test")[0].question
    with ExperienceBank.open(tmp_path / "bank") as bank:
        bank.add_texts([NewEntry("t-0", "demo", q.text, q.context[:600], ("Use calc.",), ())], EMB)
        memory = ExperienceMemory(Retriever(bank, EMB), MemoryConfig(annotator=False))
        (ret,) = memory.retrieve_many([q])
        backend = ScriptedBackend([Rule("qa_solve", _solve_reply)])
        traj = run_one(
            QASolver(SolverConfig(model="m", max_steps=1), memory=memory).solve(q, retrieval=ret), backend
        )
    assert "qa_annotate" not in [r.call_type for r in backend.calls]
    assert "Finding: Use calc." in traj.memory_block


def test_the_summarizer_sees_whole_trajectories_and_writes_an_analysis_first(tmp_path):
    items = change_items(1, "train")

    def summary(req) -> str:
        props = req.json_schema["properties"]
        assert next(iter(props)) == "analysis" and "maxItems" not in props["findings"]
        assert "maxLength" not in props["findings"]["items"]  # unbounded lessons
        return json.dumps({"analysis": "2019 less 2018.", "findings": ["x" * 400], "cautions": []})

    backend = ScriptedBackend([Rule("bank_summarize", summary), Rule("qa_solve", change_model)])
    cfg = BankBuildConfig(k=1, view="whole", analysis=True, lesson_chars=0, max_lessons=0, max_tokens=8192,
                          summary_temperature=0.3)  # fmt: skip
    with ExperienceBank.open(tmp_path / "bank") as bank:
        build_bank(items, QASolver(SolverConfig(model="m"), tools=lambda q: [Calculator()]), backend, bank,
                   EMB, tmp_path / "run", config=cfg, scorer=num_scorer)  # fmt: skip
        (entry,) = bank.get([0])
    (req,) = [r for r in backend.calls if r.call_type == "bank_summarize"]
    text = req.messages[-1].content
    assert req.temperature == 0.3 and req.max_tokens == 8192
    assert "Its data:" in text and items[0].question.context in text  # the whole context
    assert "[thought]" in text and "[calc output]" in text and '"analysis"' in text
    assert entry.findings == ("x" * 400,)


def test_format_instructions_reach_the_tools_variants_and_never_base(tmp_path):
    items = with_gold_inputs(
        change_items(2, "test", gold=lambda i: 200.25), GoldInputs(format_hints="authors")
    )
    backend = ScriptedBackend([Rule("qa_base", base_reply), Rule("qa_solve", change_model)])
    cfg = SolverConfig(model="m", max_steps=3)
    evaluate(
        items,
        backend,
        tmp_path / "ft",
        EvalConfig("ft", cfg),
        tools=lambda q: [Calculator()],
        scorer=num_scorer,
    )
    evaluate(items, backend, tmp_path / "base", EvalConfig("base", cfg), scorer=num_scorer)
    solve = next(r for r in backend.calls if r.call_type == "qa_solve")
    base = next(r for r in backend.calls if r.call_type == "qa_base")
    # the example the released code writes is the gold number itself
    assert (
        "Instructions:\n- Round the answer to 2 decimal places (for example 200.25)."
        in solve.messages[1].content
    )
    assert "Instructions" not in base.messages[1].content and "Round" not in base.messages[1].content
    manifest = json.loads((tmp_path / "ft" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["from_gold"] == {"format_hints:authors": 2}


def test_model_ocr_batches_the_images_and_journals_the_calls(tmp_path):
    imgs = []
    for i in range(3):
        p = tmp_path / f"i{i}.png"
        p.write_bytes(PNG + bytes([i]))  # three different files (identical requests are sent once)
        imgs.append(str(p))
    backend = ScriptedBackend([Rule("qa_ocr", lambda r: "| Revenue | 2019 |\n|---|---|\n| 5 | 6 |")])
    ocr = ModelTranscriber(backend, "vl", tmp_path / "ocr")
    texts = ocr.many(imgs)
    assert len(backend.calls) == 3 and all(r.messages[-1].images for r in backend.calls)
    assert all(t.startswith("| Revenue") for t in texts) and (tmp_path / "ocr" / OCR_JOURNAL).exists()
    again = ModelTranscriber(ScriptedBackend([Rule("qa_ocr", "short")]), "vl", tmp_path / "ocr")
    assert again.many(imgs) == texts  # replayed from the journal, the short reply never asked for
    fresh = ModelTranscriber(ScriptedBackend([Rule("qa_ocr", "short")]), "vl", tmp_path / "other")
    assert fresh(imgs[0]) == "" and fresh.empty == 1  # under 8 characters: no transcription
