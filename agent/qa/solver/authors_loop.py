"""The authors' agent loop (``qa.loop = "authors"``) as a lockstep program: their
``ToolCallAgent`` (``ft/agent/toolcall.py``, ``ft/agent/base.py``) with their variants' prompts
(``ft/variant/finacumen.py`` for Base+FT+FM, ``ft/variant/ft_only.py`` for Base+FT and the
bank's trajectories), every text read from their checkout
(:class:`agent.qa.authors.checkout.AuthorsCode`), the rules in our code:

1. The user message: the image transcriptions (their OCR prefix), the memory block (when one
   was retrieved), the problem block with its instruction block
   (:mod:`agent.qa.authors.messages`); the question's first ``max_images`` images with it (the
   memory entries' images first).
2. Each step appends their policy message as a user message (with one or two steps left, their
   step-limit note is added to it, and stays), then one call: the system prompt, the
   conversation, their tools as native tools (``tool_choice = "auto"``; the tool-call parser of
   the served model reads the calls, :attr:`serving.types.ChatResult.tool_calls`), at most
   ``max_tokens`` tokens. No plan call, no reply schema, no answer gate.
3. Every call of the reply runs in order; each output goes back as a tool message (their
   observation lines, cut to ``observation_chars``). ``terminate`` ends the run: its
   ``final_answer`` (else ``status``, ``answer``, ``result``) is the answer.
4. A reply without a tool call: the second in a row adds their "no tool" reminder; the third
   ends the run, with a ``terminate`` of the number their stuck reading finds in the newest
   reply, if any (:func:`agent.qa.authors.readings.stuck_number`). A reply whose text repeats
   two earlier ones puts their repeat note before the policy message.
5. At the step limit, or when the engine fails a call, the run ends: the answer is the newest
   ``terminate``'s, else their reading of the replies
   (:func:`agent.qa.authors.readings.reply_answer`), else (step limit) the last number of the
   newest tool output.

Tool calls: ``python_execute`` runs in our sandboxed Python tool (its output written as their
tool writes it), ``financial_data_lookup`` is the exact-filter lookup over FinTMMBench's corpus
(:class:`agent.qa.tools.fin_lookup.FinancialDataLookupTool`), ``ocr_extract`` reads the image
transcriptions made before the loop (the served model's, ``qa.ocr = "model"``); another tool of
the plan (our ``retrieve``, ``lookup``, a plugin's) is offered natively under its own name and
description. The recorded answer is the raw string, or, with ``answer_reading = "ours"``,
:func:`agent.qa.solver.final_answer.extract_final_answer` of it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agent.qa.authors import tool_texts as tt
from agent.qa.authors.bank_texts import trajectory_text
from agent.qa.authors.checkout import AuthorsCode
from agent.qa.authors.messages import ocr_prefixed, policy_message, problem_block, system_prompt, with_memory
from agent.qa.authors.readings import NoSuchGroup, final_answer, last_number, stuck_number
from agent.qa.core.items import Question
from agent.qa.core.trajectory import Step, Trajectory
from agent.qa.solver.final_answer import extract_final_answer
from agent.qa.solver.solver_replies import step_from
from agent.qa.tools.base import Tool, ToolResult
from bank.retrieval import RetrievalResult
from serving.lockstep import Program
from serving.registry import MAX_IMAGES
from serving.types import ChatRequest, Message, ToolCall, image_data_url

__all__ = ["authors_program", "OURS_TO_AUTHORS"]

#: our tool names and the authors' tool each stands in for
OURS_TO_AUTHORS = {
    "python": "python_execute",
    "financial_data_lookup": "financial_data_lookup",
    "ocr_extract": "ocr_extract",
}
_NO_TOOL_STOP = 3
_REPEATS = 2
#: their agent's memory keeps the newest 100 messages
_MAX_MESSAGES = 100


def _native(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.args_schema),
        },
    }


class _Run:
    """One question's conversation under the authors' loop."""

    def __init__(self, solver: Any, code: AuthorsCode, question: Question, tools: Sequence[Tool],
                 transcriptions: Sequence[str]) -> None:  # fmt: skip
        self.c, self.code, self.q = solver.config, code, question
        self.transcriptions = tuple(transcriptions)
        self.mine = {t.name: t for t in tools}
        theirs = [OURS_TO_AUTHORS[t.name] for t in tools if t.name in OURS_TO_AUTHORS]
        self.specs = tt.tool_specs(code, [*theirs, tt.TERMINATE]) + tuple(
            _native(t) for t in tools if t.name not in OURS_TO_AUTHORS
        )
        self.by_theirs = {OURS_TO_AUTHORS.get(t.name, t.name): t for t in tools}
        self.limit = self.c.observation_chars

    def execute(self, call: ToolCall) -> tuple[str, bool | None, str | None]:
        """The tool message of ``call``, whether the tool succeeded, and a fallback label."""
        code, name, limit = self.code, call.name, self.limit
        tool = self.by_theirs.get(name)
        if tool is None and name != tt.TERMINATE:
            return tt.unknown_tool(code, name, limit=limit), False, "unknown_tool"
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return tt.bad_arguments(code, name, limit=limit), False, "tool_error"
        if not isinstance(args, Mapping):
            return (
                tt.tool_failed(code, name, "arguments are not a JSON object", limit=limit),
                False,
                "tool_error",
            )
        if name == tt.TERMINATE:
            return tt.observation(code, name, tt.terminate_output(code, dict(args)), limit=limit), True, None
        if name == "ocr_extract":
            images = self.transcriptions if args.get("use_context_image") else ()
            return tt.observation(code, name, tt.ocr_output(code, images), limit=limit), bool(images), None
        if name == "python_execute":
            src = args.get("code")
            src = src if isinstance(src, str) else ""
            out = tool({"code": src}) if src.strip() else ToolResult(False, "")
            text = "" if out.error is None and out.text.startswith("(no output") else out.text
            result = tt.python_output(code, src, text, out.ok)
            return tt.observation(code, name, result, limit=limit), out.ok, None if out.ok else "tool_error"
        try:
            out = tool(args)
        except Exception as exc:  # noqa: BLE001 - a crashing tool is their crash line; the loop goes on
            return tt.tool_failed(code, name, str(exc), limit=limit), False, "tool_crash"
        result = out.text if out.ok else f"Error: {out.text}"
        return tt.observation(code, name, result, limit=limit), out.ok, None if out.ok else "tool_error"


def authors_program(
    solver: Any,
    question: Question,
    tools: Sequence[Tool],
    retrieval: RetrievalResult | None,
    transcriptions: Sequence[str],
    seed: int,
    temp: float,
    variant: str | None,
    t0: float,
) -> Program[Trajectory]:
    """The run of ``question`` under the authors' loop (module docstring)."""
    c, code = solver.config, solver.authors
    assert code is not None
    run = _Run(solver, code, question, tools, transcriptions)
    agent = "finacumen" if variant == "ft_fm" or (variant is None and retrieval is not None) else "ft_only"
    steps: list[Step] = []
    fallbacks: list[str] = []

    def record(step: Step) -> None:
        steps.append(step)
        if step.fallback:
            fallbacks.append(step.fallback)

    own = tuple(image_data_url(p) for p in question.images[: c.max_images]) if c.send_images else ()
    block, memory_images = "", ()
    if solver.memory is not None and retrieval is not None:
        room = min(c.max_images, MAX_IMAGES - len(own)) if c.send_images else 0
        block, ann, memory_images = yield from solver.memory.annotate(
            question, retrieval, model=c.model, image_room=room
        )
        if ann is not None:
            record(ann)
    message = problem_block(
        code, question=question.text, context=question.context, options=question.options,
        instructions=question.instructions,
    )  # fmt: skip
    message = ocr_prefixed(code, transcriptions, with_memory(code, block, message))
    images = (tuple(image_data_url(p) for p in memory_images) if c.send_images else ()) + own
    system = Message("system", system_prompt(code, agent))
    msgs: list[Message] = [Message("user", message, images)]
    policy = policy_message(code, agent)
    budget = c.max_tokens
    assert budget is not None  # SolverConfig requires it with loop = "authors"
    no_tool = 0
    finished = stopped = False
    tool_steps = 0
    k = 0
    for k in range(1, c.max_steps + 1):
        policy += tt.policy_suffix(code, c.max_steps - k)
        msgs.append(Message("user", policy))
        msgs = msgs[-_MAX_MESSAGES:]
        req = ChatRequest(
            model=c.model, messages=(system, *msgs), max_tokens=budget, call_type="qa_solve",
            tools=run.specs, tool_choice="auto",
            **replace(c.sampling, seed=seed, temperature=temp).request_fields(),
        )  # fmt: skip
        (res,) = yield [req]
        cuts = ("reply",) if res.finish_reason == "length" else ()
        if res.finish_reason == "error":  # their run raises here and ends; the answer is read after
            record(
                step_from(
                    res,
                    len(steps),
                    "action",
                    fallback="bad_reply",
                    observation=res.parse_error or "",
                    cuts=cuts,
                )
            )
            stopped = True
            break
        calls = tuple(ToolCall(f"call_{k}_{i}", tc.name, tc.arguments) for i, tc in enumerate(res.tool_calls))
        msgs.append(Message("assistant", res.text, tool_calls=calls))
        fb: str | None = None
        note = ""
        if calls:
            no_tool = 0
        else:
            no_tool += 1
            fb = "no_tool_call"
            if no_tool >= _NO_TOOL_STOP:
                try:
                    found = stuck_number([m.content for m in msgs if m.role == "assistant"])
                except NoSuchGroup as exc:
                    msgs.append(Message("assistant", code.render("loop.snag", e=str(exc))))
                    found, note = None, "their stuck reading failed (a pattern without a group)"
                else:
                    if found is None:
                        record(step_from(res, len(steps), "action", fallback="zero_tool_stop", cuts=cuts))
                        finished = True
                        break
                    stop = ToolCall("forced_term", tt.TERMINATE, json.dumps({"final_answer": str(found)}))
                    msgs.append(Message("assistant", "", tool_calls=(stop,)))
                    calls, fb = (stop,), "zero_tool_stop"
            elif no_tool >= 2:
                msgs.append(Message("user", code.text("loop.no_tool")))
        observations = []
        ok: bool | None = None
        for call in calls:
            obs, ok_, why = run.execute(call)
            if call.name == tt.TERMINATE:
                finished = True
            else:
                tool_steps += 1
            msgs.append(Message("tool", obs, tool_call_id=call.id, name=call.name))
            observations.append(obs)
            ok = ok_ if ok is None else ok and bool(ok_)
            fb = fb or why
        first = calls[0] if calls else None
        try:
            args = json.loads(first.arguments) if first is not None else {}
        except json.JSONDecodeError:
            args = {"arguments": first.arguments if first is not None else ""}
        if len(calls) > 1:
            args = {"calls": [{"name": x.name, "arguments": x.arguments} for x in calls]}
        record(
            step_from(
                res, len(steps), "action", thought=res.text, action=first.name if first else "",
                args=args if isinstance(args, dict) else {"arguments": args},
                observation="\n\n".join(observations) or note, tool_ok=ok, fallback=fb, cuts=cuts,
            )
        )  # fmt: skip
        last = msgs[-1]
        if (
            last.content
            and sum(1 for m in msgs[:-1] if m.role == "assistant" and m.content == last.content) >= _REPEATS
        ):
            said = next((m.content for m in reversed(msgs) if m.role == "assistant" and m.content), "")
            policy = tt.with_stuck_note(code, tt.stuck_note(code, _concluded(said)), policy)
        if finished:
            break
    forced = ""
    if not stopped and k >= c.max_steps:  # their step-limit answer, the last resort
        forced = last_number([m.content for m in msgs if m.role == "tool"])
    answer, terminated = final_answer(msgs, forced)
    if not finished and not stopped:
        fallbacks.append("step_limit")
    if c.answer_reading == "ours":
        answer = extract_final_answer(answer)
    if not answer:
        fallbacks.append("no_answer")
    return Trajectory(
        item_id=question.item_id,
        dataset=question.dataset,
        variant=variant or ("ft_fm" if retrieval is not None else "ft"),
        seed=seed,
        temperature=temp,
        steps=tuple(steps),
        answer=answer,
        gate_ok=None,
        fallbacks=tuple(fallbacks),
        memory_hits=tuple(h.entry_id for h in retrieval.hits) if retrieval is not None else (),
        memory_similarities=tuple(round(h.similarity, 6) for h in retrieval.hits) if retrieval else (),
        memory_block=block,
        tool_steps=tool_steps,
        wall_s=time.perf_counter() - t0,
        transcript=trajectory_text(code, msgs),
        terminated=terminated,
    )


_CONCLUSION = re.compile(r"(?:answer|result|margin|value)\s*(?:is|=|:)\s*[-+]?[\d,.]+", re.IGNORECASE)


def _concluded(text: str) -> bool:
    """Whether a reply states a conclusion (their repeat note then asks for ``terminate``)."""
    return bool(_CONCLUSION.search(text))
