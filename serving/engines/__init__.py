"""The in-process vLLM engines: the one module that imports vLLM
(:mod:`~serving.engines.vllm_engine`), the arguments an engine or a server starts with
(:mod:`~serving.engines.engine_args`), closing an engine until its memory is back
(:mod:`~serving.engines.engine_close`), calls of several threads in one running batch
(:mod:`~serving.engines.continuous`) and data-parallel replicas of one model
(:mod:`~serving.engines.replicas`)."""

from __future__ import annotations

__all__: list[str] = []
