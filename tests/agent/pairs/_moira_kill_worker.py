"""Child process of the kill test (not a test): runs a small Moira experiment on the scripted
model; with a gate N > 0 its N-th backend call writes a marker file and blocks, so the test can
kill -9 the process while that call is in flight. Every request key passed on to the model is
appended (and fsynced) to a log, one line per engine call, so the test can prove nothing
journaled is asked again."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from moira_support import scripted

from agent.pairs.experiment.config import load_config
from agent.pairs.experiment.run import run_experiment


class _Gate:
    def __init__(self, inner, gate: int, marker: Path, sent_log: Path) -> None:
        self.inner, self.gate, self.marker, self.sent_log = inner, gate, marker, sent_log
        self.name = inner.name
        self.calls = 0

    def chat(self, requests):
        self.calls += 1
        if self.calls == self.gate:
            self.marker.write_text("in flight")
            while True:  # the test kills the process group here
                time.sleep(3600)
        with open(self.sent_log, "a", encoding="utf-8") as f:
            f.write(" ".join(r.key() for r in requests) + "\n")  # one line per engine call
            f.flush()
            os.fsync(f.fileno())
        return self.inner.chat(requests)

    def close(self) -> None:
        return None


def main(config: str, out: str, gate: int, marker: str, sent_log: str) -> None:
    cfg = load_config(config)
    text = Path(config).read_text(encoding="utf-8")
    backend = _Gate(scripted(), gate, Path(marker), Path(sent_log))
    run_experiment(cfg, out, config_text=text, backend=backend, resume=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
