"""Differential tests: each function of the authors' code that builds a prompt or reads a reply
runs from the pinned snapshot beside ours on the same items, and the texts must be equal. Ours
reads their words from the snapshot at run time (:mod:`agent.qa.authors`); the rules are ours.
Without the snapshot these tests skip."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from authors_support import snapshot, their_modules

from agent.qa.authors import bank_texts as bt
from agent.qa.authors import messages as am
from agent.qa.authors import readings as rd
from agent.qa.authors.checkout import open_authors_code
from serving.types import Message, ToolCall

GOLDS = [
    "true",
    "No",
    "A",
    "BD",
    "Palo Alto Networks",
    "Alphabet Inc. (GOOG)",
    "42",
    "12.35",
    "-3.5",
    "$1,234.56",
    "HK$ 12",
    "€3",
    "12.5%",
    "4.7 billion",
    "3 millions",
    "25 bps",
    "(0.25)",
    "n/a",
    "The revenue increased from 10.5 to 12.25 over the two quarters shown.",
    "",
    "1,000",
    "0.0",
    "5 basis points",
    "¥100.1",
    "3.1416%",
    "Yes, it rose",
]


@pytest.fixture(scope="module")
def code():
    return open_authors_code(snapshot())


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    with their_modules(tmp_path_factory.mktemp("authors_logs")) as load:
        yield SimpleNamespace(
            retrieve=load("finacumen.fm.retrieve"),
            collect=load("finacumen.fm.collect"),
            cv=load("finacumen.fm.cross_verify"),
            pruning=load("finacumen.fm.pruning_rules"),
            judge=load("finacumen.ft.eval.fintmm_eval"),
            base=load("finacumen.ft.variant.baseline_raw"),
            fin=load("finacumen.ft.variant.finacumen"),
            ft=load("finacumen.ft.variant.ft_only"),
            agent_base=load("finacumen.ft.agent.base"),
            toolcall=load("finacumen.ft.agent.toolcall"),
            lookup=load("finacumen.ft.tool.financial_data_lookup"),
        )


def test_format_instructions_equal_build_instruction(code, theirs) -> None:
    for gold in GOLDS:
        mine = [code.text("hint.terminate"), *am.instruction_lines(code, gold)]
        assert mine == theirs.retrieve.build_instruction(gold), gold
    # without the example number: their rounding line up to its example, the rest unchanged
    plain = am.instruction_lines(code, "12.35", example=False)
    with_example = am.instruction_lines(code, "12.35")
    assert "12.35" not in "".join(plain) and "12.35" in with_example[0]
    assert with_example[0].startswith(plain[0].rstrip(".")) and plain[1:] == with_example[1:]


TARGETS = [
    {
        "question": "What is 2 < 3 & 4 > 1?",
        "context": "Rev <b>10</b> & costs",
        "options": "A. x\nB. y",
        "gold_answer": "B",
    },
    {"question": "Margin in 2022?", "context": "", "options": None, "gold_answer": "12.35"},
    {"question": "Who?", "context": "Table: A | B", "options": "", "gold_answer": "Ansys"},
]


def _mine(code, t, *, base=False):
    opts = tuple(t["options"].split("\n")) if t.get("options") else ()
    hints = None if base else am.instruction_lines(code, t["gold_answer"])
    return am.problem_block(
        code, question=t["question"], context=t["context"] or "", options=opts, instructions=hints
    )


def test_user_messages_equal_render_user_message_and_the_base_message(code, theirs) -> None:
    for t in TARGETS:
        assert _mine(code, t) == theirs.retrieve.render_user_message(t)
        assert _mine(code, t, base=True) == theirs.retrieve.render_baseline_message(
            t, include_instruction=False
        )
    assert code.text("base.system") == theirs.base.SYSTEM_PROMPT


def test_system_prompts_and_policies_equal_theirs(code, theirs) -> None:
    assert am.system_prompt(code, "finacumen") == theirs.fin.build_system_prompt("B4")
    assert am.system_prompt(code, "ft_only") == theirs.ft.FT_SYSTEM_PROMPT
    assert am.policy_message(code, "finacumen") == theirs.fin.FINACUMEN_NEXT_STEP_PROMPT
    assert am.policy_message(code, "ft_only") == theirs.ft.FT_NEXT_STEP_PROMPT


ENTRIES = [
    {"question": "Q one <x>", "answer": "1.5", "findings": ["To a, do b."], "cautions": ["When c, d & e."]},
    {"question": "Q two", "answer": "", "findings": [], "cautions": ["Only a caution"]},
    {"question": "Q three", "answer": "C", "findings": ["f1", "f2"], "cautions": []},
]


def test_the_memory_block_and_its_injection_equal_theirs(code, theirs) -> None:
    exps = [
        {
            "question": e["question"],
            "gold_answer": e["answer"],
            "experience": {"findings": e["findings"], "cautions": e["cautions"]},
        }
        for e in ENTRIES
    ]
    refs = {0: [1, 2], 2: [3]}
    for t in TARGETS:
        want = theirs.retrieve.inject_memory_into_message(
            exps, t, memory_image_indices=refs, strategy="E", config="B4"
        )
        got = am.with_memory(code, am.memory_block(code, ENTRIES, refs), _mine(code, t))
        assert got == want
    assert am.memory_block(code, []) == theirs.retrieve.render_memory_block([]) == ""


def test_an_entrys_question_equals_what_their_collector_stores(code, theirs, monkeypatch) -> None:
    stored = []

    async def verified(target):
        return {"experience": {"findings": ["To x, do y."], "cautions": []}, "analysis": ""}

    monkeypatch.setattr(theirs.collect, "collect_verified", verified)
    monkeypatch.setattr(theirs.collect, "get_emb_manager", lambda: SimpleNamespace(resolve=lambda _id: [1.0]))
    monkeypatch.setattr(theirs.collect, "load_meta", lambda _p: [])
    monkeypatch.setattr(theirs.collect, "append_entry", lambda _p, e: stored.append(e))
    for ctx, images in (("Some context & table", ["a.png"]), ("", []), ("ctx", [])):
        target = {"id": "t1", "question": "What?", "context": ctx, "image_paths": images, "gold_answer": "3"}
        asyncio.run(
            theirs.collect.collect(target, SimpleNamespace(source_variant="x"), "3", True, snapshot())
        )
        assert stored[-1]["question"] == am.entry_question(code, "What?", ctx, bool(images))


def _agent(messages):
    return SimpleNamespace(memory=SimpleNamespace(messages=messages))


def _theirs_msg(m: Message):
    calls = [
        SimpleNamespace(id=c.id, function=SimpleNamespace(name=c.name, arguments=c.arguments))
        for c in m.tool_calls
    ]
    return SimpleNamespace(role=m.role, content=m.content, tool_calls=calls or None, name=m.name or None)


CONVERSATIONS = [
    [
        Message("user", "q"),
        Message(
            "assistant",
            "<Think>plan it</Think>\ncalling",
            tool_calls=(ToolCall("1", "python_execute", '{"code": "print(2)"}'),),
        ),
        Message(
            "tool",
            "Observed output of cmd `python_execute` executed:\n2",
            tool_call_id="1",
            name="python_execute",
        ),
        Message("assistant", "", tool_calls=(ToolCall("2", "terminate", '{"final_answer": " 2.0 "}'),)),
    ],
    [
        Message("assistant", "thinking\n**Final Answer:** 7 USD\nmore"),
        Message("tool", "x 12 y 13.5", name=""),
    ],
    [Message("assistant", "line one\n<Answer>\nanswer = 42\n</Answer>")],
    [Message("assistant", "a" * 250), Message("assistant", "short last line\n" + "b" * 201)],
    [Message("assistant", "", tool_calls=(ToolCall("3", "terminate", '{"status": "success"}'),))],
    [
        Message("assistant", "", tool_calls=(ToolCall("4", "terminate", "not json"),)),
        Message("assistant", "ok"),
    ],
]


def test_their_readings_equal_ours(code, theirs) -> None:
    for conv in CONVERSATIONS:
        agent = _agent([_theirs_msg(m) for m in conv])
        agent._forced_answer = "99"
        assert (
            rd.final_answer(conv, "99")[0]
            == theirs.fin._extract_final_answer(agent)
            == theirs.ft._extract_final_answer(agent)
        )
        assert rd.last_number(
            [m.content for m in conv if m.role == "tool"]
        ) == theirs.agent_base._extract_last_computed_value(agent)
        assert bt.trajectory_text(code, conv) == theirs.cv._build_trajectory_text(agent)
    for text in (
        "**Final Answer:** 12.5.",
        "**final answer:** x\ny",
        "a\n\nlast one  ",
        "x" * 201,
        "",
        "one line",
    ):
        assert rd.base_answer(text) == theirs.base._extract_answer(text)


STUCK = [
    "the answer is 12.5",
    "result = -3",
    "Value: 1,234",
    "I will terminate with 42",
    "nothing 7 and 8.25",
    "final_answer 12",
    "no numbers here",
    "margin is x then 5",
]


def test_the_stuck_reading_equals_theirs_including_its_error(theirs) -> None:
    cls = theirs.toolcall.ToolCallAgent
    for text in STUCK:
        agent = _agent(
            [
                SimpleNamespace(role="assistant", content="older 3"),
                SimpleNamespace(role="assistant", content=text),
            ]
        )
        try:
            want = cls._try_extract_answer_from_stuck(agent)
        except IndexError:
            with pytest.raises(rd.NoSuchGroup):
                rd.stuck_number(["older 3", text])
            continue
        assert rd.stuck_number(["older 3", text]) == want, text


PAIRS = [
    ("12.5", "12.5"),
    ("12.6", "12.5"),
    ("12.55", "12.5"),
    ("$1,000", "1000"),
    ("5%", "0.05"),
    ("5", "5%"),
    ("0", "0"),
    ("0.0000000001", "0"),
    ("4.7 billion", "4,700,000,000"),
    ("(3)", "3"),
    ("Ansys", "ansys"),
    ("", "1"),
    ("abc", "abd"),
    ("12.5%", "12.4%"),
    ("hk$ 12", "12"),
    ("3 thousands", "3000"),
]


def test_the_bank_grading_texts_and_readings_equal_theirs(code, theirs) -> None:
    for p, g in PAIRS:
        assert rd.close_enough(p, g) == theirs.cv._check_correct(p, g), (p, g)
    t = {"context": "C & <d>", "options": "A. x\nB. y", "question": "Q?"}
    problem = bt.problem_text(code, "Q?", "C & <d>", ("A. x", "B. y"))
    assert problem == theirs.cv._build_problem_text(t)
    paths = [
        {"trajectory": "T1", "score": 1.0, "reason": "correct"},
        {"trajectory": "T2", "score": 0.4, "reason": "r"},
        {"trajectory": "T3"},
    ]
    attempts = bt.attempts_text(code, [("T1", 1.0, "correct"), ("T2", 0.4, "r"), ("T3", None, "")])
    assert attempts == theirs.cv._format_attempts(paths)
    assert bt.grading_request_text(code, problem, "12", attempts) == theirs.cv.SCORE_PATHS_PROMPT.format(
        problem_text=problem, gold_answer="12", attempts_text=attempts
    )
    for reply, n in (
        ('<Answer>[{"score": 0.5, "reason": "a"},]</Answer>', 1),
        ('```json\n[{"score": 1, "reason": "b"}]\n```', 1),
        ("[]", 1),
        ("nonsense", 2),
        ('[{"score": 0.1, "reason": "x"}, {"score": 0.2, "reason": "y"}]', 2),
    ):
        got = theirs.cv._parse_json_array(reply)
        want = [(float(s["score"]), str(s["reason"])) for s in got] if got and len(got) == n else None
        assert bt.read_scores(reply, n) == want
    for text in (
        "data not available, retry",
        "Retry the lookup before concluding it is unavailable",
        "When data is missing, state unknown",
        "To compute x, use y.",
    ):
        assert bt.gives_up(code, text) == theirs.pruning.is_anti_give_up(text)
    body = '{"analysis": "z", "findings": ["To a, b.", "To a, b.", " "], "cautions": ["data not available"]}'
    reply = f"<Think>a</Think><Answer>{body}</Answer>"
    parsed = theirs.cv._parse_json_answer(reply)
    assert bt.read_summary(code, reply) == (
        tuple(dict.fromkeys(f.strip() for f in parsed["findings"] if f.strip())),
        (),
    )


def test_the_judge_prompt_and_verdict_equal_theirs(code, theirs) -> None:
    sent = []

    class _Client:
        class chat:  # noqa: N801 - the OpenAI client's shape
            class completions:  # noqa: N801
                @staticmethod
                async def create(**kw):
                    sent.append(kw)
                    return SimpleNamespace(
                        choices=[SimpleNamespace(message=SimpleNamespace(content=" yes."))]
                    )

    verdict = asyncio.run(theirs.judge.llm_judge("Q {x}?", "42 USD", "42", _Client()))
    assert sent[0]["messages"] == [{"role": "user", "content": bt.judge_text(code, "Q {x}?", "42 USD", "42")}]
    assert (sent[0]["max_tokens"], sent[0]["temperature"]) == (5, 0)
    assert verdict is bt.judged_yes(" yes.") is True and bt.judged_yes("NO") is False
