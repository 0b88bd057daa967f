"""Tokenizers and chat templates of the tiny random test models (:mod:`serving.models.prepare`).

Each architecture gets a byte-level BPE trained on a fixed corpus (so every byte string is
encodable and the same code always gives the same file), the special tokens of the real
family, and a chat template written for it that follows the real family's format where a
backend depends on it: Qwen3's ``enable_thinking`` switch, Llama-3.1's headers, system
preamble and ``ipython`` tool turns, Qwen3-VL's vision placeholders and Hermes tool calls.
The templates are ours; only the token names and the layout facts come from the families.

tokenizers and transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from serving.errors import ConfigError
from serving.models.registry import ARCHS

__all__ = ["ARCHS", "TokenSpec", "TOKEN_SPECS", "train_tokenizer"]

# Sets `content` to a message's text whether it is a string or a list of OpenAI content parts;
# image parts become IMAGE (empty for text-only models).
_CONTENT = (
    "{%- if message.content is string -%}{%- set content = message.content -%}"
    "{%- elif message.content is none -%}{%- set content = '' -%}"
    "{%- else -%}{%- set content = namespace(text='') -%}"
    "{%- for part in message.content -%}{%- if part.type == 'text' -%}"
    "{%- set content.text = content.text ~ part.text -%}"
    "{%- elif part.type in ('image', 'image_url') -%}{%- set content.text = content.text ~ 'IMAGE' -%}"
    "{%- endif -%}{%- endfor -%}"
    "{%- set content = content.text -%}{%- endif -%}"
)


def _content(image_placeholder: str = "") -> str:
    return _CONTENT.replace("'IMAGE'", repr(image_placeholder))


# Qwen3: earlier assistant turns lose their reasoning; enable_thinking=False pre-fills an empty
# think block in the generation prompt.
_QWEN3_TEMPLATE = (
    "{%- for message in messages -%}"
    + _content()
    + "{%- if message.role == 'assistant' and '</think>' in content -%}"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') -%}{%- endif -%}"
    "{{- '<|im_start|>' ~ message.role ~ '\\n' ~ content ~ '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}{%- endif -%}"
)

# A tool call of an assistant message as JSON: {"name": ..., KEY: arguments}.
_CALL_JSON = (
    "{%- set args = call.function.arguments -%}"
    "{{- '{\"name\": ' ~ (call.function.name | tojson) ~ ', \"KEY\": ' -}}"
    "{%- if args is string -%}{{- args -}}{%- else -%}{{- args | tojson -}}{%- endif -%}"
    "{{- '}' -}}"
)

# Llama-3.1: a system block that always carries the knowledge-cutoff and date lines (and the
# tool list when tools are given), header tokens around every turn, tool results as `ipython`
# turns, tool calls as one JSON object per call (what vLLM's llama3_json parser reads).
_LLAMA_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- set date_string = date_string if date_string is defined else '26 Jul 2024' -%}"
    "{%- set system = namespace(text='') -%}"
    "{%- for message in messages if message.role == 'system' -%}"
    + _content()
    + "{%- set system.text = system.text ~ content -%}{%- endfor -%}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' -}}"
    "{%- if tools -%}{{- 'Environment: ipython\\n' -}}{%- endif -%}"
    "{{- 'Cutting Knowledge Date: December 2023\\nToday Date: ' ~ date_string ~ '\\n\\n' -}}"
    "{%- if tools -%}"
    '{{- \'To call a function, answer with one JSON object {"name": NAME, "parameters": '
    "{ARGUMENTS}}. Functions:\\n' -}}"
    "{%- for tool in tools -%}{{- (tool | tojson) ~ '\\n' -}}{%- endfor -%}{{- '\\n' -}}"
    "{%- endif -%}"
    "{{- system.text | trim ~ '<|eot_id|>' -}}"
    "{%- for message in messages if message.role != 'system' -%}"
    + _content()
    + "{%- if message.role == 'tool' -%}"
    "{{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' ~ content | trim ~ '<|eot_id|>' -}}"
    "{%- elif message.role == 'assistant' and message.tool_calls -%}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}"
    "{%- for call in message.tool_calls -%}" + _CALL_JSON.replace("KEY", "parameters") + "{%- endfor -%}"
    "{{- '<|eot_id|>' -}}"
    "{%- else -%}"
    "{{- '<|start_header_id|>' ~ message.role ~ '<|end_header_id|>\\n\\n' ~ content | trim"
    " ~ '<|eot_id|>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}"
)

# Qwen3-VL (Instruct: no thinking switch): each image part becomes a vision block holding one
# <|image_pad|> (the processor widens it to the image's patch count); tools are listed in the
# system turn, calls are <tool_call> JSON (vLLM's hermes parser), results <tool_response>.
_VISION = "<|vision_start|><|image_pad|><|vision_end|>"
_QWEN3_VL_TEMPLATE = (
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if messages and messages[0].role == 'system' -%}"
    "{%- set message = messages[0] -%}" + _content() + "{{- content ~ '\\n\\n' -}}{%- endif -%}"
    '{{- \'Functions you may call, one <tool_call>{"name": NAME, "arguments": {...}}</tool_call> '
    "per call:\\n<tools>\\n' -}}"
    "{%- for tool in tools -%}{{- (tool | tojson) ~ '\\n' -}}{%- endfor -%}"
    "{{- '</tools><|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if not (tools and loop.first and message.role == 'system') -%}"
    + _content(_VISION)
    + "{%- if message.role == 'tool' -%}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' ~ content ~ '\\n</tool_response><|im_end|>\\n' -}}"
    "{%- elif message.role == 'assistant' and message.tool_calls -%}"
    "{{- '<|im_start|>assistant\\n' ~ content -}}"
    "{%- for call in message.tool_calls -%}{{- '\\n<tool_call>\\n' -}}"
    + _CALL_JSON.replace("KEY", "arguments")
    + "{{- '\\n</tool_call>' -}}{%- endfor -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' ~ message.role ~ '\\n' ~ content ~ '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


@dataclass(frozen=True)
class TokenSpec:
    """The tokens and template of one tiny architecture.

    Attributes:
        special: special tokens, trained first (they get the lowest ids; dropped by
            ``skip_special_tokens``).
        added: plain added tokens, appended after training (kept in decoded text, as
            Qwen3 keeps ``<think>``/``</think>`` so a reasoning parser can find them).
        bos / eos / pad: token names (``bos`` ``None``: no BOS is prepended).
        template: the chat template (Jinja).
    """

    special: tuple[str, ...]
    added: tuple[str, ...]
    bos: str | None
    eos: str
    pad: str
    template: str


_THINK = ("<think>", "</think>")
_HERMES = ("<tool_call>", "</tool_call>")
_QWEN_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

TOKEN_SPECS: dict[str, TokenSpec] = {
    "qwen3": TokenSpec(_QWEN_SPECIAL, _THINK, None, "<|im_end|>", "<|endoftext|>", _QWEN3_TEMPLATE),
    "llama": TokenSpec(
        (
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<|eom_id|>",
            "<|python_tag|>",
        ),
        (),
        "<|begin_of_text|>",
        "<|eot_id|>",
        "<|end_of_text|>",
        _LLAMA_TEMPLATE,
    ),
    "qwen3-vl": TokenSpec(
        _QWEN_SPECIAL + ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"),
        _THINK + _HERMES,
        None,
        "<|im_end|>",
        "<|endoftext|>",
        _QWEN3_VL_TEMPLATE,
    ),
}

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


def train_tokenizer(arch: str, vocab_size: int, *, model_max_length: int = 4096) -> Any:
    """Byte-level BPE (every byte string is encodable) wrapped as a fast HF tokenizer.

    ``vocab_size`` counts every token (trained, special and added); ``model_max_length`` is the
    tokenizer's length limit in tokens.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    if arch not in TOKEN_SPECS:
        raise ConfigError(f"arch={arch!r} is not supported; allowed: {list(TOKEN_SPECS)}")
    spec = TOKEN_SPECS[arch]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(
        vocab_size=vocab_size - len(spec.added),
        special_tokens=list(spec.special),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_tokenizer_corpus(), trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in spec.added])
    if spec.bos is not None:
        bos_id = tok.token_to_id(spec.bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{spec.bos} $A",
            pair=f"{spec.bos} $A {spec.bos} $B",
            special_tokens=[(spec.bos, bos_id)],
        )
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    if tok.get_vocab_size() > vocab_size:
        raise ConfigError(f"tokenizer grew to {tok.get_vocab_size()} > vocab_size={vocab_size}")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=spec.bos,
        eos_token=spec.eos,
        pad_token=spec.pad,
        chat_template=spec.template,
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )
