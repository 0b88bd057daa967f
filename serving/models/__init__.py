"""The models an engine serves: model entries (:mod:`~serving.models.model_specs`), the
registry of model keys (:mod:`~serving.models.registry`), the models a user adds by file or
plugin (:mod:`~serving.models.user_models`), and the local preparation of the CPU model and the
tiny test models (:mod:`~serving.models.prepare`) with their tokenizers
(:mod:`~serving.models.tiny_tokenizer`)."""

from __future__ import annotations

__all__: list[str] = []
