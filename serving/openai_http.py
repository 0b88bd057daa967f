"""HTTP backend for any OpenAI-compatible server (``vllm serve`` in production).

Structured outputs travel as ``structured_outputs: {"json": schema}`` in the request body (what
the OpenAI SDK's ``extra_body`` would add; not for a request with ``constrained`` False, whose
schema only checks the reply), Qwen3 thinking as ``chat_template_kwargs``; the server
separates reasoning when started with ``--reasoning-parser qwen3`` and returns it as
``message.reasoning`` (vLLM 0.32; ``reasoning_content``, its older name, is read too). Requests
run with bounded concurrency and a per-request timeout.

Faults (docs/faults.md), one rule each:

- transient (connection refused or reset, a timeout, HTTP 408, 429, 502, 503, 504): retried
  with exponential backoff, ``backoff_s`` doubling up to ``backoff_max_s``, at most
  ``max_retries`` times; when they are spent the server counts as gone:
  :class:`~serving.errors.ServerUnavailableError` (exit code 4) stops the run at the call
  boundary, carrying the replies that did arrive so the journal keeps them;
- the server refuses the key (HTTP 401, 403) or does not serve the model (not in ``GET
  /v1/models``, or HTTP 404): a :class:`~serving.errors.ConfigError` (exit code 2) at once,
  before the first request (:meth:`OpenAIBackend.check`), never retried;
- one request refused (HTTP 400, e.g. a prompt over the context; 500 after its retries): that
  request's recorded fallback with the server's reason; ``max_failures_in_a_row`` such
  failures in a row stop the run (:class:`~serving.errors.BackendError`, exit code 1).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from serving.errors import ConfigError, ModelNotPreparedError, ServerUnavailableError
from serving.registry import ModelSpec, Registry, default_registry
from serving.replies import FailureStreak, build_result, error_result, thinks
from serving.sampling import effective_sampling, generation_defaults
from serving.types import ChatRequest, ChatResult, ToolCall, Usage, ensure_requests
from serving.vllm_engine import check_logit_bias

__all__ = ["OpenAIBackend", "TRANSIENT_STATUS"]

log = logging.getLogger(__name__)

#: statuses retried with backoff; when the retries are spent the server counts as gone
TRANSIENT_STATUS = frozenset({408, 429, 502, 503, 504})
#: retried with backoff too, but one request's failure when they are spent (a server error
#: that may be this request's own)
_RETRY_THEN_FALLBACK = frozenset({500})
_AUTH_STATUS = frozenset({401, 403})
#: seconds to establish a connection (the request timeout bounds the whole request)
_CONNECT_TIMEOUT_S = 10.0


class _Gone(Exception):
    """A request whose retries are spent on transient failures (internal)."""


class OpenAIBackend:
    """Chat through ``POST {base_url}/chat/completions``.

    Args:
        base_url: server root including ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``).
        registry: model registry (for defaults such as thinking and repetition penalty).
        api_key: bearer token, if the server wants one.
        max_concurrency: requests in flight at once.
        timeout_s: per-request timeout in seconds (``None``: the model's registry value, 600).
        max_retries: retries of a transient failure after the first attempt.
        backoff_s: first retry delay in seconds; doubles each retry.
        backoff_max_s: the longest delay between two attempts (seconds).
        served_model_name: name the server knows the model by (default: the registry key).
        logit_bias: token id -> bias (-100..100) sent with every request (``logit_bias`` of the
            OpenAI API); see :class:`serving.vllm_engine.EngineOptions`.
        model: registry key of the model this client serves (optional): :meth:`check` then
            verifies the server serves it before the first request.
        max_failures_in_a_row: consecutive requests refused by the server that stop the run.
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
        max_retries: int = 4,
        backoff_s: float = 1.0,
        backoff_max_s: float = 30.0,
        served_model_name: str | None = None,
        logit_bias: Mapping[int, float] | None = None,
        model: str = "",
        max_failures_in_a_row: int = 8,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url={base_url!r}; allowed: an http(s):// URL")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency={max_concurrency}; allowed: >= 1")
        if max_retries < 0:
            raise ConfigError(f"max_retries={max_retries}; allowed: >= 0")
        if timeout_s is not None and not timeout_s > 0:
            raise ConfigError(f"timeout_s={timeout_s}; allowed: > 0 seconds or None")
        if backoff_s < 0 or backoff_max_s < backoff_s:
            raise ConfigError(
                f"backoff_s={backoff_s}, backoff_max_s={backoff_max_s}; "
                "allowed: 0 <= backoff_s <= backoff_max_s"
            )
        self.base_url = base_url.rstrip("/")
        self.registry = registry or default_registry()
        self.api_key = api_key
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.served_model_name = served_model_name
        self.logit_bias = check_logit_bias(logit_bias)
        self.model = model
        self.streak = FailureStreak(max_failures_in_a_row, what=f"the server at {self.base_url}")
        self._client: Any = None
        self._served: set[str] | None = None  # names GET /models listed (None: not asked yet)
        self._checked: set[str] = set()

    def settings(self) -> dict[str, Any]:
        """The client's fault settings, for a run's manifest."""
        return {
            "backend": self.name,
            "base_url": self.base_url,
            "served_model_name": self.served_model_name,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": self.backoff_s,
            "backoff_max_s": self.backoff_max_s,
            "max_concurrency": self.max_concurrency,
            "max_failures_in_a_row": self.streak.limit,
        }

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

    def _timeout(self, spec: ModelSpec | None = None) -> Any:
        import httpx

        total = self.timeout_s or (spec.timeout_s if spec is not None else 600.0)
        return httpx.Timeout(total, connect=min(total, _CONNECT_TIMEOUT_S))

    def _delay(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1`` (0-based ``attempt``)."""
        return min(self.backoff_s * (2.0**attempt), self.backoff_max_s)

    def _gone(self, what: str, attempts: int) -> str:
        return (
            f"the model server at {self.base_url} did not answer after {attempts} attempt(s) "
            f"(last: {what}); the run stopped at a call boundary with every answered call "
            "journaled: restart the server, then rerun with --resume"
        )

    # -- before the first request ---------------------------------------------------------
    def check(self, models: Sequence[str] = ()) -> None:
        """Ask ``GET /models`` (with the transient-failure retries): raise
        ServerUnavailableError when the server does not answer, ConfigError when it refuses the
        key or does not serve ``models`` (default: this client's model, if given)."""
        import httpx

        names = [self.served_model_name or m for m in (models or ([self.model] if self.model else []))]
        if self._served is None:
            url = f"{self.base_url}/models"
            last = ""
            for attempt in range(self.max_retries + 1):
                try:
                    resp = self._http().get(url, timeout=self._timeout())
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                else:
                    if resp.status_code == 200:
                        try:
                            data = resp.json().get("data") or []
                            self._served = {str(d.get("id")) for d in data if isinstance(d, dict)}
                        except (ValueError, AttributeError):
                            self._served = set()  # not an OpenAI model list: checked at the first request
                        break
                    if resp.status_code in _AUTH_STATUS:
                        self._refused(resp, "")
                    last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                    if resp.status_code not in TRANSIENT_STATUS:
                        self._served = set()  # no model list here: the first request tells
                        break
                if attempt == self.max_retries:
                    raise ServerUnavailableError(self._gone(last, attempt + 1))
                time.sleep(self._delay(attempt))
        for name in names:
            if name in self._checked:
                continue
            if self._served and name not in self._served:
                raise ConfigError(
                    f"the server at {self.base_url} serves {sorted(self._served)}, not {name!r}; give the "
                    "model key it serves (or its served_model_name)"
                )
            self._checked.add(name)

    def _refused(self, resp: Any, model: str) -> None:
        """Raise ConfigError for a response that no retry can change (key, model, endpoint)."""
        code = resp.status_code
        if code in _AUTH_STATUS:
            raise ConfigError(
                f"the server at {self.base_url} refused the request (HTTP {code}: {resp.text[:200]}); "
                "give the API key it was started with (LOCALFIN_API_KEY, or the backend's api_key)"
            )
        if code == 404:
            what = f"does not serve model {model!r}" if model else "has no such endpoint"
            raise ConfigError(
                f"the server at {self.base_url} {what} (HTTP 404: {resp.text[:200]}); check base_url "
                "(it ends in /v1) and the model key"
            )

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
        if req.json_schema is not None and req.constrained:
            body["structured_outputs"] = {"json": dict(req.json_schema)}
        if req.tools:  # the server reads the calls with its --tool-call-parser
            body["tools"] = [dict(t) for t in req.tools]
            body["tool_choice"] = req.tool_choice
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

    def _post(self, req: ChatRequest, stop: threading.Event | None = None) -> ChatResult:
        import httpx

        try:
            spec = self.registry.get(req.model)
        except ConfigError as exc:
            return error_result(req, str(exc), backend=self.name)
        body = self._body(req, spec)
        url = f"{self.base_url}/chat/completions"
        last, gone = "", True
        for attempt in range(self.max_retries + 1):
            if stop is not None and stop.is_set():
                raise _Gone("")  # another request of this call found the server gone: its message tells
            t0 = time.perf_counter()
            try:
                resp = self._http().post(url, json=body, timeout=self._timeout(spec))
            except httpx.HTTPError as exc:
                last, gone = f"{type(exc).__name__}: {exc}", True
            else:
                if resp.status_code == 200:
                    return self._result(req, resp.json(), time.perf_counter() - t0, spec)
                self._refused(resp, str(body["model"]))
                last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                gone = resp.status_code in TRANSIENT_STATUS
                if not gone and resp.status_code not in _RETRY_THEN_FALLBACK:
                    break  # this request's own failure (400: e.g. a prompt over the context)
            if attempt < self.max_retries:
                delay = self._delay(attempt)
                log.warning(
                    "request %s failed (%s); retry %d in %.1f s", req.key()[:10], last, attempt + 1, delay
                )
                if stop is not None:
                    stop.wait(delay)
                else:
                    time.sleep(delay)
        if gone:
            if stop is not None:
                stop.set()
            raise _Gone(self._gone(last, attempt + 1))
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
        # the server's ids are random: numbered in reply order instead (a rerun's requests,
        # which repeat them, keep their journal keys)
        calls = tuple(
            ToolCall(f"call_{i}", c.name, c.arguments)
            for i, c in enumerate(ToolCall.from_dict(x) for x in (msg.get("tool_calls") or ()))
        )
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
            tool_calls=calls,
        )

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Send all requests with at most ``max_concurrency`` in flight; results in order.

        Raises ServerUnavailableError (with the replies that did arrive) when the server is
        gone, ConfigError when it refuses the key or the model."""
        reqs = ensure_requests(requests)
        self.check(sorted({r.model for r in reqs}))
        stop = threading.Event()
        done: dict[int, ChatResult] = {}
        failed: list[BaseException] = []

        def one(i: int) -> None:
            try:
                done[i] = self._post(reqs[i], stop)
            except BaseException as exc:  # noqa: BLE001 - the first is raised below, the others stop
                stop.set()
                failed.append(exc)

        if len(reqs) <= 1:
            for i in range(len(reqs)):
                one(i)
        else:
            pool = ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(reqs)))
            try:
                list(pool.map(one, range(len(reqs))))
            finally:
                # a second Ctrl-C (localfin.interrupt.StopNow) leaves at once, not after the
                # requests in flight; on the normal path every request has ended already
                pool.shutdown(wait=False, cancel_futures=True)
        for exc in failed:
            if not isinstance(exc, _Gone):
                raise exc  # a refused key or model: no retry changes it
        if failed:
            told = [str(e) for e in failed if str(e)]
            raise ServerUnavailableError(told[0] if told else self._gone("stopped", 0), done=done)
        out = [done[i] for i in range(len(reqs))]
        self.streak.update(out)
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
