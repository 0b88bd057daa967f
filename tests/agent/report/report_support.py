"""Tiny run folders shaped as the writers produce them (not a conftest): ``steps.parquet`` through
:func:`agent.pairs.market.records.write_steps`, ``metrics.json`` through
:func:`agent.pairs.market.records.run_summary` with the metrics the writers compute, Moira's
``training.json`` / ``trace.parquet`` and EG-DDQN's ``training.json`` with the fields their
writers use."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.pairs.market.metrics import compute_metrics
from agent.pairs.market.records import StepRecord, run_summary, write_json, write_steps
from agent.pairs.market.settlement import ACTIONS

NAN = float("nan")
#: decision dates of the fixture window (6 transitions)
DATES = ("2021-03-01", "2021-03-02", "2021-03-03", "2021-03-04", "2021-03-05", "2021-03-08")
#: columns of Moira's trace.parquet (agent.pairs.moira.trace.TraceEvent)
TRACE_COLUMNS = (
    "run_id",
    "seq",
    "phase",
    "round",
    "step",
    "date",
    "kind",
    "pair",
    "call_type",
    "request_key",
    "reply",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "decision",
    "fallback",
    "state_before",
    "state_after",
    "detail",
)


def pair_steps(
    ls_returns: Sequence[float],
    actions: Sequence[str],
    pairs: Sequence[str],
    *,
    fallback: Sequence[bool] | None = None,
    dates: Sequence[str] = DATES,
) -> list[StepRecord]:
    """Records of a pair strategy: LONG_SHORT earns ``ls_returns``, SHORT_LONG its negative, FLAT
    0; realized, best (FLAT on a tie at 0, as settlement does) and matched follow."""
    out, eq = [], 1.0
    for i, (r, a, p) in enumerate(zip(ls_returns, actions, pairs, strict=True)):
        rets = {"LONG_SHORT": r, "SHORT_LONG": -r, "FLAT": 0.0}
        realized = rets[a]
        best = "FLAT" if r == 0 else ("LONG_SHORT" if r > 0 else "SHORT_LONG")
        eq *= 1 + realized
        out.append(
            StepRecord(
                step=i + 1,
                date=dates[i],
                pair=p,
                action=a,
                ret_long_short=r,
                ret_short_long=-r,
                realized=realized,
                equity=eq,
                best=best,
                matched=a == best,
                lifecycle="HEALTHY" if p else "",
                fallback=bool(fallback[i]) if fallback else False,
            )
        )
    return out


def pool_steps(returns: Sequence[float], dates: Sequence[str] = DATES) -> list[StepRecord]:
    """Equal-Weight rows: action HOLD, no pair, NaN per-action returns, empty best."""
    out, eq = [], 1.0
    for i, r in enumerate(returns):
        eq *= 1 + r
        out.append(StepRecord(i + 1, dates[i], "", "HOLD", NAN, NAN, r, eq, "", False))
    return out


def writer_metrics(steps: Sequence[StepRecord], no_candidate: bool = False) -> Any:
    """The metrics the writers put into metrics.json for these records."""
    actions = [s.action for s in steps]
    pair = all(a in ACTIONS for a in actions)
    return compute_metrics(
        [s.realized for s in steps],
        actions=actions if pair else None,
        matched=[s.matched for s in steps] if pair and not no_candidate else None,
        pairs=[s.pair or None for s in steps],
    )


def write_run(
    root: Path,
    run_id: str,
    steps: Sequence[StepRecord],
    *,
    kind: str = "baseline",
    method: str,
    exposure: str = "no_beta",
    seed: int | None = 0,
    extra: dict[str, Any] | None = None,
    training: dict[str, Any] | None = None,
    trace: list[dict[str, Any]] | None = None,
) -> Path:
    """``root/runs/<run_id>/`` with steps.parquet, metrics.json and the optional files."""
    d = root / "runs" / run_id
    write_steps(d / "steps.parquet", steps)
    ex = dict(extra or {})
    m = writer_metrics(steps, bool(ex.get("no_candidate")))
    doc = run_summary(
        run_id=run_id, kind=kind, method=method, exposure=exposure, seed=seed, metrics=m, extra=ex
    )
    write_json(d / "metrics.json", doc)
    if training is not None:
        write_json(d / "training.json", training)
    if trace is not None:
        import pandas as pd

        rows = [
            {
                c: r.get(c, 0 if c in ("seq", "round", "step", "prompt_tokens", "completion_tokens") else "")
                for c in TRACE_COLUMNS
            }
            for r in trace
        ]
        for i, r in enumerate(rows):
            r["seq"] = i
            r["run_id"] = run_id
        pd.DataFrame(rows, columns=list(TRACE_COLUMNS)).to_parquet(d / "trace.parquet", index=False)
    return d


def moira_training(returns: Sequence[float | None], accepted: Sequence[bool]) -> dict[str, Any]:
    """A training.json of Moira (cycle 0 = warmup) with these training returns and verdicts."""
    cycles, best = [], -math.inf
    for i, (r, a) in enumerate(zip(returns, accepted, strict=True)):
        if r is not None and a:
            best = r
        cycles.append(
            {
                "cycle": i,
                "candidate_principles": [],
                "proposed_principles": [],
                "rejected_principles": [],
                "training_return": r,
                "accepted": a,
                "reason": "warmup" if i == 0 else "",
                "reflection": "",
                "best_return_after": best,
            }
        )
    return {
        "run_id": "x",
        "principles": [],
        "stop_reason": "max_cycles",
        "best_return": best,
        "cycles": cycles,
    }


def moira_trace(pairs: Sequence[str], scores: Sequence[float], levels: Sequence[str]) -> list[dict[str, Any]]:
    """Test-phase direction calls (prompt 90 + 2 step, completion 8 + step tokens) and lifecycle
    rows per step, a kept boundary at step 2, a replacing boundary at step 4 (with its select call:
    150 + 10 tokens), direction fallbacks at test steps 2 and 5 and a training direction call
    (100 + 12 tokens) that fell back at round 1 step 3."""
    rows: list[dict[str, Any]] = [
        {
            "phase": "train",
            "round": 1,
            "step": 3,
            "kind": "direction",
            "call_type": "direction",
            "fallback": "invalid reply: cut at max_tokens",
            "request_key": "t1",
            "prompt_tokens": 100,
            "completion_tokens": 12,
        },
    ]
    for i, (p, s, lv) in enumerate(zip(pairs, scores, levels, strict=True)):
        step = i + 1
        rows.append(
            {
                "phase": "test",
                "step": step,
                "date": DATES[i],
                "kind": "direction",
                "pair": p,
                "call_type": "direction",
                "fallback": "invalid reply: invalid JSON" if step in (2, 5) else "",
                "request_key": f"k{step}",
                "prompt_tokens": 90 + 2 * step,
                "completion_tokens": 8 + step,
            }
        )
        if step == 2:
            rows.append(
                {
                    "phase": "test",
                    "step": 2,
                    "kind": "boundary",
                    "pair": p,
                    "decision": json.dumps({"keep": True}),
                }
            )
        if step == 4:
            rows.append(
                {
                    "phase": "test",
                    "step": 4,
                    "kind": "boundary",
                    "pair": pairs[2],
                    "decision": json.dumps({"keep": False}),
                }
            )
            rows.append(
                {
                    "phase": "test",
                    "step": 4,
                    "kind": "select",
                    "pair": p,
                    "call_type": "pair_selection",
                    "request_key": "s4",
                    "prompt_tokens": 150,
                    "completion_tokens": 10,
                    "state_before": pairs[2],
                    "state_after": p,
                }
            )
        rows.append(
            {
                "phase": "test",
                "step": step,
                "kind": "lifecycle",
                "pair": p,
                "decision": json.dumps({"break_score": s, "level": lv, "replace": False}),
            }
        )
    return rows


def moira_extra(n_test: int, *, accepted: int, variant: str = "full") -> dict[str, Any]:
    """Moira's extra: tokens by call type (train + test, and the test phase), fallbacks by phase."""
    test = {
        "direction": {"calls": n_test, "prompt_tokens": 100 * n_test, "completion_tokens": 10 * n_test},
        "pair_selection": {"calls": 2, "prompt_tokens": 300, "completion_tokens": 20},
    }
    train = {
        "direction": {"calls": 5, "prompt_tokens": 500, "completion_tokens": 50},
        "reflection": {"calls": 1, "prompt_tokens": 200, "completion_tokens": 40},
    }
    total: dict[str, dict[str, int]] = {}
    for part in (train, test):
        for k, v in part.items():
            t = total.setdefault(k, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for key in t:
                t[key] += v[key]
    return {
        "variant": variant,
        "accepted_policy_updates": accepted,
        "tokens_by_call_type": total,
        "test": {"tokens_by_call_type": test, "fallbacks_by_call_type": {"direction": 2}},
        "train": {"tokens_by_call_type": train, "fallbacks_by_call_type": {"direction": 1}},
    }


#: LONG_SHORT returns of the fixture pair (both exposures use them; the beta ones are halved)
LS = (0.01, -0.02, 0.03, 0.0, 0.015, -0.005)
PAIRS_MOIRA = ("AAA/BBB", "AAA/BBB", "AAA/BBB", "CCC/DDD", "CCC/DDD", "CCC/DDD")
PAIR = ("AAA/BBB",) * 6
MOIRA_ACTIONS = {
    0: ("LONG_SHORT", "SHORT_LONG", "LONG_SHORT", "FLAT", "LONG_SHORT", "SHORT_LONG"),  # best run
    1: ("SHORT_LONG", "SHORT_LONG", "FLAT", "FLAT", "LONG_SHORT", "FLAT"),  # middle
    2: ("SHORT_LONG", "LONG_SHORT", "SHORT_LONG", "FLAT", "FLAT", "LONG_SHORT"),  # worst
}


def experiment(
    root: Path, *, with_moira: bool = True, exposures: Sequence[str] = ("no_beta", "beta")
) -> Path:
    """A demo-shaped experiment folder: Moira (3 seeds, both exposures, training.json,
    trace.parquet) and the five baselines (EG-DDQN with its training curve), plus summary.json
    and manifest.json."""
    root.mkdir(parents=True, exist_ok=True)
    for e in exposures:
        scale = 1.0 if e == "no_beta" else 0.5
        ls = [scale * r for r in LS]
        if with_moira:
            for seed, acts in MOIRA_ACTIONS.items():
                write_run(
                    root,
                    f"full-{e}-s{seed}",
                    pair_steps(ls, acts, PAIRS_MOIRA, fallback=[i in (1, 4) for i in range(6)]),
                    kind="moira",
                    method="moira",
                    exposure=e,
                    seed=seed,
                    extra=moira_extra(6, accepted=seed),
                    training=moira_training([0.02, 0.01, 0.03, None], [True, False, True, False]),
                    trace=moira_trace(
                        PAIRS_MOIRA,
                        [0.0, 0.34, 1.0, 0.0, 0.67, 0.0],
                        ["HEALTHY", "HEALTHY", "BREAK", "HEALTHY", "WARNING", "HEALTHY"],
                    ),
                )
        base = {"pool": ["AAA", "BBB", "CCC", "DDD"], "pair": "AAA/BBB", "no_candidate": False}
        write_run(
            root,
            f"long_short-{e}-seed0",
            pair_steps(ls, ["LONG_SHORT"] * 6, PAIR),
            method="long_short",
            exposure=e,
            extra=base,
        )
        write_run(
            root,
            f"short_long-{e}-seed0",
            pair_steps(ls, ["SHORT_LONG"] * 6, PAIR),
            method="short_long",
            exposure=e,
            extra=base,
        )
        write_run(
            root,
            f"equal_weight-{e}-seed0",
            pool_steps([0.004, -0.001, 0.002, 0.003, -0.002, 0.001]),
            method="equal_weight",
            exposure=e,
            extra=base | {"pair": ""},
        )
        egz = ("FLAT", "FLAT", "SHORT_LONG", "SHORT_LONG", "FLAT", "FLAT")
        write_run(root, f"eg_z-{e}-seed0", pair_steps(ls, egz, PAIR), method="eg_z", exposure=e, extra=base)
        dq = ("LONG_SHORT", "FLAT", "LONG_SHORT", "LONG_SHORT", "SHORT_LONG", "FLAT")
        curve = [
            {
                "episode": k + 1,
                "epsilon": 1 - 0.3 * k,
                "return": -0.01 + 0.01 * k,
                "greedy_return": 0.01 * k,
                "loss": None if k == 0 else 0.1 / k,
                "updates": 10 * k,
                "transitions": 40,
            }
            for k in range(4)
        ]
        write_run(
            root,
            f"eg_ddqn-{e}-seed0",
            pair_steps(ls, dq, PAIR),
            method="eg_ddqn",
            exposure=e,
            extra=base,
            training={"method": "eg_ddqn", "seed": 0, "exposure": e, "episodes": curve},
        )
    if with_moira:
        engine = [
            {
                "call_type": "direction",
                "calls": 40,
                "prompt_tokens": 4000,
                "completion_tokens": 400,
                "cached_tokens": 1200,
                "latency_s": 2.5,
                "fallbacks": 3,
            },
            {
                "call_type": "pair_selection",
                "calls": 4,
                "prompt_tokens": 600,
                "completion_tokens": 40,
                "cached_tokens": 0,
                "latency_s": 0.5,
                "fallbacks": 0,
            },
        ]
        write_json(root / "summary.json", {"experiment": "fixture", "tokens_by_call_type_engine": engine})
        write_json(
            root / "manifest.json",
            {
                "model": {"key": "tiny-qwen3"},
                # a six-session validation cycle, as the demo's (the paper's is 23)
                "config": {"lifecycle": {"warning_factors": 2, "break_factors": 3, "validation_period": 6}},
            },
        )
    return root
