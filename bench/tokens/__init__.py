"""Benchmarks of what the agents' prompts hold and cost: prompt tokens per test step under each
backbone's tokenizer, the share of news, and the prefix cache under the prompt's block order."""

__all__: list[str] = []
