"""The GPU backbones of a config served on the CPU by tiny random models of their architectures.

One tiny model per architecture (:func:`serving.models.prepare.build_tiny_model`, its context as long as
the real entry's, so the engine accepts the real ``max_model_len``), and every registry key of
the config replaced by its :func:`serving.models.registry.cpu_stand_in` (the real entry's parsers,
thinking default, context, budget, timeout, images). Entries of one architecture share one
engine or one ``vllm serve`` process: their engine settings are equal (checked), and what
differs between them (thinking on/off, the key) is per request.

:class:`StandInRouter` is the backend a run sees: it sends each request to the engine of its
model's architecture. In process the request is re-keyed to the engine's key with the real
entry's thinking default made explicit, and the result keyed back, so the journal records the
request as the config made it. Through HTTP nothing is re-keyed: the client of each server
names the served model and reads timeouts and thinking defaults from the stand-in registry.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from localfin.errors import ConfigError
from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult
from serving.models.registry import ModelSpec, Registry, cpu_stand_in

__all__ = [
    "ENGINE_FIELDS",
    "REUSE_MAY_DIFFER",
    "THINK_BIAS",
    "StandIns",
    "StandInRouter",
    "check_reuse",
    "server_client",
    "think_bias",
    "engine_groups",
    "stand_ins",
    "stand_in_layouts",
]

log = logging.getLogger(__name__)

#: Registry fields that are engine (or server) settings: entries sharing an engine agree on them.
ENGINE_FIELDS = (
    "arch",
    "reasoning_parser",
    "tool_call_parser",
    "chat_template",
    "max_model_len",
    "accepts_images",
)

#: Logit bias on ``</think>`` for thinking-on stand-ins (a rehearsal device, stated in the
#: report): a random model never closes its thinking by itself and would spend the whole
#: 16,384-token budget per call; with this bias it closes after a few tokens (probability about
#: e^5 / (e^5 + vocabulary) per token at temperature 1), so replies carry short reasoning and
#: then the schema's answer.
THINK_BIAS = 5.0


@dataclass(frozen=True)
class StandIns:
    """The tiny model of each architecture, the stand-in registry, and the engine groups."""

    models: Mapping[str, Path]  # arch -> tiny model folder
    registry: Registry
    groups: Mapping[str, tuple[str, ...]]  # arch -> registry keys (first: the engine's key)
    real: Registry  # the registry the stand-ins replace (the backbones' own tokenizer folders)

    def arch_of(self, key: str) -> str:
        """The architecture whose engine serves registry key ``key``."""
        for arch, ks in self.groups.items():
            if key in ks:
                return arch
        raise ConfigError(
            f"model {key!r}; this rehearsal serves {', '.join(k for g in self.groups.values() for k in g)}"
        )


def engine_groups(keys: Iterable[str], registry: Registry) -> dict[str, tuple[str, ...]]:
    """Registry keys grouped by architecture; a group whose engine settings differ is an error."""
    reg = registry
    groups: dict[str, list[str]] = {}
    for k in dict.fromkeys(keys):
        spec = reg.get(k)
        if not spec.arch:
            raise ConfigError(f"model {k!r} has no arch; a rehearsal needs one of the GPU entries")
        groups.setdefault(spec.arch, []).append(k)
    for arch, ks in groups.items():
        first = reg.get(ks[0])
        for k in ks[1:]:
            bad = [f for f in ENGINE_FIELDS if getattr(reg.get(k), f) != getattr(first, f)]
            if bad:
                raise ConfigError(f"{k!r} and {ks[0]!r} ({arch}) differ in engine settings {bad}")
    return {a: tuple(ks) for a, ks in groups.items()}


def stand_ins(
    keys: Iterable[str], model_root: Path, registry: Registry, *, models: Mapping[str, Path] | None = None
) -> StandIns:
    """Tiny models under ``model_root/<arch>`` (built once, reused) and the stand-in registry.

    ``models``: arch -> a tiny model folder already built (the tests' session models, whose
    engines a rehearsal may reuse); it must hold the real entry's context
    (``max_position_embeddings`` at least its ``max_model_len``)."""
    from serving.models.prepare import build_tiny_model

    reg = registry
    groups = engine_groups(keys, reg)
    given = dict(models or {})
    models_: dict[str, Path] = {}
    for arch, ks in groups.items():
        ctx = reg.get(ks[0]).max_model_len
        if arch in given:
            path = Path(given[arch])
            _check_context(path, ctx)
        else:
            path = model_root / f"{arch}-{ctx}"
            if not (path / "config.json").is_file():
                build_tiny_model(path, arch=arch, max_position_embeddings=ctx)
        models_[arch] = path
        for k in ks:
            reg = reg.with_spec(cpu_stand_in(reg.get(k), path))
    return StandIns(models_, reg, groups, registry)


def _check_context(path: Path, ctx: int) -> None:
    import json

    cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    have = int(cfg.get("text_config", cfg).get("max_position_embeddings", 0))
    if have < ctx:
        raise ConfigError(
            f"tiny model {path} holds {have} positions; its stand-in needs max_position_embeddings >= {ctx}"
        )


def think_bias(path: Path) -> dict[int, float]:
    from serving.models.prepare import token_id

    return {token_id(path, "</think>"): THINK_BIAS}


class StandInRouter:
    """One backend per architecture behind one :class:`Backend` (see the module docstring)."""

    name = "stand-ins"

    def __init__(self, si: StandIns, backends: Mapping[str, Backend], *, rekey: bool) -> None:
        self.si = si
        self.backends = dict(backends)
        self.rekey = rekey
        self._arch = {k: a for a, ks in si.groups.items() for k in ks}
        # in process: the key the engine serves (the group's first, or a reused engine's own)
        self._engine_key = {
            a: getattr(getattr(b, "spec", None), "key", None) or si.groups[a][0] for a, b in backends.items()
        }

    def _route(self, req: ChatRequest) -> tuple[str, ChatRequest]:
        arch = self._arch.get(req.model)
        if arch is None:
            raise ConfigError(f"request for {req.model!r}; this rehearsal serves {', '.join(self._arch)}")
        if not self.rekey:
            return arch, req
        spec = self.si.registry.get(req.model)
        thinking = req.thinking if req.thinking is not None else spec.thinking_default
        return arch, replace(req, model=self._engine_key[arch], thinking=thinking)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        out: list[ChatResult | None] = [None] * len(requests)
        by_arch: dict[str, list[tuple[int, ChatRequest]]] = {}
        for i, r in enumerate(requests):
            arch, routed = self._route(r)
            by_arch.setdefault(arch, []).append((i, routed))
        for arch, items in by_arch.items():
            results = self.backends[arch].chat([r for _, r in items])
            for (i, _), res in zip(items, results):
                orig = requests[i]
                out[i] = replace(res, model=orig.model, request_key=orig.key()) if self.rekey else res
        return [r for r in out if r is not None]

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any] | None:
        arch, routed = self._route(req)
        fn = getattr(self.backends[arch], "effective_sampling", None)
        return fn(routed) if callable(fn) else None

    def close(self) -> None:
        """Closed by the rehearsal that opened the engines (runs must not close them)."""


#: Engine fields a reused engine may differ in from the stand-in: the in-process engine takes no
#: tool parser, and the requests of a rehearsal send no ``tools`` (tool calls are parsed from the
#: text by the agents), so a server started without one answers them alike.
REUSE_MAY_DIFFER = ("tool_call_parser",)


def check_reuse(si: StandIns, arch: str, engine: ModelSpec, path: str) -> list[str]:
    """Notes on an engine or server started elsewhere (``engine``: the spec it runs, its context
    included) that serves ``arch`` in place of the stand-in's own (whose weights are then the
    engine's: :func:`stand_ins` with ``models``); a difference in any engine field but
    :data:`REUSE_MAY_DIFFER` is an error. A reused in-process engine of a thinking architecture
    must carry the ``</think>`` bias itself (:func:`think_bias`)."""
    spec = si.registry.get(si.groups[arch][0])
    # in process the engine's own entry also gives the repetition penalty a request leaves unset
    compared = ENGINE_FIELDS + (("repetition_penalty",) if path == "engine" else ())
    bad = [f for f in compared if f not in REUSE_MAY_DIFFER and getattr(engine, f) != getattr(spec, f)]
    if bad:
        raise ConfigError(
            f"the {path} of {engine.key!r} cannot stand in for {spec.key!r}: it differs in {bad}"
        )
    notes = [f"{path}: {', '.join(si.groups[arch])} served by a running engine of {engine.key!r} (reused)"]
    for f in REUSE_MAY_DIFFER:
        if getattr(engine, f) != getattr(spec, f) and path == "server":
            notes.append(
                f"{path}: started with {f} {getattr(engine, f)!r}, the config's entry asks "
                f"{getattr(spec, f)!r} (no request sends tools; the full rehearsal starts it as asked)"
            )
    return notes


def stand_in_layouts(si: StandIns, *, kv_cache_gib: int = 1) -> dict[str, Any]:
    """arch -> where its engine or server runs on the CUDA build: every architecture's stand-in
    placed at once on the visible GPUs, each with the share its weights and ``kv_cache_gib`` of
    KV cache need (:func:`agent.reproduce.engine_plan.place_stand_ins`); {} on the CPU build."""
    from agent.reproduce.engine_plan import place_stand_ins
    from serving.hardware.gpus import engine_platform, visible_inventory

    if engine_platform() != "cuda":
        return {}
    first = {a: ks[0] for a, ks in si.groups.items()}
    placed = place_stand_ins(first.values(), si.registry, visible_inventory(), kv_cache_gib=kv_cache_gib)
    if not placed.ok:
        raise ConfigError(f"the rehearsal's stand-ins: {placed.problem()}")
    return {a: placed.layout_for(k) for a, k in first.items()}


def open_engines(
    si: StandIns, *, kv_cache_gib: int = 1, max_num_seqs: int = 64, archs: Iterable[str] | None = None
) -> dict[str, Backend]:
    """One in-process vLLM engine per architecture (``archs``: only these), on the group's first
    key (started on first use), where :func:`stand_in_layouts` puts it."""
    from serving.engines.vllm_engine import EngineOptions
    from serving.open import BackendSpec, open_backend

    out: dict[str, Backend] = {}
    only = set(si.groups if archs is None else archs)
    layouts = stand_in_layouts(si, kv_cache_gib=kv_cache_gib)
    for arch, ks in si.groups.items():
        if arch not in only:
            continue
        spec = si.registry.get(ks[0])
        bias = think_bias(si.models[arch]) if spec.reasoning_parser else {}
        opts = EngineOptions(
            kv_cache_gib=kv_cache_gib, max_num_seqs=max_num_seqs, logit_bias=bias, layout=layouts.get(arch)
        )
        out[arch] = open_backend(BackendSpec("vllm", ks[0], engine=opts), si.registry)
    return out


@dataclass
class Servers:
    """The ``vllm serve`` process of each architecture and a client per process."""

    handles: dict[str, Any]
    clients: dict[str, Backend]

    def close(self) -> None:
        for c in self.clients.values():
            c.close()
        for h in self.handles.values():
            h.stop()


def server_client(
    si: StandIns, arch: str, base_url: str, *, api_key: str | None, served_model_name: str = ""
) -> Backend:
    """The HTTP client of the server serving ``arch`` (``served_model_name``: the name it serves
    the model by, default the group's first key), with the ``</think>`` bias of a thinking
    architecture and the stand-in registry's timeouts and thinking defaults."""
    from serving.engines.vllm_engine import EngineOptions
    from serving.open import BackendSpec, open_backend

    ks = si.groups[arch]
    spec = si.registry.get(ks[0])
    bias = think_bias(si.models[arch]) if spec.reasoning_parser else {}
    client = BackendSpec(
        "openai",
        ks[0],
        base_url=base_url,
        api_key=api_key,
        engine=EngineOptions(logit_bias=bias),
        max_concurrency=16,
        served_model_name=served_model_name or ks[0],
    )
    return open_backend(client, si.registry)


def start_servers(
    si: StandIns, log_dir: Path, *, kv_cache_gib: int = 1, archs: Iterable[str] | None = None
) -> Servers:
    """One ``vllm serve`` on loopback per architecture (``archs``: only these; the stand-in's own
    serve arguments: its reasoning and tool parsers, context, image limit), KV cache
    ``kv_cache_gib``."""
    import os

    from serving.http.server import start_server

    servers = Servers({}, {})
    old = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache_gib)
    only = set(si.groups if archs is None else archs)
    layouts = stand_in_layouts(si, kv_cache_gib=kv_cache_gib)
    try:
        for arch, ks in si.groups.items():
            if arch not in only:
                continue
            spec = si.registry.get(ks[0])
            h = start_server(
                spec, log_path=log_dir / f"serve-{arch}.log", api_key="rehearsal", ready_timeout_s=600,
                layout=layouts.get(arch),
            )  # fmt: skip
            servers.handles[arch] = h
            servers.clients[arch] = server_client(si, arch, h.base_url, api_key="rehearsal")
    except BaseException:
        servers.close()
        raise
    finally:
        if old is None:
            os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)
        else:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = old
    return servers
