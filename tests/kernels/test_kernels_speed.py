"""The machine's speed index lives with the kernels and is the benchmark's one-window figure."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.speed import SPEED_WINDOW, speed_index_us, synthetic_panel


def test_the_benchmark_builds_its_panels_with_the_speed_index_panel():
    import bench.kernels.speed

    assert bench.kernels.speed.synthetic_panel is synthetic_panel
    a, b = synthetic_panel(3, 50, 0), synthetic_panel(3, 50, 0)
    assert a.shape == (50, 3) and np.array_equal(a, b)
    assert not np.array_equal(a, synthetic_panel(3, 50, 1))


def test_the_speed_index_times_one_window():
    us = speed_index_us(repeats=3)
    assert 0 < us < 1e6 and SPEED_WINDOW == 2520
    with pytest.raises(ValueError, match="repeats=0"):
        speed_index_us(repeats=0)
