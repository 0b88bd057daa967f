"""A FinAcumen plan shrunk onto the bundled demo set, for ``localfin reproduce smoke``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.reproduce.spec import QAPlan

__all__ = ["shrink_plan"]


def shrink_plan(
    plan: QAPlan, demo_dir: Path, *, model: str, n_items: int, max_steps: int, store: Path | None = None
) -> QAPlan:
    """The plan on the bundled demo set: the first bank source reads 2 train items, the first two
    sets ``n_items`` test items each (labelled ``demo as <set>``, so no paper figure is printed
    beside a smoke figure); bank-size snapshots become 0/2/4, k_max and tau are kept. The tools
    are the paper's that the demo set can use: Python, OCR + reparse and, with ``store`` (a
    small market store), lookup over it; OCR by rapidocr (the CPU model takes no images). The
    solver's lengths and the Base budget take the CPU model's bounds; the Base protocol is the
    config's."""
    bank = tuple(
        replace(s, dataset="demo", path=str(demo_dir), split="train", subset=None, limit=2, test_share=0.0)
        for s in plan.bank[:1]
    )
    sets = tuple(
        replace(
            s,
            label=f"demo as {s.label}",
            dataset="demo",
            path=str(demo_dir),
            split="test",
            subset=None,
            limit=n_items,
            test_share=0.0,
        )
        for s in plan.sets[:2]
    )
    sizes = tuple(sorted({0, 2, 4})) if plan.bank_sizes else ()
    tools = ("python", "lookup", "reparse") if store is not None else ("python", "reparse")
    # the CPU model's bounds (small models loop on long replies); the Base protocol stays
    return replace(
        plan, model=model, backend="vllm", max_steps=max_steps, tools=tools, store=str(store or ""),
        bank_k=2, bank_sizes=sizes, bank=bank, sets=sets, judge_model="", judge_check_items=0,
        thought_chars=120, observation_chars=600, gate_rejections=1, base_max_tokens=256, ocr="rapidocr",
    )  # fmt: skip
