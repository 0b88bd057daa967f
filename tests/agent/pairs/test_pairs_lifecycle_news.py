"""The lifecycle news path: keyword matcher and its guards (synthetic events, routine text, real
news), the masked news block, the two request builders and their reply parsers."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from agent.pairs.lifecycle.calls import BREAK_PAYLOAD_KEYS
from agent.pairs.lifecycle.machine import (
    BREAK,
    CandidateEvent,
    CycleEvidence,
    LifecycleConfig,
    break_check_payload,
    build_break_check_request,
    build_news_verify_request,
    match_critical_news,
    pair_factors,
    parse_break_check,
    parse_news_verify,
    reply_char_bound,
    scan_news_keywords,
    summarize_news,
)
from agent.pairs.market.masking import StepCalendar, contains_calendar_leak
from agent.prompting import load_prompt
from localfin.errors import InputError
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest

CAL = StepCalendar.from_sessions(["2025-05-12", "2025-05-13", "2025-05-14", "2025-05-15", "2025-05-16"])
NAMES = {"GRNF": "Granfield Foods", "HRBK": "Harbrook Beverages Inc.", "AAPL": ["Apple Inc."]}


def _item(ticker: str, headline: str, summary: str = "", date: str = "2025-05-14") -> dict:
    return {"ticker": ticker, "date": date, "headline": headline, "summary": summary}


# --- keyword matcher ----------------------------------------------------------------------


def test_synthetic_news_candidates_are_exactly_the_structural_events(
    synthetic_files: dict[str, Path],
) -> None:
    rows = [json.loads(line) for line in synthetic_files["news"].read_text().splitlines()]
    names = {r["ticker"]: r["name"] for r in csv.DictReader(synthetic_files["companies"].open())}
    hits = scan_news_keywords(rows, names=names)
    kind = {(r["ticker"], r["date"], r["headline"]): r["kind"] for r in rows}
    live = [h for h in hits if not h.guard]
    assert live and all(kind[(h.ticker, h.date, h.headline)] == "structural" for h in live)
    guarded = {kind[(h.ticker, h.date, h.headline)] for h in hits if h.guard}
    assert guarded <= {"decoy", "structural"}
    decoys = [r for r in rows if r["kind"] == "decoy"]
    assert decoys and match_critical_news(decoys, names=names) == []  # every decoy is guarded
    assert {h.guard for h in hits if kind[(h.ticker, h.date, h.headline)] == "decoy"} <= {
        "negated",
        "immaterial",
    }
    # each announcement and follow-up of a planted break yields one candidate; routine items none
    structural = [r for r in rows if r["kind"] == "structural"]
    flagged = {(c.ticker, c.date) for c in match_critical_news(structural, names=names)}
    announcements = {
        (r["ticker"], r["date"])
        for r in structural
        if "restate" in r["headline"] or "acquired" in r["headline"]
    }
    assert announcements and announcements <= flagged
    assert match_critical_news([r for r in rows if r["kind"] in ("routine", "sentiment")], names=names) == []


@pytest.mark.parametrize(
    ("item", "guard"),
    [
        (_item("GRNF", "Granfield Foods agrees to be acquired by Halvorsen Capital"), ""),
        (_item("GRNF", "Granfield Foods comments on industry merger activity"), "generic"),
        (_item("GRNF", "Granfield Foods denies merger speculation"), "negated"),
        (
            _item(
                "GRNF", "x", "Granfield Foods (GRNF) said it is not in talks about any merger or acquisition."
            ),
            "negated",
        ),
        (_item("GRNF", "Granfield Foods, which has no debt, agreed to be acquired by Halvorsen"), ""),
        (
            _item("GRNF", "Granfield Foods completes small bolt-on acquisition of a regional brand"),
            "immaterial",
        ),
        (_item("GRNF", "Granfield Foods director acquires 8,800 shares"), "routine"),
        (_item("GRNF", "Granfield Foods rolls out fraud detection for stores"), "routine"),
        (_item("GRNF", "Rival Corp files for bankruptcy protection"), "other_company"),
        (
            _item("GRNF", "Granfield Foods sees sales gains", "Rival Corp filed for bankruptcy."),
            "other_company",
        ),
        (_item("GRNF", "Granfield Foods board meets", "The company disclosed a restatement of results."), ""),
        (_item("HRBK", "Harbrook faces going-concern doubt"), ""),
        (_item("HRBK", "HRBK: trading halted pending news"), ""),
        (_item("AAPL", "Microsoft-Backed OpenAI to Acquire Io Products"), "other_company"),
        (_item("AAPL", "Apple CEO Says He Doesn't Plan to Merge Units"), "negated"),
    ],
)
def test_keyword_guards(item: dict, guard: str) -> None:
    hits = scan_news_keywords([item], names=NAMES)
    assert hits, item
    assert hits[0].guard == guard, (item, hits)
    assert len(match_critical_news([item], names=NAMES)) == (0 if guard else 1)


def test_routine_financial_text_has_no_keyword_hit() -> None:
    items = [
        _item("GRNF", "Granfield Foods declares quarterly dividend"),
        _item(
            "GRNF",
            "Analyst reiterates rating on Granfield Foods",
            "Shares rose 3% after results beat estimates.",
        ),
        _item("GRNF", "Granfield Foods to present at industry conference"),
        _item("GRNF", "Granfield Foods shares slide after guidance cut"),
    ]
    assert scan_news_keywords(items, names=NAMES) == []


def test_real_news_keyword_hits_are_guarded_where_obvious(shared_data: Path) -> None:
    path = shared_data / "news" / "tradingview_bigtech_2025-04_05.csv"
    companies = shared_data / "companies.csv"
    if not (path.is_file() and companies.is_file()):
        pytest.skip("real news or companies.csv not found")
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    names = {
        r["symbol"]: [r["security"], r["long_name"]] for r in csv.DictReader(companies.open(encoding="utf-8"))
    }
    hits = scan_news_keywords(rows, names=names)
    live = match_critical_news(rows, names=names)
    assert hits and live and len(live) < 0.05 * len(rows)  # measured: 29 live items of 1,600
    # headlines of this file that hold a keyword but report no event of the leg
    expected = {
        ("AMD", "AMD EVP & Chief Commercial Officer Acquires 8,800 Shares"): "routine",
        ("TSLA", "Tesla CEO Musk Says He Doesn't Currently Have Plans to Merge Tesla, xAI"): "negated",
        ("MSFT", "Microsoft-Backed OpenAI to Acquire Io Products"): "other_company",
        ("AAPL", "Microsoft-Backed OpenAI to Acquire Io Products"): "other_company",
    }
    for (ticker, headline), guard in expected.items():
        row = next(r for r in rows if r["ticker"] == ticker and r["headline"] == headline)
        (hit,) = scan_news_keywords([row | {"summary": ""}], names=names)
        assert hit.guard == guard, headline


def test_candidate_payload_and_news_summary_are_masked() -> None:
    item = _item(
        "GRNF", "Granfield Foods agrees on May 14 to be acquired", "Closing expected by June 30, 2025."
    )
    (cand,) = match_critical_news([item], names=NAMES)
    payload = cand.to_payload(CAL)
    assert payload["step"] == "step 003" and "step 003" in payload["headline"]
    assert contains_calendar_leak(json.dumps(payload)) == []
    items = [
        _item("GRNF", f"Granfield Foods item {k} on Wednesday", "x" * 150, date=f"2025-05-{12 + k % 5:02d}")
        for k in range(20)
    ]
    cfg = LifecycleConfig(news_summary_max_items=8, news_summary_max_chars=600)
    text = summarize_news(items, CAL, cfg)
    lines = text.splitlines()
    assert (
        1 <= len(lines) <= 8
        and len(text) <= 600
        and lines[-1].startswith("step 005 GRNF: Granfield Foods item 19")
    )
    assert all(len(line) <= cfg.item_max_chars for line in lines)
    assert contains_calendar_leak(text) == [] and "Wednesday" not in text
    assert summarize_news([], CAL) == "no news"


# --- requests -----------------------------------------------------------------------------


def _walk_bounded(schema: dict) -> None:
    kind = schema.get("type")
    if kind == "object":
        assert schema.get("additionalProperties") is False
        assert set(schema["required"]) == set(schema["properties"])
        for sub in schema["properties"].values():
            _walk_bounded(sub)
    elif kind == "string":
        assert "enum" in schema or "maxLength" in schema
    else:
        assert kind == "boolean", schema


@pytest.mark.parametrize("name", ["pairs_break", "pairs_news_verify"])
def test_prompt_schemas_are_bounded_and_prompts_leak_free(name: str) -> None:
    prompt = load_prompt(name)
    _walk_bounded(prompt.schema)
    assert reply_char_bound(prompt.schema) < 500
    system, user = prompt.render(payload_json="{}")
    assert contains_calendar_leak(system) == [] and user == "{}"


def _evidence() -> CycleEvidence:
    import numpy as np

    rng = np.random.default_rng(0)
    b = np.cumsum(rng.normal(0, 0.01, 400))
    a = b + rng.normal(0, 0.01, 400)
    ev = CycleEvidence.open(("GRNF", "HRBK"), 370, pair_factors(a, b, 370, 1.0, 0.0))
    for t in range(371, 394):
        ev = ev.observe(pair_factors(a, b, t, 1.0, 0.0))
    return ev


def test_break_check_request_carries_the_masked_a6_payload() -> None:
    ev = _evidence()
    summary = summarize_news([_item("GRNF", "Granfield Foods said Tuesday it may cut jobs")], CAL)
    payload = break_check_payload(ev, current_step="step 024", news_summary=summary)
    assert list(payload) == list(BREAK_PAYLOAD_KEYS)
    assert payload["days_since_last_break_validation"] == 23 and payload["pair"] == ["GRNF", "HRBK"]
    assert payload["monitoring_event_type"] == "scheduled_validation"
    req = build_break_check_request(model="tiny-qwen3", max_tokens=448, seed=7, payload=payload)
    assert isinstance(req, ChatRequest) and req.call_type == "break_check" and req.seed == 7
    assert req.json_schema == load_prompt("pairs_break").schema
    assert json.loads(req.messages[-1].content) == payload
    assert all(contains_calendar_leak(m.content) == [] for m in req.messages)
    with pytest.raises(InputError, match=r"past_week_news_summary.*May 13"):
        build_break_check_request(
            model="tiny-qwen3",
            max_tokens=448,
            seed=7,
            payload=payload | {"past_week_news_summary": "on May 13"},
        )
    with pytest.raises(InputError, match="lacks current_step"):
        build_break_check_request(model="tiny-qwen3", max_tokens=448, seed=7, payload={})


def test_news_verify_request_refuses_unmasked_text() -> None:
    cand = CandidateEvent(
        "GRNF", "2025-05-14", "acquisition", "acquired by", "Deal set for May 20", "Deal set for May 20"
    )
    with pytest.raises(InputError, match=r"candidate_event\.headline"):
        build_news_verify_request(
            model="m",
            max_tokens=64,
            seed=0,
            current_step="step 003",
            pair=("GRNF", "HRBK"),
            candidate={**cand.to_payload(CAL), "headline": cand.headline},
            past_week_news="no news",
        )
    req = build_news_verify_request(
        model="m",
        max_tokens=64,
        seed=0,
        current_step="step 003",
        pair=("GRNF", "HRBK"),
        candidate=cand.to_payload(CAL),
        past_week_news="no news",
    )
    body = json.loads(req.messages[-1].content)
    assert body["candidate_event"]["headline"] == "Deal set for step XXX"  # May 20 is not in CAL
    assert set(body) == {"current_step", "pair", "candidate_event", "past_week_news_summary"}


# --- parsers --------------------------------------------------------------------------------


def _verify_request(max_tokens: int = 300) -> tuple[CandidateEvent, ChatRequest]:
    cand = CandidateEvent("GRNF", "2025-05-14", "acquisition", "acquired by", "h", "s")
    req = build_news_verify_request(
        model="m",
        max_tokens=max_tokens,
        seed=0,
        current_step="step 003",
        pair=("GRNF", "HRBK"),
        candidate=cand.to_payload(CAL),
        past_week_news="no news",
    )
    return cand, req


GOOD_VERIFY = {
    "event_type": "acquisition",
    "affects_pair_relationship": True,
    "severity": "CRITICAL",
    "reasoning": "sold",
}


@pytest.mark.parametrize(
    ("reply", "max_tokens", "why"),
    [
        ("this is not JSON", 300, "invalid JSON"),
        (GOOD_VERIFY | {"severity": "SEVERE"}, 300, "schema violation"),
        (GOOD_VERIFY | {"extra": 1}, 300, "schema violation"),
        (GOOD_VERIFY | {"reasoning": "x " * 100}, 300, "schema violation"),
        (GOOD_VERIFY, 3, "max_tokens"),
    ],
)
def test_news_verify_bad_replies_are_flagged_fallbacks(reply: object, max_tokens: int, why: str) -> None:
    cand, req = _verify_request(max_tokens)
    (result,) = ScriptedBackend([Rule("news_verify", reply)]).chat([req])
    verdict = parse_news_verify(result, cand, 12)
    assert verdict.fallback and why in verdict.fallback_reason
    assert verdict.level(LifecycleConfig()) == "HEALTHY"


def test_news_verify_and_break_check_good_replies() -> None:
    cand, req = _verify_request()
    (result,) = ScriptedBackend([Rule("news_verify", GOOD_VERIFY)]).chat([req])
    verdict = parse_news_verify(result, cand, 12)
    assert not verdict.fallback and verdict.t == 12 and verdict.level(LifecycleConfig()) == BREAK
    payload = break_check_payload(_evidence(), current_step="step 024", news_summary="no news")
    breq = build_break_check_request(model="m", max_tokens=448, seed=0, payload=payload)
    reply = {
        "semantic_relationship_signal": "broken_candidate",
        "leg_a_financial_sentiment": "strong_negative",
        "leg_b_financial_sentiment": "neutral",
        "sentiment_symmetry": "asymmetric",
        "news_break_level": "BREAK",
        "is_relationship_break_signal": True,
        "reason": "one leg is being taken over",
    }
    (bres,) = ScriptedBackend([Rule("break_check", reply)]).chat([breq])
    assessment = parse_break_check(bres, 393)
    assert not assessment.fallback and assessment.effective_level == BREAK and assessment.t == 393
    (bad,) = ScriptedBackend([Rule("break_check", reply | {"news_break_level": "CRITICAL"})]).chat([breq])
    assert parse_break_check(bad, 393).fallback
    with pytest.raises(InputError, match="break_check result"):
        parse_break_check(result, 1)  # a news_verify result handed to the wrong parser
