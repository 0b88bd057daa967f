"""Piped progress of a Moira experiment (the demo's Moira part): a short real run on the scripted
model with an injected clock that each engine call moves by 7 s. The heartbeat is driven as its
daemon thread drives it (a beat per clock second while a call runs), and the stamps of the lines
it wrote show no silence over 30 s; each heartbeat line carries rounds, calls, tokens, elapsed
time and the estimate of the time left. No wall-clock timing is involved."""

from __future__ import annotations

import io
import re

from moira_support import scripted, small_config, small_store

from agent.pairs.experiment.run import run_experiment
from localfin.progress import LineProgress

CALL_S = 7  # clock seconds each engine call takes


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Stamped(io.StringIO):
    """A pipe that stamps each line with the clock at the moment it was written."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.clock, self.stamps = clock, []

    def write(self, s: str) -> int:
        self.stamps += [(self.clock(), line) for line in s.splitlines() if line]
        return super().write(s)


class _SlowEngine:
    """The scripted model behind a clock: every call takes CALL_S clock seconds, during which
    the heartbeat is given a beat per second (what its thread does while the main thread waits)."""

    def __init__(self, inner, clock: _Clock, progress: LineProgress) -> None:
        self.inner, self.clock, self.progress, self.name = inner, clock, progress, inner.name

    def chat(self, requests):
        for _ in range(CALL_S):
            self.clock.now += 1.0
            self.progress.beat()
        return self.inner.chat(requests)

    def close(self) -> None:
        return None


def test_piped_progress_of_a_moira_run_is_never_silent_for_30_s(tmp_path) -> None:
    clock = _Clock()
    pipe = _Stamped(clock)
    prog = LineProgress(pipe, stages_only=True, clock=clock, heartbeat_thread=False)
    cfg, text = small_config(small_store())
    engine = _SlowEngine(scripted(), clock, prog)
    with prog.task("Moira"):
        run_experiment(cfg, tmp_path / "exp", config_text=text, backend=engine, progress=prog)
    stamps = pipe.stamps
    beats = [line for _, line in stamps if line.startswith("  ... ")]
    assert clock.now > 600 and len(beats) >= clock.now // 31  # a long run, and it kept talking
    times = [0.0] + [t for t, _ in stamps]
    assert max(b - a for a, b in zip(times, times[1:])) <= 30.0
    pattern = re.compile(
        r"^  \.\.\. Moira / sessions: \d+/\d+, \d+ rounds, \d+ calls, \d+ tokens, "
        r"(\d+m\d\ds|\d+s) elapsed(, ~(\d+m\d\ds|\d+s) left)?$"
    )
    assert all(pattern.match(line) for line in beats), beats[:3]
    assert any("left" in line for line in beats)
    assert stamps[-1][1].startswith("  Moira: (") and len(stamps) == len(beats) + 1
