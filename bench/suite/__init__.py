"""Runs of several benchmarks at once: every benchmark at a 15-minute size with one summary, and
the GPU machine check."""

__all__: list[str] = []
