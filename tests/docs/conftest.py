"""Fixtures of the documentation tests: the CPU demo, run once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from docs_examples import ROOT, TIMEOUT_S, base_env, run_group


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory) -> Path:
    """The CPU demo as `localfin demo --out DIR` runs it (once per session; what it printed is in
    ``demo.out`` beside the folder); the pages replay copies of it. ``LOCALFIN_TEST_DEMO``: a
    demo folder this checkout made already (with its ``demo.out``), used instead of a new run."""
    given = os.environ.get("LOCALFIN_TEST_DEMO")
    if given:
        assert (Path(given).parent / "demo.out").is_file(), f"no demo.out beside {given}"
        return Path(given)
    out = tmp_path_factory.mktemp("demo") / "demo"
    proc = run_group(
        [str(ROOT / ".venv" / "bin" / "localfin"), "demo", "--out", str(out)],
        cwd=out.parent,
        env=base_env(out.parent),
        timeout=TIMEOUT_S["slow"],
    )
    (out.parent / "demo.out").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out
