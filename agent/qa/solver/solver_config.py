"""Settings of the FinAcumen solver, and the per-model defaults (paper scale on a GPU, short
bounds for the CPU model)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from agent.qa.solver.gate import GateConfig
from localfin.errors import ConfigError
from serving.open import ModelFacts
from serving.registry import MAX_IMAGES
from serving.types import Sampling

__all__ = ["BASE_MODES", "LOOPS", "READINGS", "SolverConfig", "base_temperature", "solver_config_for"]

#: ``model_only``: the paper's Base (G.2): question, options and context in, free text out, the
#: final answer read by the Base reading (``base_reading``); ``constrained``: one
#: schema-constrained JSON reply (reasoning, answer) with the question's answer format and, for
#: numeric answers, a pattern on the answer; ``authors``: the authors' Base
#: (``ft/variant/baseline_raw.py``): their system prompt asking for the answer line only and their
#: problem block, read from their checkout (:mod:`agent.qa.solver.base_variant`).
BASE_MODES = ("model_only", "constrained", "authors")
#: ``ours``: the ReAct loop of :mod:`agent.qa.solver.react` (a plan, schema-checked JSON actions,
#: the answer gate); ``authors``: the authors' agent loop with native tool calls
#: (:mod:`agent.qa.solver.authors_loop`)
LOOPS = ("ours", "authors")
#: how a final answer is read: ``ours`` (:func:`agent.qa.solver.final_answer.extract_final_answer`)
#: or ``authors`` (the tools variants: the ``terminate`` string as it is; Base: the first bold
#: final-answer line, else a last line of at most 200 characters,
#: :mod:`agent.qa.authors.readings`)
READINGS = ("ours", "authors")


@dataclass(frozen=True)
class SolverConfig:
    """Solver settings (lengths in characters, budgets in tokens).

    Attributes:
        model: registry key of the model.
        max_steps: most action calls after the plan (16 in the paper).
        sampling: of every call (greedy, seed 0 at test; the bank builder raises the
            temperature and varies the seed per trajectory); its thinking switch unset: the
            model's default; its repetition penalty unset: the registry's (1.15 for the CPU model).
        max_tokens: completion budget of every call; None derives it from the reply schema's
            worst case (right for non-thinking models; thinking models need a large budget).
        thought_chars: longest ``thought`` of one ReAct action (characters; the schema's
            ``maxLength``, or the cut of an unconstrained reply's thought; the paper states none).
        plan_chars / answer_chars / base_reasoning_chars: reply field bounds (plan fields,
            the final answer, the constrained Base's reasoning).
        arg_chars: bound put on tool arguments whose schema leaves strings unbounded.
        observation_chars: most characters of one tool output (and of one image transcription)
            shown to the model; longer ones are cut and the cut is counted.
        context_chars: most context characters put in the prompt (None: all).
        max_prompt_chars: when the conversation grows past this, the oldest tool outputs are
            elided (keeps prompts inside the model's context window).
        gate_rejections: failed answer checks sent back before a proposed answer stands anyway
            (flagged ``gate_unresolved``); ``max_steps`` or more: no cap but the step budget.
        max_bad_replies: unusable replies in a row before the forced final call.
        action_schema: constrain every plan and action reply by its JSON schema (on: a reply
            can only name a tool that exists, with arguments of the right shape); off: the
            replies are free text and the first JSON object in each is read and checked against
            the same schema (an unusable one costs a step).
        base_mode: the Base variant's protocol, one of :data:`BASE_MODES`.
        base_max_tokens: completion budget of the model-only Base reply (tokens; its free text
            has no schema to bound it).
        base_temperature: sampling temperature of the Base call (None: the sampling's).
        scale_datasets: benchmarks whose final answer carries a separate scale field, as
            their release format scores it (TAT-QA: ``[answer, scale]``); the tools variants
            and the constrained Base then reply with ``scale`` beside ``answer``.
        send_images: attach the question's images, and images a tool returns (a retrieved
            chart), to the requests (models that accept images only).
        max_images: most images in one conversation (serving's limit per prompt).
        answer_patterns: constrain a numeric final answer (number, percent, count, read from the
            question text) to one number with its unit by a schema pattern, in every variant.
        gate: answer-gate settings.
        loop: one of :data:`LOOPS` (``authors`` needs ``max_tokens``, their per-step budget).
        answer_reading: how the tools variants' answer is read, one of :data:`READINGS`.
        base_reading: how the model-only and the authors' Base reply is read, one of
            :data:`READINGS`.
    """

    model: str
    max_steps: int = 16
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.0, seed=0))
    max_tokens: int | None = None
    thought_chars: int = 400
    plan_chars: int = 600
    answer_chars: int = 200
    base_reasoning_chars: int = 600
    arg_chars: int = 2000
    observation_chars: int = 2000
    context_chars: int | None = None
    max_prompt_chars: int = 48_000
    gate_rejections: int = 1
    max_bad_replies: int = 3
    action_schema: bool = True
    base_mode: str = "model_only"
    base_max_tokens: int = 4096
    base_temperature: float | None = None
    scale_datasets: tuple[str, ...] = ("tatqa",)
    send_images: bool = False
    max_images: int = MAX_IMAGES
    answer_patterns: bool = True
    gate: GateConfig = field(default_factory=GateConfig)
    loop: str = "ours"
    answer_reading: str = "ours"
    base_reading: str = "ours"

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("SolverConfig.model must be a registry key")
        if not 1 <= self.max_steps <= 64:
            raise ConfigError(f"SolverConfig.max_steps={self.max_steps}; allowed: 1..64")
        if self.sampling.temperature is None or not 0.0 <= self.sampling.temperature <= 2.0:
            raise ConfigError(f"SolverConfig.sampling.temperature={self.sampling.temperature}; allowed: 0..2")
        if self.sampling.seed is None:
            raise ConfigError(
                "SolverConfig.sampling.seed is unset; allowed: an integer (every call is seeded)"
            )
        if self.max_tokens is not None and not 16 <= self.max_tokens <= 131_072:
            raise ConfigError(f"SolverConfig.max_tokens={self.max_tokens}; allowed: 16..131072 or None")
        for name in ("thought_chars", "plan_chars", "answer_chars", "base_reasoning_chars", "arg_chars"):
            if not 10 <= getattr(self, name) <= 20_000:
                raise ConfigError(f"SolverConfig.{name}={getattr(self, name)}; allowed: 10..20000")
        if not 100 <= self.observation_chars <= 100_000:
            raise ConfigError(
                f"SolverConfig.observation_chars={self.observation_chars}; allowed: 100..100000"
            )
        if self.context_chars is not None and self.context_chars < 0:
            raise ConfigError(f"SolverConfig.context_chars={self.context_chars}; allowed: >= 0 or None")
        if self.max_prompt_chars < 1000:
            raise ConfigError(f"SolverConfig.max_prompt_chars={self.max_prompt_chars}; allowed: >= 1000")
        if not 0 <= self.gate_rejections <= 64:
            raise ConfigError(f"SolverConfig.gate_rejections={self.gate_rejections}; allowed: 0..64")
        if self.base_mode not in BASE_MODES:
            raise ConfigError(f"SolverConfig.base_mode={self.base_mode!r}; allowed: {', '.join(BASE_MODES)}")
        if not 16 <= self.base_max_tokens <= 131_072:
            raise ConfigError(f"SolverConfig.base_max_tokens={self.base_max_tokens}; allowed: 16..131072")
        if self.base_temperature is not None and not 0.0 <= self.base_temperature <= 2.0:
            raise ConfigError(f"SolverConfig.base_temperature={self.base_temperature}; allowed: 0..2 or None")
        if not 0 <= self.max_images <= MAX_IMAGES:
            raise ConfigError(f"SolverConfig.max_images={self.max_images}; allowed: 0..{MAX_IMAGES}")
        if not 1 <= self.max_bad_replies <= 16:
            raise ConfigError(f"SolverConfig.max_bad_replies={self.max_bad_replies}; allowed: 1..16")
        for name, allowed in (("loop", LOOPS), ("answer_reading", READINGS), ("base_reading", READINGS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"SolverConfig.{name}={getattr(self, name)!r}; allowed: {', '.join(allowed)}"
                )
        if self.loop == "authors" and self.max_tokens is None:
            raise ConfigError(
                "SolverConfig.loop='authors' needs max_tokens (the authors' per-step budget, 1024); "
                "allowed: 16..131072"
            )


def solver_config_for(spec: ModelFacts, **overrides: Any) -> SolverConfig:
    """Settings for a registry model: paper scale on a GPU (16,384-token budget for thinking
    models, the model-only Base), short bounds for the CPU model (small models loop on long
    replies) with the constrained Base (a 135M model's free text has no answer line to
    read)."""
    if spec.device == "cpu":
        base = SolverConfig(
            model=spec.key,
            base_mode="constrained",
            base_max_tokens=256,
            thought_chars=120,
            plan_chars=160,
            answer_chars=80,
            base_reasoning_chars=200,
            arg_chars=400,
            observation_chars=600,
            context_chars=3000,
            max_prompt_chars=min(16_000, 3 * spec.max_model_len),
        )
    else:
        base = SolverConfig(
            model=spec.key,
            max_tokens=spec.default_max_tokens if spec.thinking_default else None,
            base_max_tokens=spec.default_max_tokens if spec.thinking_default else 4096,
            send_images=spec.accepts_images,
        )
    return replace(base, **overrides)


def base_temperature(cfg: SolverConfig) -> float:
    """The Base call's sampling temperature (``base_temperature``, else the sampling's)."""
    t = cfg.base_temperature if cfg.base_temperature is not None else cfg.sampling.temperature
    assert t is not None
    return float(t)
