"""Settings of the FinAcumen solver, and the per-model defaults (paper scale on a GPU, short
bounds for the CPU model)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from agent.qa.gate import GateConfig
from localfin.errors import ConfigError
from serving.open import ModelFacts
from serving.registry import MAX_IMAGES
from serving.types import Sampling

__all__ = ["SolverConfig", "solver_config_for"]


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
        thought_chars / plan_chars / answer_chars / base_reasoning_chars: reply field bounds.
        arg_chars: bound put on tool arguments whose schema leaves strings unbounded.
        observation_chars: most characters of one tool output shown to the model.
        context_chars: most context characters put in the prompt (None: all).
        max_prompt_chars: when the conversation grows past this, the oldest tool outputs are
            elided (keeps prompts inside the model's context window).
        gate_rejections: failed answer checks sent back before an answer stands anyway.
        max_bad_replies: unusable replies in a row before the forced final call.
        send_images: attach the question's images, and images a tool returns (a retrieved
            chart), to the requests (models that accept images only).
        max_images: most images in one conversation (serving's limit per prompt).
        answer_patterns: constrain a numeric final answer (number, percent, count, read from the
            question text) to one number with its unit by a schema pattern, in every variant.
        gate: answer-gate settings.
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
    send_images: bool = False
    max_images: int = MAX_IMAGES
    answer_patterns: bool = True
    gate: GateConfig = field(default_factory=GateConfig)

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
        if not 0 <= self.gate_rejections <= 8:
            raise ConfigError(f"SolverConfig.gate_rejections={self.gate_rejections}; allowed: 0..8")
        if not 0 <= self.max_images <= MAX_IMAGES:
            raise ConfigError(f"SolverConfig.max_images={self.max_images}; allowed: 0..{MAX_IMAGES}")
        if not 1 <= self.max_bad_replies <= 16:
            raise ConfigError(f"SolverConfig.max_bad_replies={self.max_bad_replies}; allowed: 1..16")


def solver_config_for(spec: ModelFacts, **overrides: Any) -> SolverConfig:
    """Settings for a registry model: paper scale on a GPU (16,384-token budget for thinking
    models), short bounds for the CPU model (small models loop on long replies; SPEC §1)."""
    if spec.device == "cpu":
        base = SolverConfig(
            model=spec.key,
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
            send_images=spec.accepts_images,
        )
    return replace(base, **overrides)
