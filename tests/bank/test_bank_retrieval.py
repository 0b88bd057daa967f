"""Retrieval rule (tau, dedupe by source, k_max, empty -> no block) against brute force."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from bank_synth import clustered

from bank.embedder import HashingEmbedder, MiniLMEmbedder
from bank.errors import BankConfigError
from bank.exact import ExactConfig, exact_sims
from bank.index import HnswConfig
from bank.retrieval import Retriever, format_memory_block, retrieve_vector
from bank.schema import NewEntry, RetrievalConfig, query_text
from bank.store import ExperienceBank


def _oracle(x: np.ndarray, sources: list[str], q: np.ndarray, cfg: RetrievalConfig, limit: int) -> list[int]:
    sims = exact_sims(x[:limit], q)
    best: dict[str, tuple[float, int]] = {}
    rows = [(-s, i) for i, s in enumerate(sims) if s >= cfg.tau]
    for neg, i in sorted(rows):
        key = sources[i] if cfg.dedupe_source else str(i)
        best.setdefault(key, (neg, i))
    ids = [i for _, i in sorted(best.values())]
    return ids if cfg.k_max is None else ids[: cfg.k_max]


@pytest.mark.parametrize("k_max", [1, 5, None])
@pytest.mark.parametrize("dedupe", [True, False])
@pytest.mark.parametrize("fitted", [True, False])
def test_retrieve_vector_equals_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k_max: int | None, dedupe: bool, fitted: bool
) -> None:
    """Unfitted and fitted exact indexes (forced here at 3000 rows, split over threads), with a
    capped search's threshold seeded by a deliberately poor hnsw index: all equal the oracle."""
    import bank.exact as exact_mod
    import bank.retrieval as retrieval_mod

    monkeypatch.setattr(exact_mod, "_PARALLEL_MIN", 1000)
    monkeypatch.setattr(retrieval_mod, "_SEED_MIN_ROWS", 1000)
    x = clustered(3030, 32, 30, 0.8, 0.6, seed=11)
    rng = np.random.default_rng(0)
    sources = [f"s{v}" for v in rng.integers(0, 900, 3000)]  # many sources hold several entries
    ents = [NewEntry(s, "d", f"q{i}") for i, s in enumerate(sources)]
    exact_cfg = ExactConfig(min_rows=500, stage_dims=(6, 12, 20)) if fitted else ExactConfig()
    # low ef so hnsw seeds are often imperfect: the exact stage must still decide
    bank = ExperienceBank.open(tmp_path, HnswConfig(ef_search=8, ef_construction=16, m=4), exact_cfg)
    bank.add(ents, x[:3000], "m")
    assert (bank._exact.fitted_rows > 0) == fitted
    for tau in (0.5, 0.65, 0.8):
        cfg = RetrievalConfig(tau=tau, k_max=k_max, dedupe_source=dedupe)
        for limit in (3000, 1200):
            for q in x[3000:]:
                got = [h.entry_id for h in retrieve_vector(bank, q, cfg, limit)]
                assert got == _oracle(x, sources, q, cfg, limit)


def test_retriever_text_rule_and_memory_block(tmp_path: Path) -> None:
    emb = HashingEmbedder(64)
    ctx = "Revenue table. " + "x" * 1000
    entries = [
        NewEntry(
            "a", "tat", "What was the revenue growth in 2019?", ctx[:600], ("use the table",), ("units",)
        ),
        NewEntry("a", "tat", "What was the revenue growth in 2019 exactly?", ctx[:600]),
        NewEntry("b", "tat", "Name the auditor of the company", ""),
    ]
    with ExperienceBank.open(tmp_path) as bank:
        bank.add_texts(entries, emb)
        r = Retriever(bank, emb, RetrievalConfig(tau=0.5, k_max=5), record_hits=True)
        res = r.retrieve("What was the revenue growth in 2019?", ctx)
        assert (
            res.text == query_text("What was the revenue growth in 2019?", ctx)
            and len(res.text) == 36 + 1 + 600
        )
        assert [h.entry_id for h in res.hits] == [0]  # entry 1 has the same source, entry 2 is below tau
        block = format_memory_block(res.entries)
        assert "use the table" in block and "Caution: units" in block
        assert bank.get([0])[0].hit_count == 1
        none = r.retrieve("completely unrelated words zebra quantum")
        assert none.hits == () and format_memory_block(none.entries) == ""
        with pytest.raises(BankConfigError, match="embedder"):
            Retriever(bank, HashingEmbedder(32))


def test_config_validation() -> None:
    with pytest.raises(BankConfigError, match="tau"):
        RetrievalConfig(tau=1.5)
    with pytest.raises(BankConfigError, match="k_max"):
        RetrievalConfig(k_max=0)


def test_minilm_embeds_real_questions(shared_data: Path) -> None:
    path = shared_data / "qa" / "tatqa_dev.jsonl"
    if not path.exists():
        pytest.skip("tatqa_dev.jsonl absent")
    with open(path, encoding="utf-8") as fh:
        qs = [json.loads(next(fh))["question"] for _ in range(4)]
    emb = MiniLMEmbedder(threads=1)
    v = emb.embed(qs + [qs[0]])
    assert v.shape == (5, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[4]) > 0.999  # same text, same vector
    assert emb.model_id == "sentence-transformers/all-MiniLM-L6-v2"
