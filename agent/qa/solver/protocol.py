"""What protocol each variant ran under, in words, for run reports (one line per variant).

The Base variant is the model alone (model-only: free text, the final answer read by
:data:`agent.qa.solver.final_answer.FINAL_ANSWER_RULE`; or the constrained form); the tools variants are
the ReAct loop with their limits (steps, schema, thought and tool-output lengths, gate
rejections). The same :class:`agent.qa.solver.solver_config.SolverConfig` that ran the variant writes its
line, so the report cannot show a protocol the run did not use.
"""

from __future__ import annotations

from agent.qa.solver.final_answer import FINAL_ANSWER_RULE
from agent.qa.solver.solver_config import SolverConfig

__all__ = ["protocol_label", "protocol_line"]


def protocol_label(variant: str, cfg: SolverConfig) -> str:
    """A short label of ``variant``'s protocol (a report column)."""
    if variant == "base":
        return "model-only" if cfg.base_mode == "model_only" else "constrained"
    schema = "schema" if cfg.action_schema else "free JSON"
    return f"ReAct {cfg.max_steps} steps, {schema}"


def protocol_line(variant: str, cfg: SolverConfig) -> str:
    """``variant``'s protocol in one line (a report table)."""
    answer = f"final answer: {FINAL_ANSWER_RULE}"
    if variant == "base":
        if cfg.base_mode == "model_only":
            return (
                "the model alone: question, options and context in (images for a model that takes "
                f"them), free text out within {cfg.base_max_tokens} tokens, no schema and no "
                f"answer-format hint; {answer}"
            )
        return (
            "the model alone, one JSON reply (reasoning, answer) with the question's answer format "
            f"and, for a numeric answer, a pattern; {answer}"
        )
    memory = ", retrieved experience before the plan" if variant == "ft_fm" else ""
    schema = "schema-constrained" if cfg.action_schema else "free replies, the first JSON object read"
    rejections = "bounded by the steps" if cfg.gate_rejections >= cfg.max_steps else f"{cfg.gate_rejections}"
    return (
        f"ReAct: a plan, at most {cfg.max_steps} actions ({schema}), temperature "
        f"{cfg.sampling.temperature:g}{memory}; thought <= {cfg.thought_chars} chars, tool output and "
        f"transcription <= {cfg.observation_chars} chars, gate rejections {rejections}; {answer}"
    )
