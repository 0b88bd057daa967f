"""Shared helpers of the matrix tests (not a conftest): a small matrix file on the small market,
picklable backend factories (Ray ships them to its workers), and a gated backend for the kill
test."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from moira_support import WINDOWS, scripted, toml_text

#: A short window set on the small market (test window of 30 sessions) and a second one later.
SHORT = {**WINDOWS, "test_end": "2015-02-27"}
LATER = {
    "train_start": "2015-02-02",
    "train_end": "2015-02-20",
    "test_start": "2015-02-23",
    "test_end": "2015-03-20",
}


def matrix_text(
    store: Path,
    model_path: Path,
    *,
    seeds: tuple[int, ...] = (0, 1),
    exposures: tuple[str, ...] = ("no_beta", "beta"),
    **extra: dict[str, Any],
) -> str:
    """2 backbones (the CPU model's key and the tiny Qwen3 at ``model_path``) x 2 windows sets x
    ``exposures`` (both by default) x ``seeds`` (two by default) on the small market, 1 replay
    cycle."""
    head = (
        f'[matrix]\nname = "mt"\nseeds = {list(seeds)}\n'
        f"exposures = {json.dumps(list(exposures))}\n\n"
        '[[backbones]]\nkey = "smollm2-135m"\nname = "smol"\n\n'
        f'[[backbones]]\nkey = "tiny-qwen3"\nname = "tiny"\nmodel_path = "{model_path}"\nthinking = false\n\n'
    )
    wins = "".join(
        f'[[windows]]\nname = "{name}"\n' + "".join(f'{k} = "{v}"\n' for k, v in w.items()) + "\n"
        for name, w in (("main", SHORT), ("later", LATER))
    )
    tables = {
        "experiment": {"store": str(store)},
        "model": {"temperature": 0.0},
        "policy": {"max_cycles": 1},
        "screen": {"lookback": 500, "min_sessions": 252},
        # the non-LLM baselines beside the agent (FinMem needs a model the scripted one is not)
        "baselines": {"methods": ["equal_weight", "eg_z"]},
        **extra,
    }
    return head + wins + toml_text(tables)


def scripted_factory(cell: Any, registry: Any) -> Any:
    """The scripted model for every engine (a module-level function: it pickles by reference)."""
    return scripted()


def openai_factory(cell: Any, registry: Any, *, base_url: str, api_key: str) -> Any:
    """The OpenAI client for the test server (it needs an API key)."""
    from serving.open import BackendSpec, open_backend

    return open_backend(
        BackendSpec("openai", cell.backbone.key, base_url=base_url, api_key=api_key), registry
    )


class GatedFactory:
    """Scripted backends that share one call counter: the ``gate``-th engine call of the process
    writes ``marker`` and blocks (the test kills the process there); every request key passed on
    is appended (fsynced) to ``sent_log``, one line per engine call; each engine start appends
    the count of engine calls made before it to ``sent_log`` + ``.engines``."""

    def __init__(self, gate: int, marker: Path, sent_log: Path, base_url: str = "") -> None:
        self.gate, self.marker, self.sent_log = gate, marker, sent_log
        self.base_url = base_url  # a real server (the tiny model) instead of the scripted model
        self.calls = 0

    def __call__(self, cell: Any, registry: Any) -> Any:
        with open(str(self.sent_log) + ".engines", "a", encoding="utf-8") as f:
            f.write(f"{self.calls}\n")
        return _Gated(self, registry)


class _Gated:
    def __init__(self, owner: GatedFactory, registry: Any) -> None:
        self.owner, self.name = owner, "gated"
        if owner.base_url:
            from serving.open import BackendSpec, open_backend

            spec = BackendSpec("openai", "tiny-qwen3", base_url=owner.base_url, api_key="test-key")
            self.inner = open_backend(spec, registry)
        else:
            self.inner = scripted()

    def chat(self, requests):
        o = self.owner
        o.calls += 1
        if o.calls == o.gate:
            o.marker.write_text("in flight")
            while True:  # the test kills the process group here
                time.sleep(3600)
        with open(o.sent_log, "a", encoding="utf-8") as f:
            f.write(" ".join(r.key() for r in requests) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return self.inner.chat(requests)

    def close(self) -> None:
        return None
