"""``reproduce run`` of a table with several stages on one machine: the run starts each stage's
servers, runs that stage's part of the matrix against them and stops them before the next.

The matrix's local executor (:mod:`agent.pairs.experiment.local`) runs its engine groups one
after another, opening each group's backend through a factory and closing it before the next;
:class:`ServedStages` is that factory. For a group's first cell not yet done it starts the
servers of the cell's stage on this machine (:func:`agent.reproduce.cluster_plan.node_starts` of
the run's placement: the flags ``reproduce serve`` prints), one after another, each answering
``/health`` before the next starts (:func:`serving.http.server.start_in_order`, as
:func:`agent.reproduce.node_serve.serve_node` does), and hands the cells an OpenAI client of the
cell's server (the cell's own request settings, as a Ray task's client has them). Closing that
backend stops the stage's servers and returns once their processes are gone and, where
``nvidia-smi`` answers, their GPU memory is back (:meth:`serving.http.server.ServerHandle.stop`),
so the next stage's servers find the GPUs free.

Resuming: a group whose cells are all done opens no backend (the executor's rule), so a stage
finished before a restart starts no server. A server that does not start stops the servers of
its stage already started and raises :class:`StageStartError`, naming the stage and the engine;
the stages before it are on disk (each cell's folder, its journal), and ``--resume`` goes on
from there.

Every server of the placement must be on this machine (one node, or the CPU build's ``local``);
a placement over several nodes is served node by node (``reproduce serve``, docs/cluster.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.reproduce.cluster_plan import BASE_PORT, NodeStart, node_starts
from localfin.errors import ConfigError
from serving.chat.backend import Backend
from serving.errors import BackendError

__all__ = ["StageStartError", "ServedStages", "served_stages"]

log = logging.getLogger(__name__)


class StageStartError(BackendError):
    """A server of a stage did not start (the stage and engine named; nothing computed lost)."""


class _StageBackend:
    """The cells' client of their stage's server; closing it stops the stage's servers."""

    def __init__(
        self, inner: Backend, handles: Sequence[Any], stage: int, say: Callable[[str], None]
    ) -> None:
        self._inner, self._handles, self._stage, self._say = inner, list(handles), stage, say

    def chat(self, requests: Any) -> Any:
        return self._inner.chat(requests)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            _stop(self._handles)
            self._handles = []
            self._say(f"stage {self._stage}: servers stopped, their processes gone")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _stop(handles: Sequence[Any]) -> None:
    """Stop every server of ``handles``, the last started first; a stop that fails (a process
    left, GPU memory not back in time) does not keep the others running: the first error is
    raised once all were asked."""
    first: BaseException | None = None
    for h in reversed(handles):
        try:
            h.stop()
        except Exception as exc:  # noqa: BLE001 - every server is stopped before it is raised
            first = first or exc
    if first is not None:
        raise first


def _start_in_order(
    plans: Sequence[tuple[Any, ...]], *, ready_timeout_s: float, say: Callable[[str], None]
) -> list[Any]:
    from serving.http.server import start_in_order

    return start_in_order(plans, ready_timeout_s=ready_timeout_s, say=say)


def _open_client(spec: Any, registry: Any) -> Backend:
    from serving.open import open_backend

    return open_backend(spec, registry)


@dataclass
class ServedStages:
    """The matrix's backend factory that serves each stage (module docstring). ``starts``:
    every server of the run's placement, all on this machine; ``inventory``: the placement's;
    ``logs``: where each server's log goes (``KEY-PORT.log``); ``say``: progress lines;
    ``config``: the config's name, for the messages."""

    starts: Sequence[NodeStart]
    inventory: Any
    logs: Path
    config: str = ""
    ready_timeout_s: float = 900.0
    say: Callable[[str], None] = log.info
    #: opens the cells' client of a server (None: :func:`serving.open.open_backend`)
    open_client: Callable[[Any, Any], Backend] | None = None

    def __post_init__(self) -> None:
        nodes = sorted({s.server.node for s in self.starts})
        if len(nodes) > 1:
            raise ConfigError(
                "the run starts the servers of one machine; this placement spreads them over "
                f"{', '.join(nodes)}; "
                "allowed: one machine's GPUs, or `localfin reproduce serve ... --node NODE` on each node "
                "and `localfin reproduce run ... --ray auto` (docs/cluster.md)"
            )  # fmt: skip

    def stage_of(self, key: str) -> int:
        """The stage whose servers serve engine ``key``."""
        for s in self.starts:
            if s.server.key == key:
                return s.server.stage
        raise ConfigError(
            f"no server of this placement serves {key!r}; allowed: "
            f"{', '.join(dict.fromkeys(s.server.key for s in self.starts))}"
        )

    def _start(self, stage: int, mine: Sequence[NodeStart]) -> list[Any]:
        from agent.reproduce.node_serve import check_machine, server_plans

        handles: list[Any] = []
        self.say(f"stage {stage}: starting {len(mine)} server(s): {', '.join(s.server.key for s in mine)}")
        for s in mine:
            try:
                ready = s.resolved()
                check_machine([ready])
                handles += _start_in_order(
                    server_plans([ready], self.inventory, self.logs),
                    ready_timeout_s=self.ready_timeout_s,
                    say=self.say,
                )
            except BaseException as exc:  # any failed start (or Ctrl-C): stop the stage, name it
                _stop(handles)
                if not isinstance(exc, Exception):
                    raise
                again = f"`localfin reproduce run {self.config} --resume`" if self.config else "--resume"
                raise StageStartError(
                    f"stage {stage}: the server of {s.server.key} (port {s.server.port}) did not start, so "
                    f"the stage's servers were stopped: {exc}; the stages before it are kept (their "
                    f"folders and journals); {again} goes on from this stage"
                ) from exc
        return handles

    def __call__(self, cell: Any, registry: Any) -> Backend:
        key = cell.backbone.key
        stage = self.stage_of(key)
        mine = [s for s in self.starts if s.server.stage == stage]
        (url,) = {s.url for s in mine if s.server.key == key}
        handles = self._start(stage, mine)
        spec = replace(cell.config.model.backend_spec(), kind="openai", base_url=url)
        try:
            inner = (self.open_client or _open_client)(spec, registry)
        except BaseException:
            _stop(handles)
            raise
        return _StageBackend(inner, handles, stage, self.say)  # type: ignore[return-value]


def served_stages(
    cfg: Any,
    placement: Any,
    registry: Any,
    *,
    logs: Path,
    base_port: int = BASE_PORT,
    say: Callable[[str], None] = log.info,
) -> ServedStages:
    """The :class:`ServedStages` of ``cfg`` on ``placement`` (its servers as ``reproduce serve``
    starts them, from ``base_port``)."""
    starts = node_starts(cfg, placement, registry, base_port=base_port)
    return ServedStages(starts, placement.inventory, logs, config=cfg.name, say=say)
