"""The Markdown tables of ``localfin bench tokens`` (``tokens.md``): prompt and chat tokens per
test step, Table 10 as the paper computes it (with the CPU model's replies, and with replies of
backbone length, a declared estimate), the calls by type, and FinMem's fixed prompt text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BACKBONE_REPLY_TOKENS", "CYCLE", "PAPER_RATIO", "tokens_table", "scaffolding_table"]

#: Moira's chat tokens over FinMem's in the paper's A1 test ("approximately one quarter").
PAPER_RATIO = 0.25
#: Steps of the validation cycle of Table 10.
CYCLE = 23
#: A declared estimate (ours, not a measurement) of the tokens a non-thinking GPU backbone writes
#: for one reply of each call type: its JSON with a reason of a few sentences (the reflection: a
#: short reflection and up to three principles). The CPU model's replies are bounded for its
#: small context and stand in for a backbone's only in what later prompts hold; Table 10 is also
#: given with replies of this length. ``--reply-tokens CALL=N`` changes one.
BACKBONE_REPLY_TOKENS = {
    "pair_selection": 120,
    "direction": 120,
    "reflection": 250,
    "break_check": 150,
    "news_verify": 120,
    "finmem_decision": 120,
    "finmem_reflection": 100,
}


def tokens_table(
    results: Mapping[str, Mapping[str, Any]], replies: Mapping[str, int] = BACKBONE_REPLY_TOKENS
) -> str:
    """Markdown: per tokenizer, prompt tokens per finalized test step of each system and the
    ratio beside the paper's; Table 10 as the paper computes it (chat tokens, per cycle); the
    calls by type."""
    lines = [
        "| tokenizer | Moira prompt tokens / test step | FinMem prompt tokens / test step "
        "| Moira / FinMem | paper (A1 test, chat tokens) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, by in results.items():
        m, f = by["moira"], by["finmem"]
        ratio = m.per_step / f.per_step
        lines.append(
            f"| {name} | {m.per_step:,.0f} | {f.per_step:,.0f} | {ratio:.2f} | about {PAPER_RATIO:.2f} |"
        )
    lines += [
        "",
        "| tokenizer | Moira chat tokens / test step | FinMem chat tokens / test step | Moira / FinMem "
        f"(full test) | Moira per {CYCLE}-step cycle (test total / steps x {CYCLE}) | FinMem per cycle "
        "(mean of its first complete cycles) | Moira / FinMem (per cycle) | paper (A1 test) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, by in results.items():
        m, f = by["moira"], by["finmem"]
        fc, n = f.first_cycles()
        per_cycle = m.cycle_by_formula / fc if n else float("nan")
        cycles = f"{fc:,.0f} ({n} cycle{'s' if n != 1 else ''})" if n else "no complete cycle"
        lines.append(
            f"| {name} | {m.chat_per_step:,.0f} | {f.chat_per_step:,.0f} | "
            f"{m.chat_total / f.chat_total:.2f} | {m.cycle_by_formula:,.0f} | {cycles} | "
            f"{per_cycle:.2f} | about {PAPER_RATIO:.2f} |"
        )
    lines += [
        "",
        "With replies of backbone length (a declared estimate, tokens a reply: "
        + ", ".join(f"{k} {v}" for k, v in replies.items())
        + "):",
        "",
        "| tokenizer | Moira chat tokens / test step | FinMem chat tokens / test step | Moira / FinMem "
        f"(full test) | Moira per {CYCLE}-step cycle | FinMem per cycle | Moira / FinMem (per cycle) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, by in results.items():
        m, f = by["moira"], by["finmem"]
        fc, n = f.first_cycles(estimated=True)
        m_cycle = m.chat_total_est / m.steps * CYCLE if m.steps else float("nan")
        full = m.chat_total_est / f.chat_total_est if f.chat_total_est else float("nan")
        cycle = f"{fc:,.0f}" if n and fc else "no complete cycle"
        lines.append(
            f"| {name} | {m.chat_total_est / m.steps:,.0f} | {f.chat_total_est / f.steps:,.0f} | "
            f"{full:.2f} | {m_cycle:,.0f} | {cycle} | {m_cycle / fc if n and fc else float('nan'):.2f} |"
        )
    lines += [
        "",
        "| tokenizer | system | call type | test calls | prompt tokens | per test step | completion tokens |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for name, by in results.items():
        for st in by.values():
            for call in sorted(st.tokens):
                lines.append(
                    f"| {name} | {st.system} | {call} | {st.calls[call]} | {st.tokens[call]:,} | "
                    f"{st.tokens[call] / st.steps:,.0f} | {st.completion.get(call, 0):,} |"
                )
    return "\n".join(lines)


def scaffolding_table(rows: Mapping[str, Mapping[str, int]]) -> str:
    """FinMem's decision prompt's fixed text: ours beside FinMem's own (``--finmem-code``)."""
    lines = [
        "FinMem decision prompt, fixed text (scaffolding), tokens: ours (pairs_finmem_decision.yaml) and "
        "FinMem's own (its code's prompt strings; without the guard library's JSON suffix and schema):",
        "",
        "| tokenizer | ours | FinMem's | ours / FinMem's |",
        "|---|---:|---:|---:|",
    ]
    for name, r in rows.items():
        theirs, ours = r.get("finmem"), r["ours"]
        ratio = f"{ours / theirs:.2f}" if theirs else "-"
        lines.append(f"| {name} | {ours:,} | {f'{theirs:,}' if theirs else '-'} | {ratio} |")
    return "\n".join(lines)
