"""The small-window kernel tests again with NUMBA_DISABLE_JIT=1: the kernels' Python source
(what the JIT compiles) must give the same answers as the compiled code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SELECTED = [
    "test_kernels_coint.py::test_eg_small_matches_reference",
    "test_kernels_coint.py::test_adf_small_matches_reference",
    "test_kernels_coint.py::test_pool_and_rolling_forms_equal_single_calls_small",
    "test_kernels_coint.py::test_constant_leg_and_nan_windows_give_nan",
    "test_kernels_rolling.py::test_rolling_hedge_equals_exact_twin_small",
    "test_kernels_rolling.py::test_rolling_forms_handle_nan_and_constant_windows",
    "test_kernels_rolling.py::test_rolling_hedge_is_stable_far_from_zero_and_after_outliers",
    "test_kernels_sliding.py::test_sliding_matches_reference_small",
    "test_kernels_sliding.py::test_lane_path_matches_per_date_kernel_and_statsmodels_at_the_edges",
    "test_kernels_sliding.py::test_operation_counts_follow_the_loops",
    "test_kernels_sliding.py::test_vector_path_matches_per_date_kernel_and_statsmodels_at_the_edges",
]


def test_small_kernel_tests_pass_without_jit() -> None:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[str(HERE / s) for s in SELECTED]]
    done = subprocess.run(cmd, env=env, cwd=HERE.parents[1], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{len(SELECTED) + 5} passed" in done.stdout, done.stdout[-1000:]
