"""PNG plots of retrieval analytics (matplotlib, Agg backend, imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bank.schema import SnapshotRow

__all__ = ["plot_sweep"]


def plot_sweep(rows: Sequence[SnapshotRow], out_dir: Path) -> list[Path]:
    """Hit rate, mean entries and adjacent Jaccard against bank size, one line per tau.
    Writes ``hit_rate.png``, ``mean_entries.png``, ``jaccard.png`` into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    taus = sorted({r.tau for r in rows})
    paths = []
    for attr, label, name in (
        ("hit_rate", "hit rate H_n", "hit_rate.png"),
        ("mean_entries", "mean entries per query E_n", "mean_entries.png"),
        ("jaccard_prev", "adjacent-snapshot Jaccard", "jaccard.png"),
    ):
        fig, ax = plt.subplots(figsize=(6, 4))
        for tau in taus:
            pts = [(r.n, getattr(r, attr)) for r in rows if r.tau == tau and getattr(r, attr) is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=f"tau={tau:.2f}")
        ax.set_xlabel("bank size n (entries)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
