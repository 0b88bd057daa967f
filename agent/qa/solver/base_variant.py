"""The Base variant's one call (FinAcumen G.2: the model alone, neither tools nor memory).

``base_mode="model_only"`` (the paper's, the default): the question, its options and its text
context in (a model that takes images also gets the question's images; no OCR transcription, as
OCR is one of the tools), no schema, no answer-format hint, free text out within
``base_max_tokens``, the final answer read by :func:`agent.qa.solver.final_answer.extract_final_answer`
(call type ``qa_base``). ``"constrained"``: one JSON reply (reasoning, answer, and a scale for
the benchmarks of ``scale_datasets``) with the question's answer format and pattern.
``"authors"``: the authors' Base (``ft/variant/baseline_raw.py``): their system prompt (the answer
line only) and their problem block (context, options, question; no instruction block), read from
their checkout, the question's first ``max_images`` images, free text within
``base_max_tokens``. ``base_reading`` reads the free reply of ``model_only`` and ``authors``:
``ours`` (the rule above; a reply cut at the budget gives no answer) or ``authors`` (their
reading, :func:`agent.qa.authors.readings.base_answer`, of whatever came back).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from agent.qa.authors.readings import base_answer
from agent.qa.core.items import Question
from agent.qa.core.schemas import answer_property
from agent.qa.core.trajectory import Trajectory
from agent.qa.scoring.tatqa_metric import TATQA_SCALES
from agent.qa.solver.final_answer import extract_final_answer
from agent.qa.solver.solver_config import base_temperature
from agent.qa.solver.solver_replies import step_from
from serving.lockstep import Program
from serving.types import Message

__all__ = ["BaseSolver", "base_program"]


class BaseSolver(Protocol):
    """What the Base call takes from the solver (:class:`agent.qa.solver.react.QASolver`): its config,
    prompts and the request and data helpers every variant shares."""

    config: Any
    authors: Any
    _base_free: Any
    _base: Any
    _base_schema: Any

    def _data(self, question: Question, transcriptions: Any) -> tuple[dict[str, Any], Any]: ...
    def _scaled(self, question: Question) -> bool: ...
    def _images(self, question: Question) -> Any: ...
    def _pattern(self, *args: Any, **kwargs: Any) -> Any: ...
    def _request(self, *args: Any, **kwargs: Any) -> Any: ...


def base_program(solver: BaseSolver, question: Question, *, seed: int | None = None) -> Program[Trajectory]:
    """Base variant: one call, the model alone (FinAcumen G.2: neither tools nor memory).

    The request holds the question, its options and its text context; no OCR transcription
    (OCR is one of the tools). A model that takes images (``send_images``) gets the
    question's images themselves; a text-only model gets none, so an item whose data is
    only in its images is asked without it (counted by the evaluation).

    ``base_mode="model_only"`` (the paper's): no schema, no answer-format hint, free text
    out within ``base_max_tokens``, the final answer read by
    :func:`agent.qa.solver.final_answer.extract_final_answer` (call type ``qa_base``).
    ``"constrained"``: a JSON reply (reasoning, answer, and a scale for the benchmarks of
    ``scale_datasets``) with the question's answer format and pattern."""
    t0 = time.perf_counter()
    c = solver.config
    seed_ = c.sampling.seed if seed is None else seed
    temp = base_temperature(c)
    data, cuts = solver._data(question, ())
    del data["transcriptions"]
    del data["instructions"]  # Base shows no answer instructions (the authors' Base neither)
    scaled = solver._scaled(question)
    if c.base_mode in ("model_only", "authors"):
        del data["answer_format"]
        if c.base_mode == "authors":
            from agent.qa.authors.messages import problem_block
            from serving.types import image_data_url

            code = solver.authors
            user = problem_block(
                code,
                question=question.text,
                context=data["context"],
                options=question.options,
                instructions=None,
            )
            images = (
                tuple(image_data_url(p) for p in question.images[: c.max_images]) if c.send_images else ()
            )
            msgs = [Message("system", code.text("base.system")), Message("user", user, images)]
        else:
            system, user = solver._base_free.render(**data)
            msgs = [Message("system", system), Message("user", user, solver._images(question))]
        req = solver._request(
            msgs, None, seed=seed_, temperature=temp, max_tokens=c.base_max_tokens, call_type="qa_base",
        )  # fmt: skip
        (res,) = yield [req]
        if c.base_reading == "authors":
            answer = base_answer(res.text) if res.finish_reason != "error" else ""
        else:
            ok = res.finish_reason not in ("length", "error")
            answer = extract_final_answer(res.text) if ok else ""
        scale: str | None = None
        thought = res.text
    else:
        system, user = solver._base.render(**data, answer_scale=scaled)
        msgs = [Message("system", system), Message("user", user, solver._images(question))]
        schema = dict(solver._base_schema, properties=dict(solver._base_schema["properties"]))
        schema["properties"]["answer"] = answer_property(c.answer_chars, solver._pattern(question))
        if scaled:
            schema["properties"]["scale"] = {"type": "string", "enum": list(TATQA_SCALES)}
            schema["required"] = [*schema["required"], "scale"]
        (res,) = yield [solver._request(msgs, schema, seed=seed_, temperature=temp, call_type="qa_base")]
        ok = not res.is_fallback and isinstance(res.parsed, dict)
        answer = extract_final_answer(str(res.parsed.get("answer", ""))) if ok else ""
        scale = str(res.parsed.get("scale", "")) if ok and scaled else None
        thought = res.parsed.get("reasoning", "") if ok else ""
        if ok and len(str(res.parsed.get("answer", ""))) >= c.answer_chars:
            cuts.append("answer")
    if res.finish_reason == "length":
        cuts.append("reply")
    fb = None if answer else "no_answer"
    step = step_from(res, 0, "base", fallback=fb, thought=thought, cuts=tuple(cuts))
    return Trajectory(
        item_id=question.item_id,
        dataset=question.dataset,
        variant="base",
        seed=seed_,
        temperature=temp,
        steps=(step,),
        answer=answer,
        gate_ok=None,
        fallbacks=(fb,) if fb else (),
        wall_s=time.perf_counter() - t0,
        answer_scale=scale,
    )
