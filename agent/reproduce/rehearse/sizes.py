"""The largest prompt of each call type against the model's context, on the config's real
windows and items, without running the model.

Tokens: counted with the backbone's own tokenizer where its folder is on this machine
(``tokenizer.json`` under the registry path); otherwise two figures from the characters, named
in the report: the project's estimate (one token per 3 characters,
:func:`agent.pairs.moira.payloads.estimate_tokens`, long for English BPE at about 4) and a hard
bound (one token per UTF-8 byte: a byte-level BPE never emits more). The tiny stand-ins'
tokenizers are not the backbones' and are not used for this. An image costs what Qwen3-VL's
processor makes of its real pixel size (resized to multiples of 32 pixels within 256 x 256 ..
4096 x 4096; one token per 32 x 32 block). The room a prompt has is ``max_model_len`` minus the
call's ``max_tokens`` (vLLM refuses a request whose prompt plus budget exceeds the context).

Moira (an upper bound per call type): the largest prompt of the rehearsal (at the config's
prompt settings, synthetic market) plus, in full, what real data adds at most: the news budget
(``news_token_budget`` x 3 characters, the builders' own cap) where the prompt shows news, the
pool's real business descriptions (``companies.csv`` of the data folder, each cut at
``description_max_chars``) where it shows company context, and ``max_principles`` x
``principle_max_chars`` of learned principles in the direction call (400 characters a principle
where the config leaves them unbounded). The real news file
(``news/tradingview_bigtech_2025-04_05.csv``) says how close the pool's news comes to the cap.

FinAcumen: :func:`agent.reproduce.rehearse.qa_rehearsal.qa_sizes` (every real item the data
root holds for the config's sources), with the helpers here.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agent.reproduce.spec import ReproConfig
from serving.models.registry import Registry

__all__ = ["PromptSize", "image_tokens", "moira_sizes", "TOKEN_BASIS"]

TOKEN_BASIS = "estimate: ceil(chars / 3) (the project's estimate_tokens); bound: UTF-8 bytes (byte-level BPE)"
_NEWS_CALLS = ("pair_selection", "direction", "news_verify", "break_check", "finmem_decision")
_COMPANY_CALLS = ("pair_selection", "direction", "finmem_decision")
_PATCH = 32  # Qwen3-VL: 16-pixel patches merged 2 x 2
_MIN_PX, _MAX_PX = 256 * 256, 4096 * 4096


@dataclass(frozen=True)
class PromptSize:
    """The largest prompt of one call type and whether it fits."""

    config: str
    call_type: str
    basis: str
    chars: int
    tokens_est: int
    tokens_bound: int
    image_tokens: int
    max_model_len: int
    max_tokens: int
    tokenizer: str

    @property
    def room(self) -> int:
        return self.max_model_len - self.max_tokens

    @property
    def fits(self) -> bool:
        """The estimate (or the real tokenizer's count) plus images fits the room."""
        return self.tokens_est + self.image_tokens <= self.room

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "room": self.room, "fits": self.fits}


