"""Fixtures of the fault tests: the helpers of the Moira tests on the path, a fake OpenAI
server per test, and the uninterrupted reference run (once per test process)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agent" / "pairs"))  # moira_support, matrix_support
sys.path.insert(0, str(HERE))

from fake_openai import FakeOpenAI  # noqa: E402
from faults_support import chunks, openai_config  # noqa: E402


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI server on 127.0.0.1 (no API key), closed after the test."""
    srv = FakeOpenAI(api_key=None)
    yield srv
    srv.close()


@dataclass(frozen=True)
class Reference:
    """The uninterrupted run: its folder, the requests it sent and its journal's chunk sizes."""

    out: Path
    requests: int
    chunks: list[int]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The small experiment run once without a fault, through the CLI against a fake server."""
    from localfin_cli.main import main

    srv = FakeOpenAI(api_key=None)
    try:
        root = tmp_path_factory.mktemp("reference")
        config = openai_config(root, srv.base_url)
        code = main(["pairs", "run", "--config", str(config), "--out", str(root / "exp")])
        assert code == 0
        return Reference(root / "exp", srv.n, chunks(root / "exp" / "journal.sqlite"))
    finally:
        srv.close()
