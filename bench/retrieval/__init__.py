"""Benchmarks of the bank's retrieval: the exact threshold index and hnswlib against numpy brute
force, on synthetic or real embeddings, and what the similarity threshold means for our embedder."""

__all__: list[str] = []
