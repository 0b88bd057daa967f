"""Requests for the serving benchmark: agent-like prompts of a chosen length.

Two workloads, both with the same shared system message (so the prefix cache has what an agent
run gives it, and nothing more: every user message is unique across the whole run, so no point
of a sweep reuses a whole prompt from an earlier one):

- ``text``: a market table and a request for a commentary, no schema. The model writes until
  ``max_tokens`` or its end-of-turn token; greedy decoding and the model's repetition penalty
  make the work the same on every backend (the transformers reference runs the same prompts).
- ``json``: the direction decision of the pair-trading agent with its bounded reply schema
  (``schema_valid_share`` is measured on this one).

Prompt lengths are set in tokens of the model's own tokenizer (chat template included) when it
is on disk, else estimated at 4 characters a token; the engines report the real counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from serving.chat.types import ChatRequest

__all__ = ["WORKLOADS", "SCHEMA", "SYSTEM", "Workload", "token_counter"]

WORKLOADS = ("text", "json")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "reason": {"type": "string", "maxLength": 120},
    },
    "required": ["action", "confidence", "reason"],
    "additionalProperties": False,
}

SYSTEM = (
    "You are the trading desk's pair-trading assistant. Each message gives one pair of stocks "
    "with a table of recent sessions: the log closes of both legs, the spread after the hedge "
    "ratio, its z-score over twenty sessions and the cointegration p-value of the screen. Read "
    "the table from the oldest row to the newest. Sessions are labelled by step numbers, not "
    "dates. Be brief and concrete; do not invent data that is not in the table."
)

_TEXT_TASK = "Write a short commentary on this pair for the desk: trend of the spread, risk, what to watch."
_JSON_TASK = (
    "Decide today's direction: LONG_SHORT, SHORT_LONG or FLAT, with a confidence from 0 to 100 and a "
    "one-sentence reason. Reply with JSON only."
)
_TICKERS = ("XOM", "CVX", "KO", "PEP", "PG", "CL", "WMT", "COST", "COP", "OXY", "MO", "PM", "KMB", "GIS")


def token_counter(model_dir: str | None) -> Callable[[list[dict[str, str]]], int]:
    """Count the prompt tokens of a chat (template included) with the model's tokenizer, or
    estimate 4 characters a token when no tokenizer is on disk."""
    if model_dir:
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(model_dir)
            if tok.chat_template:

                def count(messages: list[dict[str, str]]) -> int:
                    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
                    if isinstance(ids, dict) or hasattr(ids, "keys"):
                        ids = ids["input_ids"]
                    return len(ids)

                return count
        except (OSError, ValueError):
            pass
    return lambda messages: sum(len(m["content"]) for m in messages) // 4 + 8


def _row(uid: int, step: int) -> str:
    # deterministic pseudo-random numbers, different for every request and row
    h = (uid * 2_654_435_761 + step * 40_503) % 1_000_003
    a = 3.0 + (h % 997) / 331.0
    b = 3.0 + (h % 991) / 347.0
    z = ((h % 601) - 300) / 100.0
    return f"step {step:03d}: {a:.4f} {b:.4f} spread {a - 0.93 * b:+.4f} z {z:+.2f}"


@dataclass
class Workload:
    """Makes unique requests of about ``prompt_tokens`` tokens (see the module docstring).

    Args:
        model: registry key the requests name.
        kind: one of :data:`WORKLOADS`.
        count_tokens: prompt-token counter from :func:`token_counter`.
        first_id: first request id; workloads of one run must not overlap (an id fixes the
            table rows, so a repeated id would hand the prefix cache a whole earlier prompt).
    """

    model: str
    kind: str
    count_tokens: Callable[[list[dict[str, str]]], int]
    first_id: int = 0

    def __post_init__(self) -> None:
        if self.kind not in WORKLOADS:
            raise ValueError(f"workload={self.kind!r}; allowed: {', '.join(WORKLOADS)}")
        self._ids = itertools.count(self.first_id)
        self._rows_for: dict[int, int] = {}

    def _user(self, uid: int, rows: int) -> str:
        a, b = _TICKERS[uid % len(_TICKERS)], _TICKERS[(uid * 7 + 3) % len(_TICKERS)]
        table = "\n".join(_row(uid, s) for s in range(1, rows + 1))
        task = _TEXT_TASK if self.kind == "text" else _JSON_TASK
        return (
            f"Request {uid}. Pair {a}/{b}, screen p-value {0.001 * (1 + uid % 9):.3f}.\n"
            f"columns: step, log close {a}, log close {b}, spread, z\n{table}\n{task}"
        )

    def _rows(self, prompt_tokens: int) -> int:
        """Table rows that bring the prompt to about ``prompt_tokens`` (calibrated once)."""
        if prompt_tokens not in self._rows_for:

            def size(rows: int) -> int:
                user = self._user(999_983, rows)
                return self.count_tokens(
                    [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
                )

            base, ten = size(1), size(11)
            per_row = max(1.0, (ten - base) / 10)
            self._rows_for[prompt_tokens] = max(1, 1 + round((prompt_tokens - base) / per_row))
        return self._rows_for[prompt_tokens]

    def requests(self, n: int, prompt_tokens: int, max_tokens: int) -> list[ChatRequest]:
        """``n`` new requests (never seen before in this run)."""
        rows = self._rows(prompt_tokens)
        out = []
        for _ in range(n):
            uid = next(self._ids)
            out.append(
                ChatRequest.simple(
                    self.model,
                    self._user(uid, rows),
                    system=SYSTEM,
                    max_tokens=max_tokens,
                    json_schema=SCHEMA if self.kind == "json" else None,
                    seed=uid,
                    call_type="bench",
                )
            )
        return out
