"""Benchmarks of the agents end to end: tokens per call type and unit of work, wall time, the
lock-step speed-up, and the QA agent's OCR tool."""

__all__: list[str] = []
