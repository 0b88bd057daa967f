"""The serving benchmark's PNG: output tokens/s against concurrency for each backend, and time to
first token / inter-token latency where a backend can observe them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_serving"]

_STYLE = {"vllm": ("tab:blue", "o"), "openai": ("tab:green", "s"), "transformers": ("tab:red", "^")}


def plot_serving(points: Sequence[dict[str, Any]], path: str | Path, *, title: str = "") -> Path:
    """Write the plot of the concurrency-sweep ``points`` (dicts with backend, concurrency,
    output_tokens_per_s, ttft_p50_ms, itl_p50_ms, backend_label) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = [p for p in points if p["case"] == "concurrency_sweep"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in ("vllm", "openai", "transformers"):
        pts = sorted((p for p in sweep if p["backend"] == name), key=lambda p: p["concurrency"])
        if not pts:
            continue
        color, marker = _STYLE[name]
        xs = [p["concurrency"] for p in pts]
        ax1.plot(
            xs,
            [p["output_tokens_per_s"] for p in pts],
            marker=marker,
            color=color,
            label=pts[0]["backend_label"],
        )
        ttft = [(p["concurrency"], p["ttft_p50_ms"]) for p in pts if p.get("ttft_p50_ms") is not None]
        itl = [(p["concurrency"], p["itl_p50_ms"]) for p in pts if p.get("itl_p50_ms") is not None]
        if ttft:
            ax2.plot(*zip(*ttft), marker=marker, color=color, label=f"{name} TTFT p50")
        if itl:
            ax2.plot(*zip(*itl), marker=marker, color=color, linestyle="--", label=f"{name} ITL p50")
    levels = sorted({p["concurrency"] for p in sweep})
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(levels, [str(c) for c in levels])
        ax.set_xlabel("concurrency (requests in flight)")
        ax.grid(True, alpha=0.3)
    ax1.set_ylabel("output tokens/s")
    ax1.set_title("throughput")
    ax1.legend(fontsize=8)
    ax2.set_yscale("log")
    ax2.set_ylabel("ms")
    ax2.set_title("time to first token / inter-token latency")
    if ax2.lines:
        ax2.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
