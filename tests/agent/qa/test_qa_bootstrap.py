"""Bootstrap intervals: against the binomial normal approximation, paired differences, FinMME's
Avg on a draw equal to the scorer's, and reproducible with the seed; and the 80/20 hold-out of
benchmarks that ship no split."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.qa.analysis.bootstrap import accuracy_metric, bootstrap, finmme_metric, interval
from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.data.holdout import hold_out
from agent.qa.loaders.finmme import FINMME_DIMENSIONS
from agent.qa.scoring.scoring import finmme_avg
from localfin.errors import ConfigError


def test_accuracy_interval_matches_the_normal_approximation() -> None:
    correct = [i % 2 == 0 for i in range(400)]  # p = 0.5, n = 400: half-width 1.96 * 0.025 = 0.049
    dist = bootstrap({"a": [accuracy_metric(correct)]}, [400], resamples=4000)
    iv = interval(0.5, dist["a"])
    assert iv.contains(0.5) and iv.high - iv.low == pytest.approx(2 * 1.96 * math.sqrt(0.25 / 400), abs=0.01)
    again = bootstrap({"a": [accuracy_metric(correct)]}, [400], resamples=4000)
    assert np.array_equal(dist["a"], again["a"])  # seed 0: the same intervals every run
    assert (
        interval(1.0, bootstrap({"x": [accuracy_metric([True] * 50)]}, [50], resamples=200)["x"]).low == 1.0
    )


def test_paired_differences_cancel_shared_outcomes() -> None:
    """Two runs that differ on 10 of 200 items (all gains): the paired interval of the difference
    stays above 0, while the two runs' own intervals overlap widely."""
    a = [i % 2 == 0 for i in range(200)]
    b = [x or i < 20 for i, x in enumerate(a)]  # 10 more right (the odd items below 20)
    dist = bootstrap({"a": [accuracy_metric(a)], "b": [accuracy_metric(b)]}, [200], resamples=3000)
    ia, ib = interval(np.mean(a), dist["a"]), interval(np.mean(b), dist["b"])
    assert ia.high > ib.low  # unpaired, they overlap
    d = interval(np.mean(b) - np.mean(a), dist["b"] - dist["a"])
    assert d.estimate == pytest.approx(0.05) and d.low > 0.0
    same = bootstrap({"a": [accuracy_metric(a)], "a2": [accuracy_metric(a)]}, [200], resamples=500)
    assert np.all(same["a"] == same["a2"])


def test_macro_figure_resamples_each_set() -> None:
    s1, s2 = [True] * 30 + [False] * 10, [True] * 10 + [False] * 30
    dist = bootstrap({"m": [accuracy_metric(s1), accuracy_metric(s2)]}, [40, 40], resamples=2000)
    iv = interval(0.5, dist["m"])
    assert iv.contains(0.5) and 0.35 < iv.low < 0.5 < iv.high < 0.65
    with pytest.raises(ConfigError, match="2 set metrics for 1 sets"):
        bootstrap({"m": [accuracy_metric(s1), accuracy_metric(s2)]}, [40])


def test_finmme_metric_on_the_full_sample_equals_the_scorer() -> None:
    rng = np.random.default_rng(3)
    dims = [(("compre", "fg", "reason")[i % 3], ("single", "multi", "cal")[(i // 3) % 3]) for i in range(60)]
    correct = [bool(x) for x in rng.integers(0, 2, 60)]
    m = finmme_metric(correct, dims, FINMME_DIMENSIONS)
    want = finmme_avg([Gold("A", "choice", extra={"dimensions": d}) for d in dims],
                      [ItemScore(c, float(c), "") for c in correct]).avg  # fmt: skip
    assert m(np.arange(60)[None, :])[0] == pytest.approx(want)
    assert want != pytest.approx(np.mean(correct))  # the Avg is not the item accuracy here


def _items(n: int) -> list[QAItem]:
    return [QAItem(Question(f"id-{i}", "finmme", "Which?"), Gold("A", "choice"), "test") for i in range(n)]


def test_hold_out_is_a_fixed_disjoint_partition_of_the_papers_sizes() -> None:
    items = _items(5676)  # FinTMMBench's release: the paper tests on 1,136 = ceil(20 %)
    test, train = hold_out(items, 0.2, "test"), hold_out(items, 0.2, "train")
    assert len(test) == 1136 and len(train) == 4540
    assert not {i.item_id for i in test} & {i.item_id for i in train}
    assert {i.split for i in test} == {"test"} and {i.split for i in train} == {"train"}
    assert len(hold_out(_items(11099), 0.2, "test")) == 2220  # FinMME's release: the paper's 2,220
    shuffled = list(reversed(items))
    assert {i.item_id for i in hold_out(shuffled, 0.2, "test")} == {i.item_id for i in test}  # not file order
    assert [i.item_id for i in test] == [i.item_id for i in items if i.item_id in {t.item_id for t in test}]
    with pytest.raises(ConfigError, match="allowed: train, test"):
        hold_out(items, 0.2, "dev")
