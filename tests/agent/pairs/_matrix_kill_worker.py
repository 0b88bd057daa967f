"""Child process of the matrix kill test (not a test): runs a matrix file on the scripted model
with a gated backend (see matrix_support.GatedFactory), always with resume=True."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from matrix_support import GatedFactory

from agent.pairs.experiment.matrix import run_matrix
from agent.pairs.experiment.matrix_config import load_matrix
from agent.report.matrix_summary import write_matrix_summary


def main(config: str, out: str, gate: int, marker: str, sent_log: str, base_url: str = "") -> None:
    cfg = load_matrix(config)
    text = Path(config).read_text(encoding="utf-8")
    factory = GatedFactory(gate, Path(marker), Path(sent_log), base_url)
    run_matrix(cfg, out, config_text=text, resume=True, backend_factory=factory, summary=write_matrix_summary)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], *sys.argv[6:])
