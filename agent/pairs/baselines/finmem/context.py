"""FinMem's prompts against the context its model is served with, checked before each call.

FinMem's memory shows whole filings (three 10-Q and three 10-K excerpts at top k 3), so one
decision prompt can hold tens of thousands of tokens. A prompt whose tokens plus its reply budget
(``max_tokens``) exceed the served context (``baselines.finmem.max_model_len``) is refused here,
before the call, with a :class:`ContextError` naming the setting that bounds it; nothing is cut
silently (vLLM refuses such a request, or stops its reply at the context's end).

Counting: the served model's own tokenizer and chat template (``tokenizer.json`` in its weights
folder), as its server counts; where that folder is not on this machine (a model served over
HTTP from another one), the project's estimate, one token per three characters
(:func:`agent.pairs.market.newsbudget.estimate_tokens`: long for English text, which the Llama-3
and Qwen3 tokenizers write at about four characters a token) plus 16 tokens a message for the
template's markers; the message says which count refused a prompt. :func:`byte_bound` (one token
per UTF-8 byte: a byte-level BPE never emits more) is the count that never undercounts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localfin.errors import ConfigError
from serving.chat.types import ChatRequest

__all__ = ["ContextError", "PromptBudget", "byte_bound", "estimate", "tokenizer_counter", "prompt_budget"]

log = logging.getLogger(__name__)

#: Template tokens a message costs at most beyond its text (role markers, separators).
_PER_MESSAGE = 16


class ContextError(ConfigError):
    """A FinMem prompt longer than the context its model is served with."""


def byte_bound(request: ChatRequest) -> int:
    """Tokens ``request``'s prompt costs at most (module docstring)."""
    return sum(len(m.content.encode("utf-8")) + _PER_MESSAGE for m in request.messages) + _PER_MESSAGE


def estimate(request: ChatRequest) -> int:
    """``request``'s prompt tokens estimated from its characters (module docstring)."""
    from agent.pairs.market.newsbudget import estimate_tokens

    return sum(estimate_tokens(m.content) + _PER_MESSAGE for m in request.messages) + _PER_MESSAGE


def tokenizer_counter(path: Path) -> Callable[[ChatRequest], int] | None:
    """The prompt tokens of a request under the chat template of the tokenizer in ``path``, or
    None when the folder has no tokenizer with a chat template."""
    if not (path / "tokenizer.json").is_file():
        return None
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:  # a folder transformers cannot read: use the bound
        log.info("no tokenizer from %s (%s): FinMem's context check estimates", path, exc)
        return None
    if not getattr(tok, "chat_template", None):
        return None
    tok.model_max_length = 10**12  # counting, not encoding for the model: no length warning

    def count(req: ChatRequest) -> int:
        msgs = [{"role": m.role, "content": m.content} for m in req.messages]
        kw = {} if req.thinking is None else {"enable_thinking": req.thinking}
        ids = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, **kw)
        return len(ids["input_ids"] if hasattr(ids, "keys") else ids)

    return count


@dataclass(frozen=True)
class PromptBudget:
    """The served context of FinMem's model and how a prompt is counted against it.

    max_model_len: the context in tokens (0: unknown, nothing is checked); count: a request's
    prompt tokens; counted_by: what counts them (for the message); setting: the config key of
    the context, named in the error."""

    max_model_len: int
    count: Callable[[ChatRequest], int] = estimate
    counted_by: str = "estimated at one token per three characters"
    setting: str = "baselines.finmem.max_model_len"

    def check(self, request: ChatRequest, where: str) -> int:
        """The prompt tokens of ``request``; a :class:`ContextError` when they and its reply
        budget do not fit the context (``where``: the phase and step, for the message)."""
        if not self.max_model_len:
            return 0
        n = int(self.count(request))
        if n + request.max_tokens > self.max_model_len:
            raise ContextError(
                f"FinMem's {request.call_type} prompt at {where} holds {n:,} tokens ({self.counted_by}); "
                f"with its reply budget of {request.max_tokens:,} tokens it exceeds the "
                f"{self.max_model_len:,}-token context FinMem's model is served with ({self.setting}). "
                "Serve a longer context (the setting, and the engine's) or shorten what the prompt "
                "shows: baselines.finmem.filing_max_chars cuts each filing excerpt, "
                "baselines.finmem.memory.<layer>.top_k recalls fewer items, "
                "baselines.finmem.max_tokens_decision / max_tokens_reflection set the reply budget"
            )
        return n


def prompt_budget(model: str, max_model_len: int | None, registry: Any = None) -> PromptBudget:
    """The :class:`PromptBudget` of FinMem's ``model`` (a registry key) served with
    ``max_model_len`` tokens (None: the registry entry's): its tokenizer where its folder is on
    this machine, else the estimate; a key the registry does not know and no context given:
    nothing is checked (said in the log)."""
    from serving.open import model_spec

    try:
        spec = model_spec(model, registry)
    except ConfigError:
        if max_model_len:
            return PromptBudget(int(max_model_len))
        log.warning(
            "FinMem's model %r is not in the registry and no max_model_len is set: prompts unchecked", model
        )
        return PromptBudget(0)
    ctx = int(max_model_len or spec.max_model_len)
    path = spec.expected_path()
    counter = tokenizer_counter(Path(path)) if path is not None else None
    if counter is None:
        return PromptBudget(
            ctx, estimate, f"estimated at one token per three characters (no {model} tokenizer here)"
        )
    return PromptBudget(ctx, counter, f"the {spec.display_name} tokenizer")
