"""Benchmarks, grouped by what they measure; each one a module with ``parser()`` and
``main(argv)`` that prints JSON lines in the format of :mod:`bench.records`.

- ``kernels/``: the numba kernels against statsmodels and pandas (speed, threads, universe).
- ``retrieval/``: the bank's threshold retrieval, and what the similarity threshold means.
- ``serving/``: the chat backends and the vLLM server (throughput, latency, engine settings).
- ``tokens/``: what the agents' prompts hold and cost (tokens per step, news share, layout).
- ``agents/``: the agents' runs end to end (tokens per call, wall time, lock-step, OCR tool).
- ``suite/``: runs of several benchmarks at once (``all``, the GPU machine check).

``records`` and ``_args`` are shared by all of them; nothing outside ``bench`` imports it.
"""

__all__: list[str] = []
