"""What protocol each variant ran under, in words, for run reports (one line per variant).

The Base variant is the model alone (model-only: free text, the final answer read by
:data:`agent.qa.solver.final_answer.FINAL_ANSWER_RULE`; or the constrained form); the tools variants are
the ReAct loop with their limits (steps, schema, thought and tool-output lengths, gate
rejections). The same :class:`agent.qa.solver.solver_config.SolverConfig` that ran the variant writes its
line, so the report cannot show a protocol the run did not use.
"""

from __future__ import annotations

from agent.qa.solver.final_answer import FINAL_ANSWER_RULE
from agent.qa.solver.solver_config import SolverConfig, base_temperature

#: the authors' Base reading in words (:func:`agent.qa.authors.readings.base_answer`)
AUTHORS_BASE_RULE = "the first bold 'Final Answer:' line, else a last line of at most 200 characters"

__all__ = ["protocol_label", "protocol_line"]


def protocol_label(variant: str, cfg: SolverConfig) -> str:
    """A short label of ``variant``'s protocol (a report column)."""
    if variant == "base":
        return {"model_only": "model-only", "authors": "authors' Base"}.get(cfg.base_mode, "constrained")
    if cfg.loop == "authors":
        return f"authors' loop {cfg.max_steps} steps, native tool calls"
    schema = "schema" if cfg.action_schema else "free JSON"
    return f"ReAct {cfg.max_steps} steps, {schema}"


def protocol_line(variant: str, cfg: SolverConfig) -> str:
    """``variant``'s protocol in one line (a report table)."""
    answer = f"final answer: {FINAL_ANSWER_RULE}"
    base_said = answer if cfg.base_reading == "ours" else f"final answer: {AUTHORS_BASE_RULE}"
    if variant == "base":
        if cfg.base_mode == "authors":
            return (
                "the model alone with the authors' Base prompt (their system prompt asking for the answer "
                f"line only, their problem block) within {cfg.base_max_tokens} tokens at temperature "
                f"{base_temperature(cfg):g}, at most {cfg.max_images} images; {base_said}"
            )
        if cfg.base_mode == "model_only":
            return (
                "the model alone: question, options and context in (images for a model that takes "
                f"them), free text out within {cfg.base_max_tokens} tokens, no schema and no "
                f"answer-format hint; {base_said}"
            )
        return (
            "the model alone, one JSON reply (reasoning, answer) with the question's answer format "
            f"and, for a numeric answer, a pattern; {answer}"
        )
    if cfg.loop == "authors":
        agent = "FinAcumen" if variant == "ft_fm" else "FT-only"
        reading = "the terminate string as it is" if cfg.answer_reading == "authors" else FINAL_ANSWER_RULE
        return (
            f"the authors' agent loop ({agent} prompts read from their code): at most {cfg.max_steps} steps "
            f"of native tool calls within {cfg.max_tokens} tokens each at temperature "
            f"{cfg.sampling.temperature:g}, their policy message every step, tool output <= "
            f"{cfg.observation_chars} chars, terminate ends the run (step limit: the last number of the "
            f"last tool output); final answer: {reading}"
        )
    memory = ", retrieved experience before the plan" if variant == "ft_fm" else ""
    schema = "schema-constrained" if cfg.action_schema else "free replies, the first JSON object read"
    rejections = "bounded by the steps" if cfg.gate_rejections >= cfg.max_steps else f"{cfg.gate_rejections}"
    return (
        f"ReAct: a plan, at most {cfg.max_steps} actions ({schema}), temperature "
        f"{cfg.sampling.temperature:g}{memory}; thought <= {cfg.thought_chars} chars, tool output and "
        f"transcription <= {cfg.observation_chars} chars, gate rejections {rejections}; {answer}"
    )
