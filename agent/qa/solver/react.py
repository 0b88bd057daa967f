"""The FinAcumen solver as lockstep programs: many questions' loops advance together on one
engine (see :mod:`serving.lockstep`).

One run of :meth:`QASolver.solve`:
1. memory (Base+FT+FM only): the annotator call when retrieval found entries (else nothing);
2. a planning call: the question, its data and image transcriptions (and the memory block, if
   any) in; ``inputs``, ``experience``, ``plan`` out;
3. at most ``max_steps`` action calls, each a JSON object ``{"thought", "action", "args"}``
   (schema-constrained with ``action_schema``; otherwise the first JSON object of a free reply,
   checked against the same schema) whose action is a tool name or ``final_answer``. A tool's
   output (or its failure) is shown next. A final answer (its ``answer`` read by
   :func:`agent.qa.solver.final_answer.extract_final_answer`; with a ``scale`` beside it for the
   benchmarks of ``scale_datasets``) goes through the answer gate (:mod:`agent.qa.solver.gate`): a
   failed check sends its reasons back and the loop continues; after ``gate_rejections``
   rejections the next answer stands, flagged ``gate_unresolved``;
4. when no steps are left (or ``max_bad_replies`` unusable replies came in a row), one forced
   call whose schema only allows ``final_answer``.

Every problem is recorded in the trajectory and the loop goes on (fallback labels in
:mod:`agent.qa.core.trajectory`): an unusable reply costs a step and is answered with what was
wrong; a tool that fails or raises is shown as a failed observation; a forced final answer that
is itself unusable leaves the answer empty (``no_answer``). Tools are created per question by a
factory and closed when the program ends. The program is deterministic given the model's
replies, so a journaled rerun reaches the same state.

:meth:`QASolver.solve_base` is the Base variant: one call, no tools, no memory, no gate; by
default the paper's model-only Base (free text, the final answer read by the same rule),
``base_mode="constrained"`` the schema-constrained one.

Every limit that cuts something (context, transcription, tool output, elision, thought, answer,
reply) is recorded on the step as a :data:`agent.qa.core.trajectory.CUTS` label, so a run reports
its cuts per call type.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from agent.prompting import load_prompt
from agent.qa.authors.checkout import AuthorsCode
from agent.qa.core.items import Question
from agent.qa.core.schemas import (
    ANSWER_PATTERNS,
    FINAL,
    action_schema,
    char_bound,
    final_schema,
    with_lengths,
)
from agent.qa.core.trajectory import Step, Trajectory
from agent.qa.memory.memory import ExperienceMemory
from agent.qa.scoring.tatqa_metric import TATQA_SCALES
from agent.qa.solver.final_answer import extract_final_answer
from agent.qa.solver.gate import Evidence, check_answer, question_format
from agent.qa.solver.solver_config import SolverConfig, solver_config_for
from agent.qa.solver.solver_replies import clip, plan_text, reply_json, step_from, with_scale
from agent.qa.tools.base import Tool, ToolResult
from bank.retrieval import RetrievalResult
from localfin.errors import ConfigError
from serving.lockstep import Program
from serving.types import ChatRequest, ChatResult, Message, image_data_url

__all__ = ["SolverConfig", "QASolver", "ToolFactory", "solver_config_for"]

log = logging.getLogger(__name__)

#: Makes the tools of one question (created when its program starts, closed when it ends).
ToolFactory = Callable[[Question], Sequence[Tool]]

_ELIDED = " [... earlier output elided]"


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
        authors: AuthorsCode | None = None,
    ) -> None:
        self.config = config
        self.tools = tools
        self.memory = memory
        self.authors = authors
        needs = [k for k, v in (("loop", config.loop), ("base_mode", config.base_mode)) if v == "authors"]
        if needs and authors is None:
            raise ConfigError(
                f"solver {', '.join(needs)} = 'authors' sends the authors' prompt texts; give their checkout "
                "(qa.authors_code)"
            )
        self._solve = load_prompt("qa_solve")
        self._step = load_prompt("qa_step")
        self._base = load_prompt("qa_base")
        self._base_free = load_prompt("qa_base_free")
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
        self,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None,
        *,
        seed: int | None,
        temperature: float,
        constrained: bool = True,
        max_tokens: int | None = None,
        call_type: str = "qa_solve",
    ) -> ChatRequest:
        """A request of this solver: ``schema`` sent when ``constrained``; the budget is
        ``max_tokens``, else the config's, else the schema's worst case."""
        c = self.config
        budget = max_tokens or c.max_tokens or (char_bound(schema) + 16 if schema is not None else None)
        if budget is None:
            raise ValueError("a request without a schema needs an explicit max_tokens")
        return ChatRequest(
            model=c.model,
            messages=tuple(messages),
            max_tokens=budget,
            json_schema=schema if constrained else None,
            call_type=call_type,
            **replace(c.sampling, seed=seed, temperature=temperature).request_fields(),
        )

    def _scaled(self, question: Question) -> bool:
        """Whether this question's final answer carries a separate scale field."""
        return question.dataset in self.config.scale_datasets

    def _data(self, question: Question, transcriptions: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        """The prompt's data fields and the cuts made to them."""
        c = self.config
        cuts: list[str] = []
        context = question.context
        if c.context_chars is not None and len(context) > c.context_chars:
            context = clip(context, c.context_chars)
            cuts.append("context")
        shown = []
        for t in transcriptions:
            if len(t) > c.observation_chars:
                cuts.append("transcription")
            shown.append(clip(t, c.observation_chars))
        data = {
            "question": question.text,
            "options": list(question.options),
            "answer_format": question.answer_format,
            "instructions": list(question.instructions),
            "context": context,
            "transcriptions": shown,
        }
        return data, cuts

    def _pattern(self, question: Question) -> str | None:
        """The final answer's pattern, by the answer kind the question text asks for."""
        return ANSWER_PATTERNS.get(question_format(question).kind) if self.config.answer_patterns else None

    def _images(self, question: Question) -> tuple[str, ...]:
        return tuple(image_data_url(p) for p in question.images) if self.config.send_images else ()

    def _memory_images(self, paths: Sequence[str]) -> tuple[str, ...]:
        """The memory entries' images (the ``entries`` block), put ahead of the question's own
        (as the authors' code orders them), for a model that takes images."""
        return tuple(image_data_url(p) for p in paths) if self.config.send_images else ()

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

    def _fit(self, messages: list[Message], observed: list[int]) -> tuple[list[Message], int]:
        """Elide the oldest tool outputs until the conversation is under ``max_prompt_chars``;
        returns the messages and how many outputs were newly elided."""
        total = sum(len(m.content) for m in messages)
        elided = 0
        for i in observed:
            if total <= self.config.max_prompt_chars:
                break
            m = messages[i]
            if m.content.endswith(_ELIDED):
                continue
            short = m.content[:120] + _ELIDED
            total -= len(m.content) - len(short)
            messages[i] = Message(m.role, short, m.images)
            elided += 1
        return messages, elided

    # ------------------------------------------------------------------ Base
    def solve_base(self, question: Question, *, seed: int | None = None) -> Program[Trajectory]:
        """Base variant: one call, the model alone (FinAcumen G.2: neither tools nor memory);
        :func:`agent.qa.solver.base_variant.base_program` (model-only by default, or constrained)."""
        from agent.qa.solver.base_variant import base_program

        return base_program(self, question, seed=seed)

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
            if c.loop == "authors":
                from agent.qa.solver.authors_loop import authors_program

                return (
                    yield from authors_program(
                        self, question, tools, retrieval, transcriptions, seed, temp, variant, t0
                    )
                )
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

        block, memory_images = "", ()
        own_images = self._images(question)
        if self.memory is not None and retrieval is not None:
            room = max(0, c.max_images - len(own_images)) if c.send_images else 0
            block, ann, memory_images = yield from self.memory.annotate(
                question, retrieval, model=c.model, image_room=room
            )
            if ann is not None:
                record(ann)

        scaled = self._scaled(question)
        data, cuts = self._data(question, transcriptions)
        tool_info = [{"name": t.name, "description": t.description} for t in tools]
        system, user = self._solve.render(
            tools=tool_info,
            memory_section=f"{block}\n\n" if block else "",
            answer_scale=scaled,
            **data,
        )
        shown = self._memory_images(memory_images) + own_images
        msgs: list[Message] = [Message("system", system), Message("user", user, shown)]
        observed: list[int] = []
        pattern = self._pattern(question)
        schema = action_schema(
            [(t.name, t.args_schema) for t in tools],
            thought_chars=c.thought_chars,
            answer_chars=c.answer_chars,
            arg_chars=c.arg_chars,
            answer_pattern=pattern,
            answer_scale=scaled,
        )
        final_only = final_schema(c.thought_chars, c.answer_chars, pattern, answer_scale=scaled)
        on = c.action_schema

        def ask(schema_: Mapping[str, Any]) -> tuple[ChatRequest, list[str]]:
            fitted, elided = self._fit(msgs, observed)
            req = self._request(fitted, schema_, seed=seed, temperature=temp, constrained=on)
            return req, ["elided"] * elided

        def echo(res: ChatResult, into: list[str]) -> None:
            """The reply as the conversation repeats it (a long one shortened, and counted)."""
            if len(res.text) > 4 * c.arg_chars:
                into.append("history")
            msgs.append(Message("assistant", clip(res.text, 4 * c.arg_chars) or "{}"))

        # plan
        (res,) = yield [self._request(msgs, self._plan_schema, seed=seed, temperature=temp, constrained=on)]
        plan, _ = reply_json(res, self._plan_schema, on)
        if res.finish_reason == "length":
            cuts.append("reply")
        echo(res, cuts)
        record(
            step_from(
                res,
                len(steps),
                "plan",
                fallback=None if plan is not None else "plan_unparsed",
                thought=plan_text(plan) if plan is not None else "",
                cuts=tuple(cuts),
            )
        )
        msgs.append(Message("user", self._step.render(kind="act", steps_left=c.max_steps)[1]))

        tool_outputs: list[tuple[str, ToolResult]] = []
        answer, scale, gate_ok, done = "", None, False, False
        rejections = bad_streak = tool_steps = 0
        forced_reason = "step_limit"
        for k in range(c.max_steps):
            left = c.max_steps - k - 1
            req, cut = ask(schema)
            (res,) = yield [req]
            if res.finish_reason == "length":
                cut.append("reply")
            echo(res, cut)
            parsed, err = reply_json(res, schema, on)
            if parsed is None:
                bad_streak += 1
                assert err is not None
                record(
                    step_from(
                        res, len(steps), "action", fallback="bad_reply", observation=err, cuts=tuple(cut)
                    )
                )
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
            if len(thought) >= c.thought_chars:
                cut.append("thought")
                thought = thought[: c.thought_chars]
            if action == FINAL:
                proposed, said_scale = self._final(args, scaled, cut)
                verdict = check_answer(
                    question,
                    with_scale(proposed, said_scale),
                    Evidence.build(question, transcriptions, tool_outputs),
                    c.gate,
                )
                if verdict.ok or rejections >= c.gate_rejections:
                    fb = None if verdict.ok else "gate_unresolved"
                    record(
                        step_from(
                            res,
                            len(steps),
                            "action",
                            fallback=fb,
                            thought=thought,
                            action=action,
                            args=args,
                            gate=verdict.to_dict(),
                            cuts=tuple(cut),
                        )
                    )
                    answer, scale, gate_ok, done = proposed, said_scale, verdict.ok, True
                    break
                rejections += 1
                note = self._step.render(
                    kind="gate_rejected", reasons=list(verdict.reasons), steps_left=left
                )[1]
                record(
                    step_from(
                        res,
                        len(steps),
                        "action",
                        fallback="gate_rejected",
                        thought=thought,
                        action=action,
                        args=args,
                        gate=verdict.to_dict(),
                        observation=note,
                        cuts=tuple(cut),
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
            if len(out.text) > c.observation_chars:
                cut.append("tool_output")
            shown = clip(out.text, c.observation_chars)
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
                step_from(
                    res,
                    len(steps),
                    "action",
                    fallback=fb,
                    thought=thought,
                    action=action,
                    args=args,
                    observation=shown,
                    tool_ok=out.ok,
                    cuts=tuple(cut),
                )
            )
            observed.append(len(msgs))
            msgs.append(Message("user", note, attached))

        if not done:
            fallbacks.append(forced_reason)
            msgs.append(Message("user", self._step.render(kind="final_only", steps_left=0)[1]))
            req, cut = ask(final_only)
            (res,) = yield [req]
            if res.finish_reason == "length":
                cut.append("reply")
            parsed, err = reply_json(res, final_only, on)
            if parsed is not None:
                args = dict(parsed["args"])
                answer, scale = self._final(args, scaled, cut)
                verdict = check_answer(
                    question,
                    with_scale(answer, scale),
                    Evidence.build(question, transcriptions, tool_outputs),
                    c.gate,
                )
                gate_ok = verdict.ok
                record(
                    step_from(
                        res,
                        len(steps),
                        "final_forced",
                        thought=str(parsed.get("thought", ""))[: c.thought_chars],
                        action=FINAL,
                        args=args,
                        gate=verdict.to_dict(),
                        fallback=None if answer else "no_answer",
                        cuts=tuple(cut),
                    )
                )
            else:
                record(
                    step_from(
                        res,
                        len(steps),
                        "final_forced",
                        fallback="no_answer",
                        observation=err or "",
                        cuts=tuple(cut),
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
            answer_scale=scale if scaled else None,
            terminated=done,
        )

    def _final(self, args: Mapping[str, Any], scaled: bool, cuts: list[str]) -> tuple[str, str | None]:
        """The answer of a ``final_answer`` action (the extraction rule applied to its field)
        and its scale field (None for a benchmark without one)."""
        raw = str(args.get("answer", ""))
        if len(raw) >= self.config.answer_chars:
            cuts.append("answer")
        answer = extract_final_answer(raw) if self.config.answer_reading == "ours" else raw.strip()
        if not scaled:
            return answer, None
        scale = str(args.get("scale", ""))
        return answer, scale if scale in TATQA_SCALES else ""
