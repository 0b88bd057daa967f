"""The FinAcumen solver as lockstep programs: many questions' loops advance together on one
engine (see :mod:`serving.lockstep`).

One run of :meth:`QASolver.solve`:
1. memory (Base+FT+FM only): the annotator call when retrieval found entries (else nothing);
2. a planning call: the question, its data and image transcriptions (and the memory block, if
   any) in; ``inputs``, ``experience``, ``plan`` out;
3. at most ``max_steps`` action calls, each a schema-constrained JSON object
   ``{"thought", "action", "args"}`` whose action is a tool name or ``final_answer``. A tool's
   output (or its failure) is shown next. A final answer goes through the answer gate
   (:mod:`agent.qa.gate`): a failed check sends its reasons back and the loop continues; after
   ``gate_rejections`` rejections the next answer stands, flagged ``gate_unresolved``;
4. when no steps are left (or ``max_bad_replies`` unusable replies came in a row), one forced
   call whose schema only allows ``final_answer``.

Every problem is recorded in the trajectory and the loop goes on (fallback labels in
:mod:`agent.qa.trajectory`): an unusable reply costs a step and is answered with what was
wrong; a tool that fails or raises is shown as a failed observation; a forced final answer that
is itself unusable leaves the answer empty (``no_answer``). Tools are created per question by a
factory and closed when the program ends. The program is deterministic given the model's
replies, so a journaled rerun reaches the same state.

:meth:`QASolver.solve_base` is the Base variant: one call, no tools, no memory, no gate.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from agent.prompting import load_prompt
from agent.qa.gate import Evidence, check_answer, question_format
from agent.qa.items import Question
from agent.qa.memory import ExperienceMemory
from agent.qa.schemas import (
    ANSWER_PATTERNS,
    FINAL,
    action_schema,
    answer_property,
    char_bound,
    final_schema,
    with_lengths,
)
from agent.qa.solver_config import SolverConfig, solver_config_for
from agent.qa.tools.base import Tool, ToolResult
from agent.qa.trajectory import Step, Trajectory
from bank.retrieval import RetrievalResult
from serving.lockstep import Program
from serving.types import ChatRequest, ChatResult, Message, image_data_url

__all__ = ["SolverConfig", "QASolver", "ToolFactory", "solver_config_for"]

log = logging.getLogger(__name__)

#: Makes the tools of one question (created when its program starts, closed when it ends).
ToolFactory = Callable[[Question], Sequence[Tool]]

_ELIDED = " [... earlier output elided]"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(0, n - 24)] + f" [... {len(text) - n + 24} chars cut]"


class QASolver:
    """Builds the programs of the three variants' runs.

    Args:
        config: solver settings.
        tools: makes one question's tools (None: no tools; Base uses none either way).
        memory: the experience memory (Base+FT+FM), or None.
    """

    def __init__(
        self,
        config: SolverConfig,
        *,
        tools: ToolFactory | None = None,
        memory: ExperienceMemory | None = None,
    ) -> None:
        self.config = config
        self.tools = tools
        self.memory = memory
        self._solve = load_prompt("qa_solve")
        self._step = load_prompt("qa_step")
        self._base = load_prompt("qa_base")
        c = config
        self._plan_schema = with_lengths(
            self._solve.schema,
            {"inputs": c.plan_chars, "experience": c.plan_chars // 2, "plan": c.plan_chars},
        )
        self._base_schema = with_lengths(
            self._base.schema, {"reasoning": c.base_reasoning_chars, "answer": c.answer_chars}
        )

    # ------------------------------------------------------------------ requests
    def _request(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None, temperature: float
    ) -> ChatRequest:
        c = self.config
        return ChatRequest(
            model=c.model,
            messages=tuple(messages),
            max_tokens=c.max_tokens or char_bound(schema) + 16,
            json_schema=schema,
            call_type="qa_solve",
            **replace(c.sampling, seed=seed, temperature=temperature).request_fields(),
        )

    def _data(self, question: Question, transcriptions: Sequence[str]) -> dict[str, Any]:
        c = self.config
        context = question.context if c.context_chars is None else _clip(question.context, c.context_chars)
        return {
            "question": question.text,
            "options": list(question.options),
            "answer_format": question.answer_format,
            "context": context,
            "transcriptions": [_clip(t, c.observation_chars) for t in transcriptions],
        }

    def _pattern(self, question: Question) -> str | None:
        """The final answer's pattern, by the answer kind the question text asks for."""
        return ANSWER_PATTERNS.get(question_format(question).kind) if self.config.answer_patterns else None

    def _images(self, question: Question) -> tuple[str, ...]:
        return tuple(image_data_url(p) for p in question.images) if self.config.send_images else ()

    def _attach(self, images: Sequence[str], messages: Sequence[Message]) -> tuple[tuple[str, ...], str]:
        """The images of a tool output that go with the next message (as ``data:`` URLs), and
        a note saying which did not: only for a model that takes images, and at most
        ``max_images`` in the whole conversation (the serving limit per prompt)."""
        if not images:
            return (), ""
        if not self.config.send_images:
            return (), f"\n({len(images)} image(s) not shown: this model takes no images)"
        room = max(0, self.config.max_images - sum(len(m.images) for m in messages))
        shown = tuple(image_data_url(p) for p in images[:room])
        note = f"\n({len(shown)} image(s) attached in result order"
        if len(shown) < len(images):
            left = len(images) - len(shown)
            note += f"; {left} not shown: at most {self.config.max_images} per conversation"
        return shown, note + ")"

    def _fit(self, messages: list[Message], observed: list[int]) -> list[Message]:
        """Elide the oldest tool outputs until the conversation is under ``max_prompt_chars``."""
        total = sum(len(m.content) for m in messages)
        for i in observed:
            if total <= self.config.max_prompt_chars:
                break
            m = messages[i]
            if m.content.endswith(_ELIDED):
                continue
            short = m.content[:120] + _ELIDED
            total -= len(m.content) - len(short)
            messages[i] = Message(m.role, short, m.images)
        return messages

    # ------------------------------------------------------------------ Base
    def solve_base(self, question: Question, *, seed: int | None = None) -> Program[Trajectory]:
        """Base variant: one call, the model alone (FinAcumen G.2: neither tools nor memory).

        The request holds the question, its options and its text context; no OCR transcription
        (OCR is one of the tools). A model that takes images (``send_images``) gets the
        question's images themselves; a text-only model gets none, so an item whose data is
        only in its images is asked without it (counted by the evaluation)."""
        t0 = time.perf_counter()
        c = self.config
        data = self._data(question, ())
        del data["transcriptions"]
        system, user = self._base.render(**data)
        msgs = [Message("system", system), Message("user", user, self._images(question))]
        schema = dict(self._base_schema, properties=dict(self._base_schema["properties"]))
        schema["properties"]["answer"] = answer_property(c.answer_chars, self._pattern(question))
        (res,) = yield [
            self._request(
                msgs,
                schema,
                seed=c.sampling.seed if seed is None else seed,
                temperature=c.sampling.temperature,
            )
        ]
        ok = not res.is_fallback and isinstance(res.parsed, dict)
        answer = str(res.parsed.get("answer", "")).strip() if ok else ""
        fb = None if answer else "no_answer"
        step = _step_from(res, 0, "base", fallback=fb, thought=res.parsed.get("reasoning", "") if ok else "")
        return Trajectory(
            item_id=question.item_id,
            dataset=question.dataset,
            variant="base",
            seed=seed if seed is not None else c.sampling.seed,
            temperature=c.sampling.temperature,
            steps=(step,),
            answer=answer,
            gate_ok=None,
            fallbacks=(fb,) if fb else (),
            wall_s=time.perf_counter() - t0,
        )

    # ------------------------------------------------------------------ ReAct
    def solve(
        self,
        question: Question,
        *,
        retrieval: RetrievalResult | None = None,
        transcriptions: Sequence[str] = (),
        seed: int | None = None,
        temperature: float | None = None,
        variant: str | None = None,
    ) -> Program[Trajectory]:
        """Base+FT (no ``retrieval``) or Base+FT+FM (``retrieval`` given) run of ``question``."""
        t0 = time.perf_counter()
        c = self.config
        seed = c.sampling.seed if seed is None else seed
        temp = c.sampling.temperature if temperature is None else temperature
        tools = list(self.tools(question)) if self.tools is not None else []
        try:
            return (
                yield from self._loop(question, tools, retrieval, transcriptions, seed, temp, variant, t0)
            )
        finally:
            for tool in tools:
                try:
                    tool.close()
                except Exception as exc:  # noqa: BLE001 - closing must not hide the run's outcome
                    log.warning("closing tool %s failed: %s", getattr(tool, "name", tool), exc)

    def _loop(
        self,
        question: Question,
        tools: list[Tool],
        retrieval: RetrievalResult | None,
        transcriptions: Sequence[str],
        seed: int,
        temp: float,
        variant: str | None,
        t0: float,
    ) -> Program[Trajectory]:
        c = self.config
        by_name = {t.name: t for t in tools}
        steps: list[Step] = []
        fallbacks: list[str] = []

        def record(step: Step) -> None:
            steps.append(step)
            if step.fallback:
                fallbacks.append(step.fallback)

        block = ""
        if self.memory is not None and retrieval is not None:
            block, ann = yield from self.memory.annotate(question, retrieval, model=c.model)
            if ann is not None:
                record(ann)

        tool_info = [{"name": t.name, "description": t.description} for t in tools]
        system, user = self._solve.render(
            tools=tool_info,
            memory_section=f"{block}\n\n" if block else "",
            **self._data(question, transcriptions),
        )
        msgs: list[Message] = [Message("system", system), Message("user", user, self._images(question))]
        observed: list[int] = []
        pattern = self._pattern(question)
        schema = action_schema(
            [(t.name, t.args_schema) for t in tools],
            thought_chars=c.thought_chars,
            answer_chars=c.answer_chars,
            arg_chars=c.arg_chars,
            answer_pattern=pattern,
        )
        final_only = final_schema(c.thought_chars, c.answer_chars, pattern)

        # plan
        (res,) = yield [self._request(msgs, self._plan_schema, seed=seed, temperature=temp)]
        plan_ok = not res.is_fallback and isinstance(res.parsed, dict)
        record(
            _step_from(
                res,
                len(steps),
                "plan",
                fallback=None if plan_ok else "plan_unparsed",
                thought=_plan_text(res.parsed) if plan_ok else "",
            )
        )
        msgs.append(Message("assistant", res.text or "{}"))
        msgs.append(Message("user", self._step.render(kind="act", steps_left=c.max_steps)[1]))

        tool_outputs: list[tuple[str, ToolResult]] = []
        answer, gate_ok, done = "", False, False
        rejections = bad_streak = tool_steps = 0
        forced_reason = "step_limit"
        for k in range(c.max_steps):
            left = c.max_steps - k - 1
            (res,) = yield [self._request(self._fit(msgs, observed), schema, seed=seed, temperature=temp)]
            msgs.append(Message("assistant", _clip(res.text, 4 * c.arg_chars) or "{}"))
            parsed = res.parsed if (not res.is_fallback and isinstance(res.parsed, dict)) else None
            if parsed is None:
                bad_streak += 1
                err = res.parse_error or f"finish_reason={res.finish_reason}"
                record(_step_from(res, len(steps), "action", fallback="bad_reply", observation=err))
                msgs.append(
                    Message("user", self._step.render(kind="bad_reply", error=err, steps_left=left)[1])
                )
                if bad_streak >= c.max_bad_replies:
                    forced_reason = "bad_reply_limit"
                    break
                continue
            bad_streak = 0
            action, args, thought = (
                str(parsed["action"]),
                dict(parsed.get("args", {})),
                str(parsed["thought"]),
            )
            if action == FINAL:
                proposed = str(args.get("answer", "")).strip()
                verdict = check_answer(
                    question, proposed, Evidence.build(question, transcriptions, tool_outputs), c.gate
                )
                if verdict.ok or rejections >= c.gate_rejections:
                    fb = None if verdict.ok else "gate_unresolved"
                    record(
                        _step_from(
                            res,
                            len(steps),
                            "action",
                            fallback=fb,
                            thought=thought,
                            action=action,
                            args=args,
                            gate=verdict.to_dict(),
                        )
                    )
                    answer, gate_ok, done = proposed, verdict.ok, True
                    break
                rejections += 1
                note = self._step.render(
                    kind="gate_rejected", reasons=list(verdict.reasons), steps_left=left
                )[1]
                record(
                    _step_from(
                        res,
                        len(steps),
                        "action",
                        fallback="gate_rejected",
                        thought=thought,
                        action=action,
                        args=args,
                        gate=verdict.to_dict(),
                        observation=note,
                    )
                )
                msgs.append(Message("user", note))
                continue
            tool = by_name.get(action)
            tool_steps += 1
            if tool is None:  # only without schema decoding
                out = ToolResult(False, f"no tool named {action!r}", error="unknown_tool")
                fb = "unknown_tool"
            else:
                try:
                    out = tool(args)
                    if not isinstance(out, ToolResult):
                        raise TypeError(f"tool returned {type(out).__name__}, not ToolResult")
                    fb = None if out.ok else "tool_error"
                except (
                    Exception
                ) as exc:  # a crashing tool is recorded (logged with its traceback); the loop goes on
                    log.debug("tool %s crashed on %s", action, question.item_id, exc_info=True)
                    out = ToolResult(False, f"{type(exc).__name__}: {exc}", error="crash")
                    fb = "tool_crash"
            shown = _clip(out.text, c.observation_chars)
            attached: tuple[str, ...] = ()
            if out.ok:
                tool_outputs.append((action, out))
                attached, said = self._attach(out.images, msgs)
                note = self._step.render(
                    kind="observation", tool=action, output=shown + said, steps_left=left
                )[1]
            else:
                note = self._step.render(
                    kind="tool_failed", tool=action, error=out.error or "error", output=shown, steps_left=left
                )[1]
            record(
                _step_from(
                    res,
                    len(steps),
                    "action",
                    fallback=fb,
                    thought=thought,
                    action=action,
                    args=args,
                    observation=shown,
                    tool_ok=out.ok,
                )
            )
            observed.append(len(msgs))
            msgs.append(Message("user", note, attached))

        if not done:
            fallbacks.append(forced_reason)
            msgs.append(Message("user", self._step.render(kind="final_only", steps_left=0)[1]))
            (res,) = yield [self._request(self._fit(msgs, observed), final_only, seed=seed, temperature=temp)]
            if not res.is_fallback and isinstance(res.parsed, dict):
                answer = str(res.parsed["args"].get("answer", "")).strip()
                verdict = check_answer(
                    question, answer, Evidence.build(question, transcriptions, tool_outputs), c.gate
                )
                gate_ok = verdict.ok
                record(
                    _step_from(
                        res,
                        len(steps),
                        "final_forced",
                        thought=str(res.parsed.get("thought", "")),
                        action=FINAL,
                        args=dict(res.parsed["args"]),
                        gate=verdict.to_dict(),
                        fallback=None if answer else "no_answer",
                    )
                )
            else:
                record(
                    _step_from(
                        res,
                        len(steps),
                        "final_forced",
                        fallback="no_answer",
                        observation=res.parse_error or "",
                    )
                )
        return Trajectory(
            item_id=question.item_id,
            dataset=question.dataset,
            variant=variant or ("ft_fm" if retrieval is not None else "ft"),
            seed=seed,
            temperature=temp,
            steps=tuple(steps),
            answer=answer,
            gate_ok=gate_ok,
            fallbacks=tuple(fallbacks),
            memory_hits=tuple(h.entry_id for h in retrieval.hits) if retrieval is not None else (),
            memory_similarities=tuple(round(h.similarity, 6) for h in retrieval.hits) if retrieval else (),
            memory_block=block,
            tool_steps=tool_steps,
            wall_s=time.perf_counter() - t0,
        )


def _plan_text(plan: Mapping[str, Any]) -> str:
    # fixed field order: a parsed reply replayed from the journal may list its keys differently
    return "\n".join(f"{k}: {plan.get(k, '')}" for k in ("inputs", "experience", "plan"))


def _step_from(res: ChatResult, index: int, kind: str, **fields: Any) -> Step:
    return Step(
        index=index,
        kind=kind,
        reply=res.text,
        prompt_tokens=res.usage.prompt_tokens,
        completion_tokens=res.usage.completion_tokens,
        cached_tokens=res.usage.cached_tokens,
        latency_s=res.latency_s,
        finish_reason=res.finish_reason,
        request_key=res.request_key,
        **fields,
    )