def image_tokens(width: int, height: int) -> int:
    """Qwen3-VL prompt tokens of one image (module docstring)."""
    h = max(_PATCH, round(height / _PATCH) * _PATCH)
    w = max(_PATCH, round(width / _PATCH) * _PATCH)
    if h * w > _MAX_PX:
        s = math.sqrt(height * width / _MAX_PX)
        h, w = math.floor(height / s / _PATCH) * _PATCH, math.floor(width / s / _PATCH) * _PATCH
    elif h * w < _MIN_PX:
        s = math.sqrt(_MIN_PX / (height * width))
        h, w = math.ceil(height * s / _PATCH) * _PATCH, math.ceil(width * s / _PATCH) * _PATCH
    return (h // _PATCH) * (w // _PATCH)


def _counter(model: str, registry: Registry) -> tuple[Any, str]:
    """The backbone's tokenizer when its folder is here (``registry``: the real entries, not the
    stand-ins), else None and the stated bound."""
    real = registry.get(model)
    path = real.expected_path()
    if path is not None and (path / "tokenizer.json").is_file():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(path), f"{real.display_name} tokenizer ({path})"
    return None, f"no {real.display_name} tokenizer here; {TOKEN_BASIS}"


def _size(
    cfg: str,
    call: str,
    basis: str,
    text_chars: int,
    text: str | None,
    img: int,
    spec: Any,
    budget: int,
    counter: tuple[Any, str],
) -> PromptSize:
    tok, name = counter
    est = -(-text_chars // 3)
    bound = len(text.encode("utf-8")) if text is not None else text_chars * 4
    if tok is not None and text is not None:
        est = bound = len(tok(text)["input_ids"])
    return PromptSize(cfg, call, basis, text_chars, est, bound, img, spec.max_model_len, budget, name)


def _companies(pool: Sequence[str], limit: int, path: Path) -> int:
    if not path.is_file() or not limit:
        return len(pool) * limit
    want, total = set(pool), 0
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["symbol"] in want:
                total += (
                    min(len(row.get("business_description") or ""), limit)
                    + len(row.get("long_name") or "")
                    + 16
                )
                want.discard(row["symbol"])
    return total + len(want) * (limit + 40)


def _news_max(pool: Sequence[str], lookback: int, path: Path) -> int | None:
    """Most news characters of the pool's tickers within any ``lookback`` consecutive news days."""
    if not path.is_file():
        return None
    per_day: dict[str, int] = {}
    aliases = {"GOOG": "GOOGL"}
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            t = aliases.get(row["ticker"], row["ticker"])
            if t in pool:
                per_day[row["date"]] = (
                    per_day.get(row["date"], 0) + len(row["headline"]) + len(row["summary"]) + 4
                )
    days = sorted(per_day)
    return max((sum(per_day[d] for d in days[i : i + lookback]) for i in range(len(days))), default=0)


def moira_sizes(
    cfg: ReproConfig, records: Sequence[Mapping[str, Any]], registry: Registry, shared: Path
) -> tuple[list[PromptSize], list[str]]:
    """Per call type the Moira bound (module docstring) and notes on the real news."""
    prompt = dict(cfg.document.get("prompt", {}))
    policy = dict(cfg.document.get("policy", {}))
    news_cap = int(prompt.get("news_token_budget", 0)) * 3
    desc = int(prompt.get("description_max_chars", 240))
    # an unbounded principle (principle_max_chars 0, the paper's) is sized at 400 characters
    principles = int(policy.get("max_principles", 6)) * (int(prompt.get("principle_max_chars", 160)) or 400)
    pool = cfg.pool
    company = _companies(pool, desc, shared / "companies.csv")
    fm_filings, fm_note, fm_ctx = _finmem_filings(cfg, shared)
    real_news = _news_max(
        pool,
        int(prompt.get("news_lookback_sessions", 3)),
        shared / "news" / "tradingview_bigtech_2025-04_05.csv",
    )
    notes = [
        f"real news ({shared / 'news'}): the pool's tickers carry at most {real_news} characters within "
        f"{prompt.get('news_lookback_sessions', 3)} news days, against the cap of {news_cap} "
        f"({prompt.get('news_token_budget', 0)} estimated tokens)"
        if real_news is not None
        else "real news file absent: the news cap is taken in full",
        "FinMem's memory grows with the window, but each decision retrieves a fixed top_k per layer "
        "(agent/pairs/baselines/finmem/memory.py), so its prompt does not; its items are news (covered by "
        "the news cap), reflections, and filing excerpts: " + fm_note,
    ]
    largest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in records:
        q = r["request"]
        k = (q["call_type"], q["model"])
        chars = sum(len(m.get("content") or "") for m in q["messages"])
        if k not in largest or chars > sum(len(m.get("content") or "") for m in largest[k]["messages"]):
            largest[k] = q
    out = []
    for (call, model), q in sorted(largest.items()):
        text = "\n".join(m.get("content") or "" for m in q["messages"])
        add = (news_cap if call in _NEWS_CALLS else 0) + (company if call in _COMPANY_CALLS else 0)
        add += principles if call == "direction" else 0
        add += fm_filings if call == "finmem_decision" else 0
        spec = registry.get(model)
        if call.startswith("finmem") and fm_ctx:
            spec = replace(spec, max_model_len=fm_ctx)  # the context FinMem's model is served with
        basis = (
            f"{model}: rehearsal's largest ({len(text)} chars) + news cap "
            f"{news_cap if call in _NEWS_CALLS else 0} + company context "
            f"{company if call in _COMPANY_CALLS else 0} + principles "
            f"{principles if call == 'direction' else 0}"
            + (f" + filings {fm_filings}" if call == "finmem_decision" else "")
        )
        filler = text + "x" * add
        out.append(
            _size(
                cfg.name,
                call,
                basis,
                len(filler),
                filler,
                0,
                spec,
                int(q["max_tokens"]),
                _counter(model, registry),
            )
        )
    return out, notes


def _finmem_filings(cfg: ReproConfig, shared: Path) -> tuple[int, str, int]:
    """Characters FinMem's decision prompt adds at most for filing excerpts (top_k of mid and of
    long, each cut at ``filing_max_chars``; whole: the longest real MD&A sections of
    ``filings/herculean_layout/data/filings.parquet``, else 60,000 characters each), the note
    saying so, and the context FinMem's model is served with (0: the registry's)."""
    doc = cfg.document
    fm = dict((doc.get("baselines") or {}).get("finmem") or {})
    mem = dict(fm.get("memory") or {})
    k_mid = int(dict(mem.get("mid") or {}).get("top_k", 3))
    k_long = int(dict(mem.get("long") or {}).get("top_k", 3))
    cut = int(fm.get("filing_max_chars", 600))
    ctx = int(fm.get("max_model_len") or 0)
    for b in doc.get("backbones") or ():
        if b.get("key") == fm.get("model") and b.get("max_model_len"):
            ctx = ctx or int(b["max_model_len"])
    if cut:
        return (k_mid + k_long) * (cut + 80), f"{k_mid} + {k_long} excerpts of {cut} characters", ctx
    path = shared / "filings" / "herculean_layout" / "data" / "filings.parquet"
    if not path.is_file():
        return (
            (k_mid + k_long) * 60_000,
            f"whole, {k_mid} + {k_long} reports of 60,000 characters (no real filings here)",
            ctx,
        )
    import pandas as pd

    f = pd.read_parquet(path, columns=["document_type", "mda_content"])
    size = f["mda_content"].fillna("").str.len()
    q = sorted(size[f["document_type"] == "10-Q"], reverse=True)[:k_mid]
    k = sorted(size[f["document_type"] == "10-K"], reverse=True)[:k_long]
    total = int(sum(q) + sum(k))
    return (
        total,
        f"whole, the {k_mid} longest real 10-Q and {k_long} longest 10-K MD&A sections ({total} characters)",
        ctx,
    )


def _image_sizes(paths: Sequence[str]) -> int:
    from PIL import Image

    total = 0
    for p in paths:
        try:
            with Image.open(p) as im:
                total += image_tokens(*im.size)
        except OSError:
            continue
    return total
