"""One way to open a backend: a small value names it (:class:`BackendSpec`), one function opens it
(:func:`open_backend`), and :func:`model_facts` gives the few per-model facts agents need
(:class:`ModelFacts`) without handing them the registry.

Backend kinds form a registry (:data:`BACKENDS`): localfin's ``vllm`` and ``openai``, and the
kinds installed plugins declare as entry points of the group ``localfin.backends`` (see
:mod:`localfin.plugins`). A plugin's entry point loads a factory ``(spec: BackendSpec, registry:
Registry) -> Backend`` that returns an object with the :class:`~serving.chat.backend.Backend`
methods; ``[model] backend = "<kind>"`` in a config, ``--backend <kind>`` on the command line and
``BackendSpec("<kind>", ...)`` in code then open it.

Only the layers that compose a run call these (the CLI, the demos, the experiment matrix,
``localfin reproduce``, ``bench``); agents receive the opened :class:`~serving.chat.backend.Backend`
and a :class:`ModelFacts`. This module and the backends' own modules are the only places that
construct ``VLLMBackend`` / ``OpenAIBackend`` (a test checks it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localfin import env
from localfin.plugins import PluginRegistry
from serving.chat.backend import Backend
from serving.engines.vllm_engine import EngineOptions, VLLMBackend
from serving.errors import ConfigError, ModelNotPreparedError
from serving.http.openai_http import OpenAIBackend
from serving.models.prepare import build_tiny_model
from serving.models.registry import ModelSpec, Registry, default_registry

__all__ = [
    "BACKEND_KINDS",
    "BACKENDS",
    "BackendFactory",
    "backend_kinds",
    "BackendSpec",
    "ModelFacts",
    "open_backend",
    "opened",
    "registry_with",
    "model_spec",
    "model_facts",
    "check_weights",
    "WeightsStatus",
    "weights_status",
    "weights_digest",
    "backend_settings",
    "check_backend",
]

log = logging.getLogger(__name__)

#: localfin's own kinds. ``vllm``: the in-process engine; ``openai``: a running OpenAI-compatible
#: server (``vllm serve``). Plugins add more (:data:`BACKENDS`, :func:`backend_kinds`). The
#: scripted backend is for unit tests only and is built there (``serving.chat.scripted``).
BACKEND_KINDS = ("vllm", "openai")


@dataclass(frozen=True)
class BackendSpec:
    """Which backend serves a run.

    Attributes:
        kind: a backend kind: ``vllm``, ``openai`` or a plugin's (:func:`backend_kinds`).
        model: registry key of the model (``vllm``: the one model the engine serves; ``openai``:
            whose registry defaults the client applies, optional).
        base_url: the server, ``http://host:port/v1`` (``openai`` only).
        api_key: the server's bearer token (``openai``; None: ``LOCALFIN_API_KEY`` if set).
        model_path: a weights folder overriding the registry's (a ``built`` test model without
            one is built into ``<model cache>/<key>`` on first use).
        engine: settings of the in-process engine (``vllm``); its ``logit_bias`` also goes with
            every request of the HTTP client (``openai``).
        max_concurrency, max_retries, served_model_name: the HTTP client's requests in flight,
            retries after a first failed attempt, and the name the server knows the model by
            (``openai``; empty: the registry key).
        timeout_s, backoff_s, backoff_max_s: the HTTP client's per-request timeout (None: the
            registry's, 600 s), its first retry delay and the longest delay between attempts
            (seconds; ``openai``; :class:`serving.http.openai_http.OpenAIBackend`).
    """

    kind: str = "vllm"
    model: str = ""
    base_url: str = ""
    api_key: str | None = None
    model_path: str = ""
    engine: EngineOptions = field(default_factory=EngineOptions)
    max_concurrency: int = 8
    max_retries: int = 4
    served_model_name: str = ""
    timeout_s: float | None = None
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0

    def __post_init__(self) -> None:
        if self.kind not in BACKEND_KINDS and self.kind not in BACKENDS:
            raise ConfigError(f"backend kind {self.kind!r}; allowed: {', '.join(backend_kinds())}")
        if self.kind == "vllm" and not self.model:
            raise ConfigError("the vllm backend needs a model (a registry key such as smollm2-135m)")
        if self.kind == "openai" and not self.base_url:
            raise ConfigError("the openai backend needs base_url (e.g. http://127.0.0.1:8000/v1)")


@dataclass(frozen=True)
class ModelFacts:
    """What an agent or a run record needs to know about its model (never the registry itself).

    key / display_name: registry key and published name; device: ``gpu`` or ``cpu``;
    max_model_len / default_max_tokens: context and default completion budget (tokens);
    accepts_images; thinking_default: the thinking switch's default (None: no switch);
    weights_revision: ``revision`` or ``cfg-<sha256 of config.json>`` ("unresolved" while the
    weights are not there); weights_sha256: the weight files' digests recorded by ``localfin
    models prepare`` (empty otherwise).
    """

    key: str
    display_name: str = ""
    device: str = "gpu"
    max_model_len: int = 32_768
    default_max_tokens: int = 16_384
    accepts_images: bool = False
    thinking_default: bool | None = None
    weights_revision: str = "unknown"
    weights_sha256: dict[str, str] = field(default_factory=dict)


def weights_digest(spec: ModelSpec) -> dict[str, str]:
    """sha256 of the model's weight files as recorded by ``localfin models prepare``
    (``localfin_manifest.json``); empty for a directory without one (GPU checkpoints are not
    hashed here: reading tens of GB per run would cost minutes)."""
    try:
        path = spec.resolve_path() / "localfin_manifest.json"
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):  # not prepared by us: nothing to record
        return {}
    return {k: v for k, v in sorted(files.items()) if k.endswith((".safetensors", ".bin", ".gguf", ".pt"))}


def registry_with(model: str, model_path: str = "", registry: Registry | None = None) -> Registry:
    """``registry`` (default: the packaged one) with ``model``'s weights at ``model_path`` when
    given; a ``built`` test model without a path is built once into ``<model cache>/<key>``."""
    reg = registry or default_registry()
    spec = reg.get(model)
    if model_path:
        return reg.with_spec(spec.with_path(Path(model_path).expanduser()))
    if spec.source == "built" and spec.path is None:
        if not spec.key.startswith("tiny-"):
            raise ConfigError(f"model {spec.key!r} is built at run time; give its model_path")
        path = env.model_cache_dir() / spec.key
        if not (path / "config.json").is_file():
            log.info("building the tiny test model %s into %s", spec.key, path)
            build_tiny_model(path, arch=spec.key.split("-", 1)[1], seed=0)
        return reg.with_spec(spec.with_path(path))
    return reg


def model_spec(model: str, registry: Registry | None = None) -> ModelSpec:
    """The registry entry of ``model`` (``registry``: default the packaged one with the user's
    models files and plugins); an unknown key is a ConfigError naming the allowed ones."""
    return (registry or default_registry()).get(model)


def model_facts(model: str, registry: Registry | None = None) -> ModelFacts:
    """The :class:`ModelFacts` of ``model`` (an unknown key is a ConfigError naming the allowed ones)."""
    spec = (registry or default_registry()).get(model)
    return ModelFacts(
        key=spec.key,
        display_name=spec.display_name,
        # a stand-in runs on the CPU but rehearses the GPU entry: the agents size for the GPU
        device="gpu" if spec.stand_in else spec.device,
        max_model_len=spec.max_model_len,
        default_max_tokens=spec.default_max_tokens,
        accepts_images=spec.accepts_images,
        thinking_default=spec.thinking_default,
        weights_revision=spec.resolved_revision(),
        weights_sha256=weights_digest(spec),
    )


def check_weights(model: str, registry: Registry | None = None) -> None:
    """Raise :class:`~serving.errors.ModelNotPreparedError` (saying how to get them) when
    ``model``'s weights are not on this machine, before any work starts."""
    (registry or default_registry()).get(model).resolve_path()


