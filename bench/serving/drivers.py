"""The three ways the serving benchmark sends the same requests to the same model.

- :class:`InProcessDriver`: ``serving.engines.vllm_engine.VLLMBackend`` (``vllm.LLM`` in this process,
  engine core in a child). Concurrency ``c`` means ``c`` requests per ``chat`` call, which is how
  the agents' lock-step rounds use it. The batch API returns every answer at the end of the
  call, so time to first token and inter-token latency are not observable here (``None``); the
  server path below gives the same engine's TTFT/ITL through its streaming API.
- :class:`ServerDriver`: a vLLM OpenAI-compatible server on loopback (``serving.http.server``), or
  one already running (``--base-url``). ``run`` streams (``"stream": true`` with usage), ``c``
  client threads each sending its next request when the last one ends (closed loop); TTFT is
  the time to the first content chunk, ITL the gaps between content chunks. The request bodies
  are the ones :class:`serving.http.openai_http.OpenAIBackend` sends; ``run_backend`` goes through
  that class itself (no streaming), the agents' path.
- :class:`TransformersDriver`: plain transformers ``generate`` on the same weights, batches of
  ``c`` left-padded prompts, greedy, the model's repetition penalty, the same ``max_tokens``:
  the reference a user would otherwise reach for. Output tokens count up to and including the
  first end-of-turn token of each row; the batch runs until its longest row ends (that is its
  cost). TTFT/ITL come from a per-step clock (a stopping criterion that only records time).
  ``dtype="auto"`` is the checkpoint's dtype on a GPU and float32 on a CPU: eager PyTorch on
  CPU runs SmolLM2's bfloat16 checkpoint about 4x slower than float32 (0.3 against 1.3 tokens/s
  at batch 1 with a 938-token prompt, measured one after another on the loaded 2-core machine),
  so the checkpoint's dtype would handicap the reference. PyTorch's intra-op threads are set to
  the usable cores (the engines' processes may have changed them) and recorded.

Fairness, for all three: the same prompts (unique per request; only the system prompt is shared,
which vLLM's prefix cache may reuse: a real feature of the engine), greedy decoding, the same
``max_tokens`` and repetition penalty, EOS honoured by each, the same warm-up before timing, and
each backend's concurrency sweep under the same stop rule, compared at its own best point.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from serving.chat.backend import Backend
from serving.chat.replies import build_result, parse_reply
from serving.chat.types import ChatRequest, ChatResult, Usage
from serving.http.openai_http import OpenAIBackend
from serving.models.registry import ModelSpec, Registry
from serving.open import BackendSpec, open_backend

__all__ = [
    "Sample",
    "Driver",
    "InProcessDriver",
    "ServerDriver",
    "TransformersDriver",
    "samples_from_results",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sample:
    """One request's outcome. Times in seconds; ``valid`` is ``None`` without a schema.
    ``pieces``: the streamed deltas that carried text (a server may send several tokens in one
    delta, and a token that completes no character in none), so ``itl_s`` holds ``pieces - 1``
    gaps; 0 where nothing was streamed."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    latency_s: float
    ttft_s: float | None
    itl_s: tuple[float, ...]
    valid: bool | None
    finish: str
    pieces: int = 0


class Driver(Protocol):
    name: str

    def start(self) -> float: ...

    def run(self, reqs: Sequence[ChatRequest], concurrency: int) -> tuple[float, list[Sample]]: ...

    def close(self) -> None: ...


def samples_from_results(results: Sequence[ChatResult], reqs: Sequence[ChatRequest]) -> list[Sample]:
    """Samples from our backends' results (no per-token timing)."""
    return [
        Sample(
            prompt_tokens=r.usage.prompt_tokens,
            completion_tokens=r.usage.completion_tokens,
            cached_tokens=r.usage.cached_tokens,
            latency_s=r.latency_s,
            ttft_s=None,
            itl_s=(),
            valid=None if q.json_schema is None else not r.is_fallback,
            finish=r.finish_reason,
        )
        for r, q in zip(results, reqs)
    ]


def _chunks(reqs: Sequence[ChatRequest], size: int) -> list[list[ChatRequest]]:
    return [list(reqs[i : i + size]) for i in range(0, len(reqs), size)]


class InProcessDriver:
    """``VLLMBackend`` in this process (see the module docstring)."""

    name = "vllm"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def start(self) -> float:
        return float(self.backend.start())

    def run(self, reqs: Sequence[ChatRequest], concurrency: int) -> tuple[float, list[Sample]]:
        samples: list[Sample] = []
        t0 = time.perf_counter()
        for chunk in _chunks(reqs, concurrency):
            samples += samples_from_results(self.backend.chat(chunk), chunk)
        return time.perf_counter() - t0, samples

    run_backend = run  # the in-process engine has one path: the agents' own

    def close(self) -> None:
        self.backend.close()


