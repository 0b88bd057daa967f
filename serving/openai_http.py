"""HTTP backend for any OpenAI-compatible server (``vllm serve`` in production).

Structured outputs travel as ``structured_outputs: {"json": schema}`` in the request body (what
the OpenAI SDK's ``extra_body`` would add), Qwen3 thinking as ``chat_template_kwargs``; the server
separates reasoning when started with ``--reasoning-parser qwen3`` and returns it as
``message.reasoning`` (vLLM 0.32; ``reasoning_content``, its older name, is read too). Requests
run with bounded concurrency, a per-request timeout, and retries with exponential backoff on
connection errors, timeouts, 429 and 5xx.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from serving.errors import ConfigError, ModelNotPreparedError
from serving.registry import ModelSpec, Registry, default_registry
from serving.replies import build_result, error_result, thinks
from serving.sampling import effective_sampling, generation_defaults
from serving.types import ChatRequest, ChatResult, Usage, ensure_requests
from serving.vllm_engine import check_logit_bias

__all__ = ["OpenAIBackend"]

log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend:
    """Chat through ``POST {base_url}/chat/completions``.

    Args:
        base_url: server root including ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``).
        registry: model registry (for defaults such as thinking and repetition penalty).
        api_key: bearer token, if the server wants one.
        max_concurrency: requests in flight at once.
        timeout_s: per-request timeout in seconds (``None``: the model's registry value, 600).
        max_retries: retries after the first attempt.
        backoff_s: first retry delay in seconds; doubles each retry.
        served_model_name: name the server knows the model by (default: the registry key).
        logit_bias: token id -> bias (-100..100) sent with every request (``logit_bias`` of the
            OpenAI API); see :class:`serving.vllm_engine.EngineOptions`.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        *,
        registry: Registry | None = None,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout_s: float | None = None,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        served_model_name: str | None = None,
        logit_bias: Mapping[int, float] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url={base_url!r}; allowed: an http(s):// URL")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency={max_concurrency}; allowed: >= 1")
        if max_retries < 0:
            raise ConfigError(f"max_retries={max_retries}; allowed: >= 0")
        self.base_url = base_url.rstrip("/")
        self.registry = registry or default_registry()
        self.api_key = api_key
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.served_model_name = served_model_name
        self.logit_bias = check_logit_bias(logit_bias)
        self._client: Any = None

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(
                headers=headers,
                limits=httpx.Limits(max_connections=self.max_concurrency),
                trust_env=False,
            )
        return self._client

    def _body(self, req: ChatRequest, spec: ModelSpec) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_model_name or req.model,
            "messages": [m.to_openai() for m in req.messages],
            "max_tokens": req.max_tokens,
            "stream": False,
        }
        # a field left None is not sent: the server applies the model's generation config
        # (`vllm serve --generation-config auto`, serving.sampling)
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.top_p is not None:
            body["top_p"] = req.top_p
        if req.seed is not None:
            body["seed"] = req.seed
        if req.stop:
            body["stop"] = list(req.stop)
        penalty = req.repetition_penalty if req.repetition_penalty is not None else spec.repetition_penalty
        if penalty != 1.0:
            body["repetition_penalty"] = penalty
        thinking = req.thinking if req.thinking is not None else spec.thinking_default
        if thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": thinking}
        if req.json_schema is not None:
            body["structured_outputs"] = {"json": dict(req.json_schema)}
        if self.logit_bias:
            body["logit_bias"] = {str(k): v for k, v in self.logit_bias.items()}
        return body

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any]:
        """What the server samples ``req`` with, as far as this client can know it
        (:func:`serving.sampling.effective_sampling`): the defaults are the fields of the model
        folder's ``generation_config.json`` where the registry's folder is on this machine
        (``vllm serve --generation-config auto`` applies them); ``source`` says which."""
        spec = self.registry.get(req.model)
        try:
            defaults = generation_defaults(spec.resolve_path())
            source = "model folder generation_config.json (vllm serve --generation-config auto)"
        except (ConfigError, ModelNotPreparedError):
            defaults, source = {}, "server default (model folder not on this machine)"
        out = effective_sampling(req, defaults, registry_penalty=spec.repetition_penalty)
        return {**out, "source": source}

    def _post(self, req: ChatRequest) -> ChatResult:
        import httpx

        try:
            spec = self.registry.get(req.model)
        except ConfigError as exc:
            return error_result(req, str(exc), backend=self.name)
        timeout = self.timeout_s or spec.timeout_s
        body = self._body(req, spec)
        url = f"{self.base_url}/chat/completions"
        delay, last = self.backoff_s, ""
        for attempt in range(self.max_retries + 1):
            t0 = time.perf_counter()
            try:
                resp = self._http().post(url, json=body, timeout=timeout)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    return self._result(req, resp.json(), time.perf_counter() - t0, spec)
                last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                if resp.status_code not in _RETRY_STATUS:
                    break
            if attempt < self.max_retries:
                log.warning(
                    "request %s failed (%s); retry %d in %.1f s", req.key()[:10], last, attempt + 1, delay
                )
                time.sleep(delay)
                delay *= 2
        return error_result(
            req, f"HTTP backend gave up after {attempt + 1} attempt(s): {last}", backend=self.name
        )

    def _result(self, req: ChatRequest, data: dict[str, Any], latency: float, spec: ModelSpec) -> ChatResult:
        choice = (data.get("choices") or [{}])[0]
        msg = choice.get("message") or {}
        reasoning = msg.get("reasoning") or msg.get("reasoning_content")
        content = msg.get("content") or ""
        if reasoning is None and thinks(req, spec) and "</think>" not in content:
            # a server started with the registry's reasoning parser has split the reply already:
            # its content is the answer (a tagged content means a server without the parser)
            reasoning = ""
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        finish = choice.get("finish_reason") or "stop"
        return build_result(
            req,
            content,
            finish_reason=finish if finish in ("stop", "length") else "stop",
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                cached_tokens=int(details.get("cached_tokens") or 0),
            ),
            latency_s=latency,
            backend=self.name,
            revision=str(data.get("model") or ""),
            reasoning=reasoning,
        )

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Send all requests with at most ``max_concurrency`` in flight; results in order."""
        reqs = ensure_requests(requests)
        if len(reqs) <= 1:
            return [self._post(r) for r in reqs]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(reqs))) as pool:
            return list(pool.map(self._post, reqs))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
