"""The shared run-folder records round-trip."""

from __future__ import annotations

import math

from agent.pairs.market.metrics import compute_metrics
from agent.pairs.market.records import StepRecord, read_json, read_steps, run_summary, write_json, write_steps


def test_steps_and_summary_round_trip(tmp_path):
    recs = [
        StepRecord(1, "2020-01-02", "A/B", "LONG_SHORT", 0.01, -0.01, 0.01, 1.01, "LONG_SHORT", True),
        StepRecord(2, "2020-01-03", "", "FLAT", 0.0, 0.0, 0.0, 1.01, "FLAT", True, fallback=True),
    ]
    assert read_steps(write_steps(tmp_path / "r" / "steps.parquet", recs)) == recs
    m = compute_metrics([0.0, 0.0])
    doc = run_summary(run_id="x", kind="baseline", method="eg_z", exposure="no_beta", seed=0, metrics=m)
    assert math.isnan(m.sharpe) and doc["metrics"]["sharpe"] is None
    assert read_json(write_json(tmp_path / "metrics.json", doc)) == doc