@dataclass(frozen=True)
class WeightsStatus:
    """Whether a model's weights are here: ``where`` they are expected (None: built at run time
    without a path), ``path`` when present, else ``fix``: the command or copy that puts them there."""

    key: str
    where: Path | None
    path: Path | None
    fix: str = ""


def weights_status(model: str, registry: Registry | None = None) -> WeightsStatus:
    """The :class:`WeightsStatus` of ``model`` (an unknown key is a ConfigError)."""

    spec = (registry or default_registry()).get(model)
    where = spec.expected_path()
    try:
        return WeightsStatus(spec.key, where, spec.resolve_path())
    except ModelNotPreparedError:
        fix = (
            f"localfin models prepare {spec.key}"
            if spec.source == "pip_package"
            else f"copy {spec.hf_reference or spec.display_name} into {where} (or set LOCALFIN_MODELS_DIR)"
        )
        return WeightsStatus(spec.key, where, None, fix)


@contextmanager
def opened(
    spec: BackendSpec, registry: Registry | None = None, *, backend: Backend | None = None
) -> Iterator[Backend]:
    """``backend`` when the caller gives one (theirs: not closed here), else the backend ``spec``
    names, opened here and closed when the block ends."""
    if backend is not None:
        yield backend
        return
    own = open_backend(spec, registry)
    try:
        yield own
    finally:
        own.close()


