"""The FinMem rows of the Moira ledger (``baselines.finmem.*``) and the rows added beside them
(``prompt.direction_news``, ``model.max_model_len``) carry their locators: a ``paper`` value its
section and a quote found verbatim in the paper's text, an ``authors`` value the file and line of
FinMem's released code and a token found there, an ``ours`` value its reason. The paper and the
code are read from ``../shared`` where present (skipped cleanly otherwise)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.reproduce.ledger.book import load_ledger

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
FINMEM = SHARED / "vendor" / "FinMem-LLM-StockTrading-be814aa47970de9bf2fdd6a1d5a60ae5cf361b46"
PAPER = SHARED / "seeds" / "moira.txt"
_AT = re.compile(r"^FinMem/(?P<path>[^:]+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


def _rows():
    ledger = load_ledger("moira")
    keys = ("prompt.direction_news", "model.max_model_len")
    return [
        (e.key, v)
        for e in ledger.entries
        if e.key.startswith("baselines.finmem.") or e.key in keys
        for v in e.values
    ]


def _norm(text: str) -> str:
    return " ".join(text.split())


def test_every_finmem_row_has_its_locator() -> None:
    rows = _rows()
    assert {k for k, _ in rows} >= {
        "baselines.finmem.filing_section",
        "baselines.finmem.decoding",
        "baselines.finmem.max_model_len",
        "baselines.finmem.reasks",
    }
    for key, v in rows:
        if v.provenance == "paper":
            assert v.section and v.quote, f"{key} {v.label()}: a paper value needs section and quote"
        elif v.provenance == "authors":
            assert _AT.match(v.at) and v.token, f"{key} {v.label()}: an authors value needs at and token"
        else:
            assert v.why.strip(), f"{key} {v.label()}: an ours value needs why"


def test_paper_quotes_occur_in_the_paper() -> None:
    if not PAPER.is_file():
        pytest.skip(f"paper text not found at {PAPER}")
    text = _norm(PAPER.read_text(encoding="utf-8"))
    for key, v in _rows():
        if v.provenance == "paper":
            assert _norm(v.quote) in text, f"{key}: {v.quote!r} is not in the paper's text"


def test_authors_tokens_occur_at_their_lines() -> None:
    if not FINMEM.is_dir():
        pytest.skip(f"FinMem's code not found at {FINMEM}")
    for key, v in _rows():
        if v.provenance != "authors":
            continue
        m = _AT.match(v.at)
        assert m is not None
        lines = (FINMEM / m["path"]).read_text(encoding="utf-8").splitlines()
        first = int(m["first"])
        last = int(m["last"] or first)
        span = "\n".join(lines[first - 1 : last])
        for token in [v.token] if isinstance(v.token, str) else v.token:
            assert token in span, f"{key}: {token!r} not at {v.at}"
