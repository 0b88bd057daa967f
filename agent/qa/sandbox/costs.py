"""What the sandbox costs: start-up of a worker and one round trip, against plain references
measured in the same run (so a loaded machine shows as a ratio, not as a wrong figure).

Command (the figures of docs/sandbox.md came from it)::

    .venv/bin/python -c "from agent.qa.sandbox.costs import measure_costs; print(measure_costs())"
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from agent.qa.sandbox.config import SandboxConfig
from agent.qa.sandbox.session import SandboxSession

__all__ = ["measure_costs"]


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 3)


def measure_costs(config: SandboxConfig | None = None, *, starts: int = 10, calls: int = 200) -> dict:
    """Median milliseconds of: starting a sandboxed worker until it is ready
    (``start_ms``); one call of ``x = 1 + 1`` (``call_ms``); one call of a small pandas
    computation once pandas is imported (``pandas_call_ms``); and, as references, starting the
    same base interpreter unsandboxed with ``-S -c pass`` (``plain_python_start_ms``).
    ``start_ratio`` is start_ms / plain_python_start_ms. ``load_1min`` is the machine's load.

    Raises:
        SandboxUnavailable: no sandbox here.
    """
    if starts < 1 or calls < 1:
        raise ValueError(f"starts and calls must be >= 1, got starts={starts}, calls={calls}")
    config = config or SandboxConfig()
    exe = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    plain: list[float] = []
    for _ in range(starts):
        t0 = time.perf_counter()
        subprocess.run([exe, "-S", "-c", "pass"], check=True)
        plain.append(time.perf_counter() - t0)
    start: list[float] = []
    call: list[float] = []
    pandas_call: list[float] = []
    for i in range(starts):
        with SandboxSession(config) as session:
            t0 = time.perf_counter()
            session.start()
            start.append(time.perf_counter() - t0)
            if i == 0:
                for _ in range(calls):
                    t0 = time.perf_counter()
                    session.execute("x = 1 + 1")
                    call.append(time.perf_counter() - t0)
                session.execute("import pandas as pd\ns = pd.Series(range(100), dtype=float)")
                for _ in range(max(1, calls // 10)):
                    t0 = time.perf_counter()
                    session.execute("float(s.pct_change().dropna().mean())")
                    pandas_call.append(time.perf_counter() - t0)
    out = {
        "start_ms": _median_ms(start),
        "call_ms": _median_ms(call),
        "pandas_call_ms": _median_ms(pandas_call),
        "plain_python_start_ms": _median_ms(plain),
        "starts": starts,
        "calls": calls,
        "load_1min": round(os.getloadavg()[0], 2),
    }
    out["start_ratio"] = round(out["start_ms"] / out["plain_python_start_ms"], 2)
    return out
