"""What a rehearsal checks, read back from the journals of the runs it made (and two probes).

Per call type (the ``call_type`` of the journaled requests):

- **settings**: the requests as journaled (model keys, ``max_tokens``, thinking, sampling fields
  left unset or set, seeds, schemas, images) against what the config asks (Moira: the
  ``[model.max_tokens]`` budget of the call, FinMem's decision and reflection on the direction
  and reflection budgets; each backbone's thinking switch; with ``server_default`` no
  temperature, top_p or repetition penalty and a seed in every request);
- **decoding**: Moira's five call types as ``[model] decoding`` asks (``schema``: every request
  constrained to its schema; ``prompt``: none constrained, the training reflection without a
  schema, its reply in the paper's text form); FinMem's calls constrained either way;
- **split**: no reply text keeps a think tag, every parsed reply is its text's JSON (only the
  final text is parsed; an unconstrained reply's first JSON object), and a thinking call type
  has replies whose reasoning came apart;
- **cut**: the probe re-sends the call type's largest request with a budget of
  :data:`CUT_PROBE_TOKENS`: the reply must come back cut (``finish_reason = length``), a
  fallback with no think tag in its text (for a thinking request, cut mid-thought: reasoning
  only with an empty answer; cut after ``</think>``: the reasoning apart and a partial answer,
  unparsed), and Moira's parser must call it "cut at max_tokens"; replies cut during the run
  are counted beside it;
- **images** (models that take images): requests carry images, and the probe re-sends the
  largest image request without its images: the prompt must shrink by at least
  :data:`MIN_IMAGE_TOKENS` per image (Qwen3-VL's smallest image, 256 x 256 pixels in 32-pixel
  merged patches), which only happens when the images reached the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.reproduce.spec import ReproConfig
from serving.journal import Journal
from serving.registry import Registry
from serving.replies import first_json_object, thinks
from serving.types import ChatRequest

__all__ = ["CUT_PROBE_TOKENS", "MIN_IMAGE_TOKENS", "Check", "journal_records", "check_calls", "probe_calls"]

CUT_PROBE_TOKENS = 12
MIN_IMAGE_TOKENS = 64
_FINMEM_BUDGET = {"finmem_decision": "direction", "finmem_reflection": "reflection"}
#: Moira's own call types, which follow ``[model] decoding``
_AGENT_CALLS = ("pair_selection", "direction", "reflection", "break_check", "news_verify")


@dataclass(frozen=True)
class Check:
    """One check of one call type on one path; ``ok`` None = not applicable (nothing to check)."""

    path: str
    call_type: str
    name: str
    ok: bool | None
    detail: str
    seen: Mapping[str, Any] = field(default_factory=dict)


def journal_records(out: Path) -> list[dict[str, Any]]:
    """Every (request, result) pair journaled under ``out`` (run journals and judge journals)."""
    recs: list[dict[str, Any]] = []
    for p in sorted([*out.rglob("journal.sqlite"), *out.rglob("judge.sqlite")]):
        with Journal(p) as j:
            recs += j.records()
    return recs


def _decoding(cfg: ReproConfig) -> str:
    return str(dict(cfg.document.get("model", {})).get("decoding", "schema")) if cfg.kind == "moira" else ""


def _decoding_issue(call: str, reqs: Sequence[Mapping[str, Any]], decoding: str) -> str:
    """What in ``reqs`` (journaled requests of ``call``) differs from ``decoding`` ("": none)."""
    if call not in _AGENT_CALLS or not decoding:
        return ""
    free = [q for q in reqs if q.get("json_schema") is None]
    loose = [q for q in reqs if q.get("constrained", True) is False]
    if decoding == "schema" and (free or loose):
        return f"decoding schema, but {len(free) + len(loose)} request(s) not constrained to a schema"
    if decoding == "prompt":
        if call == "reflection" and len(free) != len(reqs):
            return "decoding prompt: a reflection request carries a schema (the paper's text form has none)"
        if call != "reflection" and len(loose) != len(reqs):
            return f"decoding prompt, but {len(reqs) - len(loose)} request(s) constrained to the schema"
    return ""


def _expected(cfg: ReproConfig) -> tuple[dict[str, int], dict[str, bool | None], bool]:
    model = dict(cfg.document.get("model", {})) if cfg.kind == "moira" else {}
    budgets = {k: int(v) for k, v in dict(model.get("max_tokens", {})).items()}
    for call, src in _FINMEM_BUDGET.items():
        if src in budgets:
            budgets[call] = budgets[src]
    thinking: dict[str, bool | None] = {}
    for b in cfg.document.get("backbones", []) if cfg.kind == "moira" else []:
        key = b if isinstance(b, str) else b["key"]
        thinking[key] = None if isinstance(b, str) else b.get("thinking", model.get("thinking"))
    return budgets, thinking, bool(model.get("server_default"))


def _values(reqs: Sequence[Mapping[str, Any]], key: str) -> list[Any]:
    return sorted({json.dumps(r.get(key)) for r in reqs})


def _images(req: Mapping[str, Any]) -> int:
    return sum(len(m.get("images") or ()) for m in req.get("messages", []))


def check_calls(
    cfg: ReproConfig, path: str, records: Sequence[Mapping[str, Any]], registry: Registry
) -> list[Check]:
    """The settings, split and run-fallback checks of every call type (module docstring)."""
    budgets, thinking, server_default = _expected(cfg)
    decoding = _decoding(cfg)
    by: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by.setdefault(r["request"]["call_type"], []).append(r)
    out: list[Check] = []
    for call, recs in sorted(by.items()):
        reqs = [r["request"] for r in recs]
        seen = {
            "calls": len(recs),
            "models": sorted({q["model"] for q in reqs}),
            "max_tokens": sorted({q["max_tokens"] for q in reqs}),
            "thinking": _values(reqs, "thinking"),
            "temperature": _values(reqs, "temperature"),
            "top_p": _values(reqs, "top_p"),
            "repetition_penalty": _values(reqs, "repetition_penalty"),
            "seeded": all(q.get("seed") is not None for q in reqs),
            "schema": all(q.get("json_schema") is not None for q in reqs),
            "constrained": all(q.get("json_schema") is not None and q.get("constrained", True) for q in reqs),
            "max_images": max(_images(q) for q in reqs),
            "prompt_tokens_max": max(int(r["result"]["usage"]["prompt_tokens"]) for r in recs),
            "prompt_chars_max": max(sum(len(m.get("content") or "") for m in q["messages"]) for q in reqs),
        }
        for k in sorted({q["model"] for q in reqs}):
            spec = registry.get(k)
            seen.setdefault("engine", {})[k] = {
                "reasoning_parser": spec.reasoning_parser,
                "tool_call_parser": spec.tool_call_parser,
                "max_model_len": spec.max_model_len,
                "timeout_s": spec.timeout_s,
                "accepts_images": spec.accepts_images,
                "thinking_default": spec.thinking_default,
            }
        bad: list[str] = []
        if call in budgets and seen["max_tokens"] != [budgets[call]]:
            bad.append(f"max_tokens {seen['max_tokens']} != config {budgets[call]}")
        for q in reqs:
            if q["model"] in thinking and q.get("thinking") != thinking[q["model"]]:
                bad.append(f"{q['model']}: thinking {q.get('thinking')} != backbone {thinking[q['model']]}")
                break
        issue = _decoding_issue(call, reqs, decoding)
        if issue:
            bad.append(issue)
        if server_default:
            if any(
                q.get(f) is not None for q in reqs for f in ("temperature", "top_p", "repetition_penalty")
            ):
                bad.append("server_default config, but a request set temperature/top_p/repetition_penalty")
            if not seen["seeded"]:
                bad.append("a request without the run seed")
        out.append(Check(path, call, "settings", not bad, "; ".join(bad) or "as the config asks", seen))
        out.append(_split_check(path, call, recs, registry))
        fb = sum(
            1
            for r in recs
            if r["result"]["parse_error"] is not None or r["result"]["finish_reason"] == "length"
        )
        cut = sum(1 for r in recs if r["result"]["finish_reason"] == "length")
        out.append(
            Check(
                path,
                call,
                "run fallbacks",
                None,
                f"{fb} fallback(s), {cut} cut at max_tokens",
                {"fallbacks": fb, "cut": cut},
            )
        )
    return out


def _split_check(path: str, call: str, recs: Sequence[Mapping[str, Any]], registry: Registry) -> Check:
    bad: list[str] = []
    with_reasoning = thinking_calls = tags_after = 0
    for r in recs:
        res, req = r["result"], ChatRequest.from_dict(r["request"])
        if "<think>" in res["text"] or "</think>" in res["text"]:
            # a free reply (decoding "prompt") may write a tag after its reasoning was split off:
            # the random stand-ins do, a biased one closes its thinking again and again; that is
            # answer text, read for its first JSON object. So may a free reply of a call that does
            # not think (nothing to split: the tag is one of the random model's tokens). With a
            # thinking call's reasoning not split off, or under structured outputs (which allow
            # no tag), the split missed
            held = req.json_schema is not None and req.constrained  # structured outputs
            if not held and (res["reasoning"] or not thinks(req, registry.get(req.model))):
                tags_after += 1
            else:
                bad.append(f"a think tag left in the answer text of {res['request_key'][:10]}")
        read = (
            (json.loads(res["text"]) if req.constrained else first_json_object(res["text"])[0])
            if res["parsed"] is not None
            else None
        )
        if res["parsed"] is not None and read != res["parsed"]:
            bad.append(f"parsed value is not the final text's JSON ({res['request_key'][:10]})")
        if thinks(req, registry.get(req.model)):
            thinking_calls += 1
            with_reasoning += bool(res["reasoning"])
    if thinking_calls and not with_reasoning:
        bad.append(f"{thinking_calls} thinking call(s), none with reasoning split off")
    detail = "; ".join(bad[:3]) or (
        f"{with_reasoning} of {thinking_calls} thinking replies had reasoning split off; "
        "final text only parsed"
        if thinking_calls
        else "no thinking calls; final text only parsed"
    )
    if tags_after and not bad:
        detail += f"; {tags_after} free answer(s) wrote a think tag after the split (answer text)"
    return Check(
        path,
        call,
        "thinking split",
        not bad,
        detail,
        {"thinking_calls": thinking_calls, "with_reasoning": with_reasoning, "tags_after_split": tags_after},
    )


def _largest(recs: Iterable[Mapping[str, Any]], images: bool = False) -> ChatRequest | None:
    pool = [r for r in recs if not images or _images(r["request"])]
    if not pool:
        return None
    best = max(pool, key=lambda r: int(r["result"]["usage"]["prompt_tokens"]))
    return ChatRequest.from_dict(best["request"])


def probe_calls(
    path: str, records: Sequence[Mapping[str, Any]], backend: Any, registry: Registry
) -> list[Check]:
    """The cut and image probes (module docstring), sent through ``backend`` unjournaled."""
    from agent.pairs.moira.calls import _usable

    # the largest request of each call type, in thinking mode and not (a config whose backbones
    # differ only in their thinking switch sends both, and each is cut its own way)
    by: dict[tuple[str, bool], list[Mapping[str, Any]]] = {}
    for r in records:
        one = ChatRequest.from_dict(r["request"])
        by.setdefault((r["request"]["call_type"], thinks(one, registry.get(one.model))), []).append(r)
    out: list[Check] = []
    for (call, _), recs in sorted(by.items()):
        req = _largest(recs)
        assert req is not None
        probe = replace(req, max_tokens=CUT_PROBE_TOKENS, json_schema=req.json_schema)
        [res] = backend.chat([probe])
        thinking = thinks(probe, registry.get(probe.model))
        bad = []
        if res.finish_reason != "length" or not res.is_fallback or res.parsed is not None:
            bad.append(f"finish {res.finish_reason}, fallback {res.is_fallback}")
        tagged = "<think>" in res.text or "</think>" in res.text
        held = probe.json_schema is not None and probe.constrained  # structured outputs
        if tagged and (held or (thinking and not res.reasoning)):
            bad.append(f"a think tag left in the cut answer text {res.text[:40]!r}")
        if thinking and not res.text and not res.reasoning:
            bad.append("thinking reply cut with neither reasoning nor answer text")
        if res.finish_reason == "length" and _usable(res) != "cut at max_tokens":
            bad.append(f"agent reads it as {_usable(res)!r}")
        # the biased random model closes its thinking within the probe's budget or not, as its
        # seed falls: cut mid-thought the reply is reasoning only (tests/serving/
        # test_serving_thinking.py pins that case on both paths), cut after it a partial answer
        where = (
            ""
            if not thinking
            else (
                " (mid-thought: reasoning only, empty answer)"
                if not res.text
                else " (after thinking: reasoning apart, a partial answer, not parsed)"
            )
        )
        detail = "; ".join(bad) or f"cut at {CUT_PROBE_TOKENS} tokens: a counted fallback{where}"
        out.append(Check(path, call, "cut reply", not bad, detail, {"thinking": thinking}))
        img = _largest(recs, images=True)
        if img is None:
            continue
        n = sum(len(m.images) for m in img.messages)
        bare = replace(img, max_tokens=1, messages=tuple(replace(m, images=()) for m in img.messages))
        with_img, without = backend.chat([replace(img, max_tokens=1), bare])
        diff = with_img.usage.prompt_tokens - without.usage.prompt_tokens
        ok = diff >= MIN_IMAGE_TOKENS * n
        out.append(
            Check(
                path,
                call,
                "images reach the model",
                ok,
                f"{n} image(s): prompt {with_img.usage.prompt_tokens} tokens with them, "
                f"{without.usage.prompt_tokens} without",
                {"images": n, "image_tokens": diff},
            )
        )
    return out
