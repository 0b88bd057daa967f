"""FinMem's layered memory and risk character, rebuilt for the pair-trading baseline (no model calls).

FinMem (Yu et al., "FinMem: A Performance-Enhanced LLM Trading Agent with Layered Memory and
Character Design") keeps what the agent observes in layers that forget at different speeds and
retrieves, for each decision, the top-k items of every layer by one combined score. Facts taken
over (the source of every default is in :class:`LayerConfig` and :class:`MemoryConfig`):

* layers short, mid, long and reflection; an item's age ``delta`` counts the sessions since it
  entered its current layer;
* recency decays exponentially, ``exp(-delta / Q)`` with FinMem's stability term Q per layer; we
  state it as a half-life ``h = Q ln 2`` in sessions, so recency = ``0.5 ** (delta / h)``;
* importance starts at a value drawn from a layer-specific distribution, decays by a factor
  per session, and rises (falls) by ``access_boost`` each time the item took part in a decision
  that then made (lost) money: FinMem's access counter;
* an item whose importance reaches its layer's ``promote_at`` moves up one layer (short -> mid ->
  long) with its age reset; an item whose recency or importance falls under the clean-up
  thresholds is forgotten;
* retrieval score = w_sim cosine(query, item) + w_rec recency + w_imp importance / 100, top-k
  per layer (embeddings from the bank's embedder, unit rows, so the dot product is the cosine).

Decisions we took where FinMem's paper and code differ or are silent (documented per field):
the importance draw is seeded from (run seed, layer, step, text) rather than a global RNG, so an
item's importance never depends on what was stored after it (causality, and a resumed run
redraws the same numbers); feedback adds a constant ``access_boost`` per event (the reference
code adds access_count x 5, which grows quadratically); demotion is off by default (the
reference thresholds equal the promotion ones, which bounces an item down the session after it
was promoted); layers are capped at ``max_items`` (lowest recency + importance evicted first).

Character (FinMem's profiling module): risk-seeking, risk-averse, or self-adaptive, which is
risk-averse while the agent's cumulative return over its last ``lookback`` settled sessions is
below ``threshold`` and risk-seeking otherwise (FinMem: three days, below zero).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from localfin.errors import ConfigError

__all__ = [
    "LAYERS",
    "PROMOTES_TO",
    "LayerConfig",
    "MemoryConfig",
    "MemoryItem",
    "Retrieved",
    "LayeredMemory",
    "EmbeddingCache",
    "CHARACTERS",
    "CharacterConfig",
    "risk_character",
]

#: The four layers, in prompt order.
LAYERS = ("short", "mid", "long", "reflection")
#: Where a promoted item goes (reflection and long are top layers of their own).
PROMOTES_TO = {"short": "mid", "mid": "long"}
IMPORTANCE_CAP = 100.0


def _finite(name: str, value: float, lo: float, hi: float, *, lo_open: bool = False) -> None:
    ok = math.isfinite(value) and (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bracket = "(" if lo_open else "["
        raise ConfigError(f"{name}={value}; allowed: a number in {bracket}{lo:g}, {hi:g}]")


@dataclass(frozen=True)
class LayerConfig:
    """One memory layer.

    half_life: sessions for recency to halve (FinMem's exp(-delta/Q) with h = Q ln 2; Q = 14 /
        90 / 365 for short / mid / long in the paper, 365 for reflection in the reference config).
    importance_decay: factor applied to importance once per session (reference config:
        0.92 / 0.967 / 0.988 / 0.988).
    importance_values, importance_probs: the initial importance is drawn from these values with
        these probabilities (reference code: short 50/70/90 w.p. .50/.45/.05, mid 40/60/80 w.p.
        .05/.80/.15, long and reflection 40/60/80 w.p. .05/.15/.80).
    promote_at: importance at or above which an item moves up one layer (reference config: 60
        short -> mid, 80 mid -> long); None for a top layer.
    demote_below: importance under which an item moves down one layer (None: never; the
        reference config uses the promotion thresholds, see the module docstring).
    top_k: items retrieved from this layer per decision (reference config: 3; the paper varies
        1-10).
    max_items: most items kept in the layer (ours; bounds prompt-independent work per session).
    """

    half_life: float
    importance_decay: float
    importance_values: tuple[float, ...] = (40.0, 60.0, 80.0)
    importance_probs: tuple[float, ...] = (0.05, 0.15, 0.80)
    promote_at: float | None = None
    demote_below: float | None = None
    top_k: int = 3
    max_items: int = 500

    def __post_init__(self) -> None:
        _finite("half_life", self.half_life, 0.0, 1e9, lo_open=True)
        _finite("importance_decay", self.importance_decay, 0.0, 1.0, lo_open=True)
        object.__setattr__(self, "importance_values", tuple(float(v) for v in self.importance_values))
        object.__setattr__(self, "importance_probs", tuple(float(p) for p in self.importance_probs))
        if not self.importance_values or len(self.importance_values) != len(self.importance_probs):
            raise ConfigError(
                f"importance_values {self.importance_values} and importance_probs {self.importance_probs} "
                "must be non-empty and of equal length"
            )
        for v in self.importance_values:
            _finite("importance_values[]", v, 0.0, IMPORTANCE_CAP)
        for p in self.importance_probs:
            _finite("importance_probs[]", p, 0.0, 1.0)
        if abs(sum(self.importance_probs) - 1.0) > 1e-9:
            raise ConfigError(
                f"importance_probs {self.importance_probs} sum to {sum(self.importance_probs)}; allowed: 1"
            )
        for name in ("promote_at", "demote_below"):
            v = getattr(self, name)
            if v is not None:
                _finite(name, v, 0.0, IMPORTANCE_CAP)
        if (
            self.promote_at is not None
            and self.demote_below is not None
            and self.demote_below >= self.promote_at
        ):
            raise ConfigError(f"demote_below={self.demote_below}; allowed: < promote_at={self.promote_at}")
        if not 0 <= self.top_k <= 50:
            raise ConfigError(f"top_k={self.top_k}; allowed: 0..50 items")
        if self.max_items < max(1, self.top_k):
            raise ConfigError(f"max_items={self.max_items}; allowed: >= max(1, top_k={self.top_k})")


def _ln2(q: float) -> float:
    return q * math.log(2.0)


@dataclass(frozen=True)
class MemoryConfig:
    """The layered memory.

    short / mid / long / reflection: the settings of that memory layer (defaults above), a
        table of its own.
    access_boost: importance points added (subtracted) per profitable (losing) decision an item
        took part in (FinMem's access counter: 5 points per count).
    cleanup_recency: an item whose recency falls below this is forgotten (reference: 0.05).
    cleanup_importance: an item whose importance falls below this is forgotten (reference: 5).
    w_similarity, w_recency, w_importance: weights of the retrieval score's three terms (FinMem
        adds them with weight 1; importance enters divided by 100).
    """

    short: LayerConfig = field(
        default_factory=lambda: LayerConfig(
            _ln2(14.0), 0.92, (50.0, 70.0, 90.0), (0.50, 0.45, 0.05), promote_at=60.0
        )
    )
    mid: LayerConfig = field(
        default_factory=lambda: LayerConfig(
            _ln2(90.0), 0.967, (40.0, 60.0, 80.0), (0.05, 0.80, 0.15), promote_at=80.0
        )
    )
    long: LayerConfig = field(default_factory=lambda: LayerConfig(_ln2(365.0), 0.988))
    reflection: LayerConfig = field(default_factory=lambda: LayerConfig(_ln2(365.0), 0.988))
    access_boost: float = 5.0
    cleanup_recency: float = 0.05
    cleanup_importance: float = 5.0
    w_similarity: float = 1.0
    w_recency: float = 1.0
    w_importance: float = 1.0

    def __post_init__(self) -> None:
        for name in LAYERS:
            if not isinstance(getattr(self, name), LayerConfig):
                raise ConfigError(f"{name} must be a LayerConfig, got {type(getattr(self, name)).__name__}")
        for name in ("long", "reflection"):
            if getattr(self, name).promote_at is not None:
                raise ConfigError(f"{name}.promote_at must be None: {name} is a top layer")
        if self.short.demote_below is not None or self.reflection.demote_below is not None:
            raise ConfigError("short.demote_below and reflection.demote_below must be None (no layer below)")
        _finite("access_boost", self.access_boost, 0.0, IMPORTANCE_CAP)
        _finite("cleanup_recency", self.cleanup_recency, 0.0, 1.0)
        _finite("cleanup_importance", self.cleanup_importance, 0.0, IMPORTANCE_CAP)
        for name in ("w_similarity", "w_recency", "w_importance"):
            _finite(name, getattr(self, name), 0.0, 100.0)

    def layer(self, name: str) -> LayerConfig:
        if name not in LAYERS:
            raise ConfigError(f"layer={name!r}; allowed: {', '.join(LAYERS)}")
        return getattr(self, name)


@dataclass
class MemoryItem:
    """One stored item (mutable state of a run's memory).

    uid: run-unique id shown to the model; text: the model-visible (masked) text; kind: what it
    is (news, price, digest, screen, reflection, outcome); step: session index (run calendar)
    it was stored at; age: sessions in its current layer; access: net feedback count.
    """

    uid: int
    layer: str
    text: str
    kind: str
    step: int
    importance: float
    vector: np.ndarray = field(repr=False)
    age: int = 0
    access: int = 0


@dataclass(frozen=True)
class Retrieved:
    """An item as retrieved for one decision, with the three score terms."""

    uid: int
    layer: str
    kind: str
    step: int
    text: str
    similarity: float
    recency: float
    importance: float
    score: float


class TextEmbedder(Protocol):
    """What FinMem's memory needs from an embedder: unit rows for texts (the bank's MiniLM, the
    hashing embedder of the tests, or an :class:`EmbeddingCache` around either)."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbeddingCache:
    """Wraps an embedder (``embed(texts) -> (n, dim)`` unit rows) with a text -> vector cache, so
    that runs sharing a pair (seeds, exposures) embed each news item once."""

    def __init__(self, embedder: TextEmbedder) -> None:
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return int(self.embedder.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            vecs = np.asarray(self.embedder.embed(todo), dtype=np.float32)
            for t, v in zip(todo, vecs):
                self._cache[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def _draw(values: tuple[float, ...], probs: tuple[float, ...], key: str) -> float:
    seed = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")
    u = np.random.default_rng(seed).random()
    acc = 0.0
    for v, p in zip(values, probs):
        acc += p
        if u < acc:
            return v
    return values[-1]


class LayeredMemory:
    """The four layers of one run. Not thread-safe; one instance per run (program).

    Args:
        config: the memory settings.
        embedder: anything with ``embed(texts)`` returning unit rows (MiniLM in runs, the
            hashing embedder in tests); wrap it in :class:`EmbeddingCache` to share work.
        seed: the run seed (importance draws).
    """

    def __init__(self, config: MemoryConfig, embedder: TextEmbedder, seed: int) -> None:
        self.config = config
        self.embedder = embedder
        self.seed = int(seed)
        self.items: dict[str, list[MemoryItem]] = {name: [] for name in LAYERS}
        self._next = 1
        self.promotions = 0
        self.demotions = 0
        self.forgotten = 0

    # -- writing ---------------------------------------------------------------------------
    def add(self, layer: str, entries: Sequence[tuple[str, str]], step: int) -> list[int]:
        """Store ``(kind, text)`` entries in ``layer`` at session ``step``; returns their uids."""
        cfg = self.config.layer(layer)
        if not entries:
            return []
        vecs = self.embedder.embed([t for _, t in entries])
        uids = []
        for (kind, text), vec in zip(entries, vecs):
            v0 = _draw(
                cfg.importance_values, cfg.importance_probs, f"{self.seed}|{layer}|{step}|{kind}|{text}"
            )
            item = MemoryItem(self._next, layer, text, kind, step, v0, np.asarray(vec, np.float32))
            self._next += 1
            self.items[layer].append(item)
            uids.append(item.uid)
        self._cap(layer)
        return uids

    def feedback(self, uids: Iterable[int], sign: int) -> int:
        """Raise (sign > 0) or lower (sign < 0) the importance of the items still held; returns
        how many were found. sign 0 changes nothing."""
        if sign == 0:
            return 0
        s = 1 if sign > 0 else -1
        want = set(uids)
        found = 0
        for layer in LAYERS:
            for it in self.items[layer]:
                if it.uid in want:
                    it.access += s
                    it.importance = min(
                        IMPORTANCE_CAP, max(0.0, it.importance + s * self.config.access_boost)
                    )
                    found += 1
        return found

    def advance(self, sessions: int = 1) -> None:
        """Let ``sessions`` sessions pass: age and importance decay, then clean-up and layer moves
        (promotion first, one layer per session)."""
        for _ in range(max(0, int(sessions))):
            for layer in LAYERS:
                cfg = self.config.layer(layer)
                for it in self.items[layer]:
                    it.age += 1
                    it.importance *= cfg.importance_decay
            self._clean_up()
            self._move()

    def _recency(self, it: MemoryItem) -> float:
        return 0.5 ** (it.age / self.config.layer(it.layer).half_life)

    def _clean_up(self) -> None:
        c = self.config
        for layer in LAYERS:
            keep = [
                it
                for it in self.items[layer]
                if self._recency(it) >= c.cleanup_recency and it.importance >= c.cleanup_importance
            ]
            self.forgotten += len(self.items[layer]) - len(keep)
            self.items[layer] = keep

    def _move(self) -> None:
        moves: list[tuple[MemoryItem, str]] = []
        for layer in ("short", "mid", "long"):
            cfg = self.config.layer(layer)
            for it in self.items[layer]:
                if cfg.promote_at is not None and it.importance >= cfg.promote_at:
                    moves.append((it, PROMOTES_TO[layer]))
                elif cfg.demote_below is not None and it.importance < cfg.demote_below:
                    moves.append((it, {"mid": "short", "long": "mid"}[layer]))
        for it, dest in moves:
            up = LAYERS.index(dest) > LAYERS.index(it.layer)
            self.items[it.layer].remove(it)
            self.promotions += int(up)
            self.demotions += int(not up)
            it.layer, it.age = dest, 0
            self.items[dest].append(it)
        for layer in {d for _, d in moves}:
            self._cap(layer)

    def _cap(self, layer: str) -> None:
        cap = self.config.layer(layer).max_items
        held = self.items[layer]
        if len(held) > cap:
            ranked = sorted(held, key=lambda it: (self._recency(it) + it.importance / IMPORTANCE_CAP, it.uid))
            drop = {it.uid for it in ranked[: len(held) - cap]}
            self.items[layer] = [it for it in held if it.uid not in drop]
            self.forgotten += len(drop)

    # -- reading ---------------------------------------------------------------------------
    def retrieve(self, query: str) -> dict[str, list[Retrieved]]:
        """Top-k items of every layer for ``query`` by the combined score (ties: older uid first)."""
        c = self.config
        qv = np.asarray(self.embedder.embed([query]), np.float32)[0]
        out: dict[str, list[Retrieved]] = {}
        for layer in LAYERS:
            k = c.layer(layer).top_k
            held = self.items[layer]
            if not held or k == 0:
                out[layer] = []
                continue
            sims = np.stack([it.vector for it in held]) @ qv
            scored = []
            for it, sim in zip(held, sims):
                s = round(float(sim), 6)  # stable ranking when embeddings differ in the last bits
                rec = self._recency(it)
                imp = it.importance
                total = c.w_similarity * s + c.w_recency * rec + c.w_importance * imp / IMPORTANCE_CAP
                scored.append(Retrieved(it.uid, layer, it.kind, it.step, it.text, s, rec, imp, total))
            scored.sort(key=lambda r: (-r.score, r.uid))
            out[layer] = scored[:k]
        return out

    def sizes(self) -> dict[str, int]:
        return {layer: len(self.items[layer]) for layer in LAYERS}

    def find(self, uid: int) -> MemoryItem | None:
        for layer in LAYERS:
            for it in self.items[layer]:
                if it.uid == uid:
                    return it
        return None


# -- character ---------------------------------------------------------------------------------

#: Character modes; a decision prompt shows one of the first two.
CHARACTERS = ("risk_seeking", "risk_averse", "self_adaptive")


@dataclass(frozen=True)
class CharacterConfig:
    """mode: risk_seeking, risk_averse, or self_adaptive (FinMem's default comparison);
    lookback: settled sessions of the agent's own returns the self-adaptive switch sums (FinMem: 3);
    threshold: risk-averse while that cumulative return is below this fraction (FinMem: 0)."""

    mode: str = "self_adaptive"
    lookback: int = 3
    threshold: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in CHARACTERS:
            raise ConfigError(f"character mode={self.mode!r}; allowed: {', '.join(CHARACTERS)}")
        if not 1 <= self.lookback <= 250:
            raise ConfigError(f"character lookback={self.lookback}; allowed: 1..250 sessions")
        _finite("character threshold", self.threshold, -1.0, 1.0)


def risk_character(config: CharacterConfig, settled_returns: Sequence[float]) -> str:
    """The character for the next decision given the agent's settled returns so far (oldest
    first, fractions). Self-adaptive: risk_averse when prod(1 + r) - 1 over the last
    ``lookback`` of them is below ``threshold``; with no settled return yet, risk_seeking."""
    if config.mode != "self_adaptive":
        return config.mode
    recent = list(settled_returns)[-config.lookback :]
    if not recent:
        return "risk_seeking"
    cum = float(np.prod([1.0 + r for r in recent]) - 1.0)
    return "risk_averse" if cum < config.threshold else "risk_seeking"