class ServerDriver:
    """An OpenAI-compatible vLLM server (started here unless ``base_url`` is given)."""

    name = "openai"

    def __init__(
        self,
        spec: ModelSpec,
        registry: Registry,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        log_path: Path | None = None,
        served_model_name: str | None = None,
        extra_body: dict[str, Any] | None = None,
        server_env: dict[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.extra_body = dict(extra_body or {})
        self.server_env = dict(server_env or {})
        self.registry = registry
        self.base_url = base_url
        self.api_key = api_key
        self.log_path = log_path
        self.served_model_name = served_model_name
        self._handle: Any = None

    def start(self) -> float:
        if self.base_url:
            return 0.0
        from serving.http.server import start_server

        t0 = time.perf_counter()
        # a loaded 2-core machine took 280 s to start an engine: wait longer than the default
        self._handle = start_server(
            self.spec,
            log_path=self.log_path,
            api_key=self.api_key,
            ready_timeout_s=900.0,
            extra_env=self.server_env,
        )
        self.base_url = self._handle.base_url
        return time.perf_counter() - t0

    def _backend(self, concurrency: int) -> Any:
        assert self.base_url, "start() first"
        spec = BackendSpec(
            "openai",
            self.spec.key,
            base_url=self.base_url,
            api_key=self.api_key,
            max_concurrency=concurrency,
            max_retries=0,
            served_model_name=self.served_model_name or "",
        )
        return open_backend(spec, self.registry)

    def run_backend(self, reqs: Sequence[ChatRequest], concurrency: int) -> tuple[float, list[Sample]]:
        """Through ``OpenAIBackend.chat`` (no streaming): the path the agents use."""
        backend = self._backend(concurrency)
        try:
            t0 = time.perf_counter()
            results = backend.chat(list(reqs))
            wall = time.perf_counter() - t0
        finally:
            backend.close()
        return wall, samples_from_results(results, reqs)

    def run(self, reqs: Sequence[ChatRequest], concurrency: int) -> tuple[float, list[Sample]]:
        import httpx

        backend = self._backend(concurrency)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        client = httpx.Client(
            headers=headers, limits=httpx.Limits(max_connections=concurrency), trust_env=False, timeout=600.0
        )
        try:
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                samples = list(pool.map(lambda r: self._stream(client, backend, r), reqs))
            return time.perf_counter() - t0, samples
        finally:
            client.close()
            backend.close()

    def run_rate(
        self, reqs: Sequence[ChatRequest], rate: float, *, seed: int = 0, burstiness: float = 1.0
    ) -> tuple[float, list[Sample]]:
        """Open loop: request ``i`` is sent at its arrival time whatever is in flight, arrivals
        a gamma process of ``rate`` requests/s (``burstiness`` 1: Poisson), as vLLM's serving
        benchmark draws them for ``--request-rate``; one thread per request, so nothing waits
        for a free client."""
        import httpx
        import numpy as np

        if rate <= 0 or burstiness <= 0:
            raise ValueError(f"rate={rate}, burstiness={burstiness}; allowed: both > 0")
        gaps = np.random.default_rng(seed).gamma(burstiness, 1.0 / (rate * burstiness), size=len(reqs))
        starts = np.concatenate([[0.0], np.cumsum(gaps[:-1])])
        n = max(1, len(reqs))
        backend = self._backend(n)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        client = httpx.Client(
            headers=headers, limits=httpx.Limits(max_connections=n), trust_env=False, timeout=600.0
        )
        t0 = time.perf_counter()

        def send(i: int) -> Sample:
            delay = t0 + float(starts[i]) - time.perf_counter()
            if delay > 0:  # the arrival schedule of a load generator, not a synchronisation
                time.sleep(delay)
            return self._stream(client, backend, reqs[i])

        try:
            with ThreadPoolExecutor(max_workers=n) as pool:
                samples = list(pool.map(send, range(len(reqs))))
            return time.perf_counter() - t0, samples
        finally:
            client.close()
            backend.close()

    def _stream(self, client: Any, backend: OpenAIBackend, req: ChatRequest) -> Sample:
        # the body OpenAIBackend would send, plus streaming with a final usage chunk
        body = backend._body(req, self.registry.get(req.model))
        body.update(self.extra_body)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        parts: list[str] = []
        stamps: list[float] = []
        usage: dict[str, Any] = {}
        finish = "stop"
        t0 = time.perf_counter()
        with client.stream("POST", f"{self.base_url}/chat/completions", json=body) as resp:
            if resp.status_code != 200:
                resp.read()
                raise RuntimeError(f"HTTP {resp.status_code}: {resp.text[:300]}")
            for line in resp.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices") or ():
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        stamps.append(time.perf_counter())
                        parts.append(text)
                    finish = choice.get("finish_reason") or finish
                usage = chunk.get("usage") or usage
        latency = time.perf_counter() - t0
        details = usage.get("prompt_tokens_details") or {}
        u = Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=int(details.get("cached_tokens") or 0),
        )
        finish = finish if finish in ("stop", "length") else "stop"
        result = build_result(
            req,
            "".join(parts),
            finish_reason=finish,
            usage=u,
            latency_s=latency,
            backend="openai",
            revision="",
        )
        return Sample(
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            cached_tokens=u.cached_tokens if details else None,
            latency_s=latency,
            ttft_s=stamps[0] - t0 if stamps else None,
            itl_s=tuple(b - a for a, b in zip(stamps, stamps[1:])),
            valid=None if req.json_schema is None else not result.is_fallback,
            finish=finish,
            pieces=len(stamps),
        )

    def close(self) -> None:
        if self._handle is not None:
            self._handle.stop()
            self._handle = None


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class TransformersDriver:
    """Plain ``transformers`` ``generate`` on the same weights (see the module docstring)."""

    name = "transformers"

    def __init__(
        self, model_dir: str | Path, spec: ModelSpec, *, dtype: str = "auto", device: str = "auto"
    ) -> None:
        self.model_dir = str(model_dir)
        self.spec = spec
        self.dtype = dtype
        self.device = device
        self._model: Any = None
        self._tok: Any = None
        self.threads: int | None = None

    def start(self) -> float:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        t0 = time.perf_counter()
        self._tok = AutoTokenizer.from_pretrained(self.model_dir)
        self._tok.padding_side = "left"
        if self._tok.pad_token is None:
            self._tok.pad_token = self._tok.eos_token
        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.dtype != "auto":
            dtype: Any = getattr(torch, self.dtype)
        else:  # see the module docstring: float32 is eager PyTorch's fast path on a CPU
            dtype = "auto" if self.device.startswith("cuda") else torch.float32
        if not self.device.startswith("cuda"):
            torch.set_num_threads(_usable_cpus())
        self.threads = torch.get_num_threads()
        self._model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=dtype).to(self.device).eval()
        return time.perf_counter() - t0

    @property
    def torch_dtype(self) -> str:
        return str(self._model.dtype).removeprefix("torch.") if self._model is not None else self.dtype

    def _eos_ids(self) -> set[int]:
        eos = self._model.generation_config.eos_token_id
        if eos is None:
            eos = self._tok.eos_token_id
        return set(eos if isinstance(eos, (list, tuple)) else [eos])

    def run(self, reqs: Sequence[ChatRequest], concurrency: int) -> tuple[float, list[Sample]]:
        samples: list[Sample] = []
        t0 = time.perf_counter()
        for chunk in _chunks(reqs, concurrency):
            samples += self._batch(chunk)
        return time.perf_counter() - t0, samples

    def _batch(self, chunk: list[ChatRequest]) -> list[Sample]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        max_tokens = {r.max_tokens for r in chunk}
        if len(max_tokens) != 1 or any(r.temperature != 0 for r in chunk):
            raise ValueError(
                "the transformers reference takes batches of greedy requests with one max_tokens"
            )
        stamps: list[float] = []

        class Clock(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                if input_ids.is_cuda:
                    torch.cuda.synchronize()
                stamps.append(time.perf_counter())
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        texts = [
            self._tok.apply_chat_template(
                [m.to_openai() for m in r.messages], add_generation_prompt=True, tokenize=False
            )
            for r in chunk
        ]
        enc = self._tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        penalty = chunk[0].repetition_penalty or self.spec.repetition_penalty
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self._model.generate(
                **enc,
                max_new_tokens=max_tokens.pop(),
                do_sample=False,
                repetition_penalty=penalty,
                pad_token_id=self._tok.pad_token_id,
                stopping_criteria=StoppingCriteriaList([Clock()]),
            )
        wall = time.perf_counter() - t0
        eos = self._eos_ids()
        width = enc["input_ids"].shape[1]
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        samples = []
        for row, req, plen in zip(out[:, width:].tolist(), chunk, prompt_lens):
            n = next((k + 1 for k, t in enumerate(row) if t in eos), None)
            finish = "stop" if n is not None else "length"
            n = n if n is not None else len(row)
            valid = None
            if req.json_schema is not None:
                text = self._tok.decode(row[:n], skip_special_tokens=True)
                valid = finish == "stop" and parse_reply(text, req.json_schema)[1] is None
            samples.append(
                Sample(
                    prompt_tokens=int(plen),
                    completion_tokens=n,
                    cached_tokens=None,
                    latency_s=wall,
                    ttft_s=stamps[0] - t0 if stamps else None,
                    itl_s=tuple(b - a for a, b in zip(stamps[: n - 1], stamps[1:n])),
                    valid=valid,
                    finish=finish,
                )
            )
        return samples

    def close(self) -> None:
        self._model = None
        self._tok = None
        import gc

        gc.collect()