def _open_vllm(spec: BackendSpec, registry: Registry) -> Backend:
    """One in-process engine, or one per replica of its layout (:mod:`serving.engines.replicas`)."""
    reg = registry
    if spec.model_path:
        reg = reg.with_spec(reg.get(spec.model).with_path(Path(spec.model_path).expanduser()))
    layout = spec.engine.layout
    if layout is None or len(layout.replicas) < 2:
        return VLLMBackend(spec.model, registry=reg, options=spec.engine)
    from dataclasses import replace

    from serving.engines.replicas import ReplicatedBackend

    return ReplicatedBackend(
        [
            VLLMBackend(spec.model, registry=reg, options=replace(spec.engine, layout=layout.one(k)))
            for k in range(len(layout.replicas))
        ]
    )


def _open_openai(spec: BackendSpec, registry: Registry) -> Backend:
    return OpenAIBackend(
        spec.base_url,
        registry=registry,
        api_key=spec.api_key if spec.api_key is not None else env.api_key(),
        max_concurrency=spec.max_concurrency,
        max_retries=spec.max_retries,
        served_model_name=spec.served_model_name or None,
        logit_bias=spec.engine.logit_bias,
        timeout_s=spec.timeout_s,
        backoff_s=spec.backoff_s,
        backoff_max_s=spec.backoff_max_s,
        model=spec.model,
        max_failures_in_a_row=spec.engine.max_failures_in_a_row,
    )


#: What a backend kind's entry point loads: it opens the backend a :class:`BackendSpec` names,
#: with the model registry of the run (not started yet; the caller closes it).
BackendFactory = Callable[[BackendSpec, Registry], Backend]


def _check_factory(name: str, value: Any) -> BackendFactory:
    if not callable(value):
        raise TypeError(f"loads {type(value).__name__}; allowed: a callable (spec, registry) -> Backend")
    return value


#: Backend kinds: localfin's (``vllm``, ``openai``) and the installed plugins' (entry-point group
#: ``localfin.backends``), each a :data:`BackendFactory`.
BACKENDS: PluginRegistry[BackendFactory] = PluginRegistry(
    "backend kind", "localfin.backends", {"vllm": _open_vllm, "openai": _open_openai}, _check_factory
)


def backend_kinds() -> tuple[str, ...]:
    """Every backend kind: localfin's own, then the installed plugins'."""
    return tuple(BACKENDS.names())


def open_backend(spec: BackendSpec, registry: Registry | None = None) -> Backend:
    """The backend ``spec`` names, not started yet (an in-process engine starts on its first
    call, or on ``start()``); the caller closes it.

    A model key the registry does not hold fails here, before any call, naming the known keys
    (with ``openai`` too: a server's own model is added with a models file, whose ``key`` the
    requests name; ``served_model_name`` maps it to the server's name)."""
    reg = registry or default_registry()
    if spec.model:
        reg.get(spec.model)
    backend = BACKENDS.get(spec.kind)(spec, reg)
    for method in ("chat", "close"):
        if not callable(getattr(backend, method, None)):
            raise ConfigError(
                f"backend kind {spec.kind!r} ({BACKENDS.origin(spec.kind)}) returned "
                f"{type(backend).__name__}, which has no {method}(); allowed: a serving.chat.backend.Backend"
            )
    return backend


def backend_settings(backend: Backend) -> dict[str, object]:
    """A backend's fault settings for a run's manifest (the HTTP client's timeout, retries and
    backoff; the engine's failure limit), looked up through the wrappers that hold it."""
    for obj in (backend, getattr(backend, "engine", None), getattr(backend, "inner", None)):
        fn = getattr(obj, "settings", None)
        if callable(fn):
            return dict(fn())
    return {"backend": getattr(backend, "name", type(backend).__name__)}


def check_backend(backend: Backend) -> None:
    """Let a backend fail before the first request where it can know it will (the HTTP client
    asks ``GET /models``: a server that is down, refuses the key or does not serve the model)."""
    fn = getattr(backend, "check", None)
    if callable(fn):
        fn()
