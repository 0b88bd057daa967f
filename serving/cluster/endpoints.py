"""The model servers a shard calls: its node's own, else the ones the run names.

Two sources:

- **the node's own**: ``LOCALFIN_ENDPOINTS`` in the environment of ``ray start`` on that node
  (Ray's workers inherit it; :func:`localfin.env.node_endpoints`): ``KEY=URL`` pairs (a
  registry key and the address of the ``vllm serve`` that serves it) or a bare ``URL`` for
  every model, separated by commas, e.g.
  ``LOCALFIN_ENDPOINTS=qwen3-vl-8b=http://127.0.0.1:8000/v1,qwen3-4b-nothink=http://127.0.0.1:8001/v1``;
- **named by the run**: the config's ``base_url`` (``[qa]``, a ``[[backbones]]`` entry) or
  ``--endpoint KEY=URL`` on the command line; several per model are allowed.

A shard uses its node's own server for a model when the node names one (its requests stay on
that machine, and a shard moved off a lost node uses the survivor's server); otherwise the
run's, shard ``i`` taking the ``i mod n``-th of ``n`` (one server for every node, e.g. a 70B
model served across nodes with pipeline parallelism). Neither: a ConfigError naming the node
and the model, before any request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from localfin import env
from serving.errors import ConfigError

__all__ = ["ANY", "Endpoints", "parse_endpoints", "node_endpoints"]

#: the key of a bare URL: a server for every model
ANY = "*"
_SPLIT = re.compile(r"[,\s]+")


def _check_url(url: str, what: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{what}: {url!r} is no server address; allowed: KEY=http://HOST:PORT/v1 or a URL")
    return url.rstrip("/")


def parse_endpoints(entries: Iterable[str], what: str) -> dict[str, tuple[str, ...]]:
    """``KEY=URL`` or ``URL`` entries (each may hold several, comma-separated) as a mapping
    model key -> URLs (:data:`ANY` for bare URLs). ``what`` names the source in errors."""
    out: dict[str, list[str]] = {}
    for entry in entries:
        for tok in (t for t in _SPLIT.split(entry.strip()) if t):
            key, sep, url = tok.partition("=")
            if not sep:
                key, url = ANY, tok
            elif not key:
                raise ConfigError(f"{what}: {tok!r} has no model key; allowed: KEY=URL or a URL")
            urls = out.setdefault(key, [])
            u = _check_url(url, what)
            if u not in urls:
                urls.append(u)
    return {k: tuple(v) for k, v in out.items()}


def node_endpoints() -> dict[str, tuple[str, ...]]:
    """This machine's servers (``LOCALFIN_ENDPOINTS``; empty when unset)."""
    raw = env.node_endpoints()
    return parse_endpoints([raw], "LOCALFIN_ENDPOINTS") if raw else {}


def _pick(table: Mapping[str, tuple[str, ...]], model: str) -> tuple[str, ...]:
    return table.get(model) or table.get(ANY) or ()


@dataclass(frozen=True)
class Endpoints:
    """The servers a run names, per model key (see the module doc for the order of choice)."""

    named: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def of(cls, table: Mapping[str, Iterable[str]]) -> Endpoints:
        merged: dict[str, list[str]] = {}
        for k, urls in table.items():
            for u in urls:
                if u and u not in merged.setdefault(k, []):
                    merged[k].append(_check_url(u, f"the server of {k}"))
        return cls(tuple((k, tuple(v)) for k, v in merged.items() if v))

    def with_named(self, model: str, urls: Iterable[str]) -> Endpoints:
        table = {k: list(v) for k, v in self.named}
        table.setdefault(model, []).extend(urls)
        return Endpoints.of(table)

    def choose(
        self, model: str, index: int, node: Mapping[str, tuple[str, ...]] | None = None, where: str = ""
    ) -> tuple[str, str]:
        """The server shard ``index`` calls for ``model`` and where it was found (``node`` or
        ``run``); ``node`` defaults to this machine's (:func:`node_endpoints`)."""
        own = node_endpoints() if node is None else node
        mine = _pick(own, model)
        if mine:
            return mine[index % len(mine)], "node"
        named = _pick(dict(self.named), model)
        if named:
            return named[index % len(named)], "run"
        raise ConfigError(
            f"no server for model {model!r} on node {where or 'this node'}: start the node with "
            f"LOCALFIN_ENDPOINTS={model}=http://127.0.0.1:8000/v1 in the environment of `ray start` "
            "(its own `vllm serve`), or name one for the run (the config's base_url, --endpoint "
            f"{model}=URL)"
        )
