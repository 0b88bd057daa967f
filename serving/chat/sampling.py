"""What an engine applies to a request's sampling: the request's own values, else the model's
generation config, else vLLM's neutral defaults (vLLM 0.32's order, the same in process and in
``vllm serve``: ``ChatCompletionRequest.to_sampling_params`` "user -> server default -> OpenAI
default").

The model's defaults are the fields of its ``generation_config.json`` that vLLM reads under
``generation_config="auto"`` (``ModelConfig.get_diff_sampling_param``: the penalties,
temperature, top_k, top_p, min_p; ``max_new_tokens`` too, which we never use: every request
names its ``max_tokens``). Under ``generation_config="vllm"`` there are none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from serving.chat.types import ChatRequest

__all__ = ["NEUTRAL", "GENERATION_FIELDS", "generation_defaults", "effective_sampling"]

#: vLLM's own defaults of the sampling fields a generation config may set (``SamplingParams``
#: and the OpenAI server's ``_DEFAULT_SAMPLING_PARAMS``; top_k 0 = off).
NEUTRAL: dict[str, float] = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
#: The fields of :data:`NEUTRAL`, in the order the manifest lists them.
GENERATION_FIELDS = tuple(NEUTRAL)


def generation_defaults(model_path: str | Path | None) -> dict[str, Any]:
    """The sampling fields the model folder's ``generation_config.json`` sets (those of
    :data:`GENERATION_FIELDS` with a value), as vLLM reads them; ``{}`` without such a file."""
    if model_path is None:
        return {}
    p = Path(model_path) / "generation_config.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: data[k] for k in GENERATION_FIELDS if data.get(k) is not None}


def effective_sampling(
    request: ChatRequest, defaults: Mapping[str, Any], *, registry_penalty: float = 1.0
) -> dict[str, Any]:
    """The values the engine samples ``request`` with, given the model's ``defaults``
    (:func:`generation_defaults` or the engine's own): each field of
    :data:`GENERATION_FIELDS` from the request where it sets it (a repetition penalty left
    ``None`` takes the registry's when that is not 1.0), else from ``defaults``, else
    :data:`NEUTRAL`; plus the request's ``seed`` and ``max_tokens``."""
    own: dict[str, Any] = {"temperature": request.temperature, "top_p": request.top_p}
    penalty = request.repetition_penalty
    if penalty is None and registry_penalty != 1.0:
        penalty = registry_penalty
    own["repetition_penalty"] = penalty
    out = {k: own[k] if own.get(k) is not None else defaults.get(k, NEUTRAL[k]) for k in GENERATION_FIELDS}
    return {**out, "seed": request.seed, "max_tokens": request.max_tokens}
