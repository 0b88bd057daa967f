"""Package surface: __all__, cheap import, no confusion with Hugging Face's `kernels` hub."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kernels
from kernels._mackinnon import CRIT_C2, PVALUE_C2, mackinnon_crit, mackinnon_pvalue


def test_all_names_resolve_and_nothing_else_is_exported() -> None:
    for name in kernels.__all__:
        assert getattr(kernels, name) is not None
    assert sorted(dir(kernels)) == sorted(kernels.__all__)
    with pytest.raises(AttributeError):
        kernels.get_kernel  # noqa: B018  (the hub's API must not appear here)


def test_import_is_cheap_and_hub_imports_fail() -> None:
    code = (
        "import sys, kernels\n"
        "assert 'numba' not in sys.modules and 'kernels.coint' not in sys.modules\n"
        "for name in ('get_kernel', 'use_kernel_forward_from_hub', 'LayerRepository'):\n"
        "    try:\n"
        "        exec(f'from kernels import {name}')\n"
        "    except ImportError:\n"
        "        pass\n"
        "    else:\n"
        "        raise SystemExit(name)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_transformers_does_not_take_us_for_its_kernels_hub() -> None:
    import_utils = pytest.importorskip("transformers.utils.import_utils")
    assert import_utils.is_kernels_available() is False


def test_mackinnon_tables_match_statsmodels() -> None:
    adfvalues = pytest.importorskip("statsmodels.tsa.adfvalues")
    for stat in (-25.0, -5.0, -3.3, -2.62, -2.0, 0.5, 1.0):
        assert mackinnon_pvalue(stat, PVALUE_C2) == pytest.approx(
            adfvalues.mackinnonp(stat, "c", N=2), abs=1e-12
        )
    for nobs in (29, 250, 2519):
        assert mackinnon_crit(nobs, CRIT_C2) == pytest.approx(
            tuple(adfvalues.mackinnoncrit(2, "c", nobs)), abs=1e-12
        )
