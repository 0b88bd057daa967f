"""Plot the equity curve of every run of a finished Moira experiment.

    python examples/equity_curve.py EXPERIMENT_FOLDER [--out equity.png] [--exposure no_beta]

Reads the experiment's ``runs.csv`` (one row per run: method, variant, exposure, seed, metrics)
and each run's ``steps.parquet`` (one row per test transition, with the equity after it), and
draws one line per run, the agent's runs solid and the baselines dashed, each labelled with its
cumulative return. Uses only pandas and matplotlib besides localfin's loaders.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from agent import api


def plot(folder: Path, out: Path, exposure: str | None = None) -> Path:
    runs = api.load_runs(folder)
    if exposure is not None:
        runs = runs[runs["exposure"] == exposure]
    if runs.empty:
        which = f" with exposure {exposure}" if exposure else ""
        raise SystemExit(f"no runs in {folder / 'runs.csv'}{which}")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for row in runs.itertuples():
        steps = api.load_run(folder / "runs" / row.run_id).steps
        style = "-" if row.kind == "moira" else "--"
        label = f"{row.run_id} ({row.cumulative_return:+.1%})"
        ax.plot(steps["date"].astype("datetime64[ns]"), steps["equity"], style, label=label)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_ylabel("equity (start = 1)")
    ax.set_title(f"{folder.name}: equity after each test session")
    ax.legend(fontsize=7, loc="best")
    fig.autofmt_xdate()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a finished experiment folder (holds runs.csv)")
    ap.add_argument("--out", type=Path, default=Path("equity.png"), help="the PNG to write")
    ap.add_argument("--exposure", default=None, help="only runs of this exposure (no_beta or beta)")
    args = ap.parse_args(argv)
    print(plot(args.folder, args.out, args.exposure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
