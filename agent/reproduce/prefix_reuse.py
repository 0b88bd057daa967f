"""What the rehearsal's journals say about vLLM's prefix cache: how much of each prompt an
earlier prompt already holds, and how FinAcumen's ReAct steps grow (``--plan``'s vLLM-aware
figures, :mod:`agent.reproduce.gpu_plan`).

Prompts are compared as text (role and content of every message in order, images by their
data), which is what decides a prefix-cache hit up to the block boundary (vLLM hashes blocks of
16 tokens on the GPU: a shared prefix is reused to its last full block, a difference of at most
15 tokens a prompt, left out here). Shares are of characters; the plan applies them to tokens
(prompts of one call type have the same mix of text, JSON and numbers throughout).

Per call type, over the calls of one rehearsal (engine path, each journal in its own order):

- ``shared``: the longest prefix each prompt shares with any earlier prompt of the same journal
  (the engine serving a lock-step round of several runs holds every earlier prompt's blocks
  while its cache has room): Moira's system prompts and instructions, repeated by every run
  of a lock-step round and every session;
- ``continued``: calls whose prompt starts with an earlier call's whole prompt (a ReAct step
  resends the conversation so far and appends the model's reply and the tool's observation);
  ``growth`` is the mean length such a call adds, as a share of the mean first prompt of a
  trajectory, and ``static`` the share of a first prompt that an earlier question's prompt
  already holds (system prompt, tool descriptions).

:func:`react_hit` turns ``growth`` and ``static`` into the share of a question's prompt tokens
the cache serves at ``n`` calls a question; :func:`plain_hit` is ``shared`` over all prompts.
The vLLM's own count of cached tokens in the rehearsal (``cached_tokens`` of each result, on the
stand-in's small cache and tokenizer) is kept beside them as a check.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CallShape", "Reuse", "prompt_text", "common_prefix", "measure", "measure_rehearsal", "react_hit"]

_SEP = "\x1e"


def _parts(request: Mapping[str, Any]) -> list[str]:
    return [
        f"{m['role']}{_SEP}{m.get('content') or ''}{_SEP}{''.join(m.get('images') or ())}{_SEP}"
        for m in request["messages"]
    ]


def prompt_text(request: Mapping[str, Any]) -> str:
    """A request's messages as one comparable string (module docstring)."""
    return "".join(_parts(request))


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class CallShape:
    """One call type's prompts in a rehearsal (characters, means per call)."""

    call_type: str
    calls: int = 0
    chars: int = 0
    shared_chars: int = 0
    continued: int = 0
    growth_chars: int = 0
    first_calls: int = 0
    first_chars: int = 0
    first_static_chars: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    context_tokens: list[int] = field(default_factory=list)

    @property
    def shared_share(self) -> float:
        return self.shared_chars / self.chars if self.chars else 0.0

    @property
    def growth(self) -> float | None:
        """Mean characters a continued call adds, over the mean first prompt (None: no ReAct)."""
        if not self.continued or not self.first_calls:
            return None
        return (self.growth_chars / self.continued) / (self.first_chars / self.first_calls)

    @property
    def static(self) -> float:
        return self.first_static_chars / self.first_chars if self.first_chars else 0.0

    @property
    def engine_cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        ctx = sorted(self.context_tokens)
        return {
            "call_type": self.call_type,
            "calls": self.calls,
            "mean_chars": round(self.chars / self.calls) if self.calls else 0,
            "shared_share": round(self.shared_share, 4),
            "continued": self.continued,
            "growth": None if self.growth is None else round(self.growth, 4),
            "static": round(self.static, 4),
            "engine_cached_share": round(self.engine_cached_share, 4),
            "context_tokens_mean": round(sum(ctx) / len(ctx)) if ctx else 0,
            "context_tokens_max": ctx[-1] if ctx else 0,
        }


@dataclass
class Reuse:
    """Call shapes by call type, and which journals they came from."""

    shapes: dict[str, CallShape] = field(default_factory=dict)
    journals: list[str] = field(default_factory=list)

    def plain_hit(self, call_types: Iterable[str] | None = None) -> float:
        """Shared characters over all characters of the given call types (all: None)."""
        chosen = [s for k, s in self.shapes.items() if call_types is None or k in set(call_types)]
        total = sum(s.chars for s in chosen)
        return sum(s.shared_chars for s in chosen) / total if total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"journals": self.journals, "call_types": [s.to_dict() for s in self.shapes.values()]}


def measure(records: Sequence[Mapping[str, Any]], reuse: Reuse | None = None) -> Reuse:
    """Add one journal's records (oldest first) to ``reuse`` (module docstring)."""
    out = reuse or Reuse()
    seen: list[str] = []  # earlier prompts, sorted
    earlier: set[str] = set()
    for r in records:
        req, res = r["request"], r["result"]
        parts = _parts(req)
        text = "".join(parts)
        shape = out.shapes.setdefault(req["call_type"], CallShape(req["call_type"]))
        i = bisect.bisect_left(seen, text)
        shared = max((common_prefix(text, seen[j]) for j in (i - 1, i) if 0 <= j < len(seen)), default=0)
        # a continuation starts with an earlier prompt in full, at a message boundary
        ends = [sum(len(p) for p in parts[: k + 1]) for k in range(len(parts) - 1)]
        prev = next((e for e in reversed(ends) if e <= shared and text[:e] in earlier), 0)
        shape.calls += 1
        shape.chars += len(text)
        shape.shared_chars += shared
        if prev:
            shape.continued += 1
            shape.growth_chars += len(text) - prev
        else:
            shape.first_calls += 1
            shape.first_chars += len(text)
            shape.first_static_chars += shared
        usage = res.get("usage") or {}
        shape.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        shape.cached_tokens += int(usage.get("cached_tokens") or 0)
        shape.context_tokens.append(
            int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        )
        bisect.insort(seen, text)
        earlier.add(text)
    return out


def measure_rehearsal(config_dir: Path, path: str = "engine") -> Reuse:
    """:func:`measure` over every journal of one config's rehearsal (``OUT/<config>/<path>``)."""
    from serving.journal import Journal

    reuse = Reuse()
    root = Path(config_dir) / path
    for f in sorted(root.rglob("*.sqlite")) if root.is_dir() else ():
        if f.name not in ("journal.sqlite", "judge.sqlite"):
            continue
        with Journal(f) as j:
            records = j.records()
        if records:
            measure(records, reuse)
            reuse.journals.append(str(f))
    return reuse


def react_hit(n: int, growth: float, static: float) -> float:
    """Share of a question's prompt tokens served from the prefix cache when it takes ``n``
    calls, each resending the last in full and adding ``growth`` x the first prompt, whose
    ``static`` share an earlier question already computed. Prompts P_k = P_1 (1 + (k-1) g):
    sent = sum of P_k; computed = P_1 (1 - s) + (n - 1) g P_1."""
    if n < 1:
        raise ValueError(f"n={n}; allowed: >= 1")
    sent = n + growth * n * (n - 1) / 2
    computed = (1 - static) + (n - 1) * growth
    return max(0.0, 1.0 - computed / sent)
