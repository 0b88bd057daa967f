"""Top-level `localfin chat`, `localfin serve` and `localfin demo` commands."""

from __future__ import annotations

import json
from pathlib import Path

import typer

__all__ = ["register"]


def _registry_for(model: str, model_path: Path | None):
    from serving.registry import default_registry

    reg = default_registry()
    if model_path is not None:
        reg = reg.with_spec(reg.get(model).with_path(model_path))
    return reg


def chat(
    model: str = typer.Argument(..., help="Registry key, e.g. smollm2-135m or qwen3-4b."),
    prompt: str = typer.Argument(..., help="The user message."),
    schema: Path = typer.Option(None, help="JSON schema file the reply must satisfy."),
    thinking: bool = typer.Option(None, "--thinking/--no-thinking", help="Qwen3 thinking switch."),
    max_tokens: int = typer.Option(None, help="Completion budget (default: the model's)."),
    temperature: float = typer.Option(0.0),
    system: str = typer.Option(None, help="Optional system message."),
    base_url: str = typer.Option(None, help="Use a running server (…/v1) instead of the engine."),
    api_key: str = typer.Option(None, envvar="LOCALFIN_API_KEY"),
    model_path: Path = typer.Option(None, help="Explicit weights directory."),
    journal: Path = typer.Option(None, help="Journal the call in this SQLite file."),
) -> None:
    """One chat round-trip; prints the reply (and parsed JSON, reasoning, tokens) as JSON."""
    from localfin.errors import LocalfinError
    from serving.backend import get_backend
    from serving.journal import Journal, JournaledBackend
    from serving.types import ChatRequest

    reg = _registry_for(model, model_path)
    spec = reg.get(model)
    try:
        json_schema = json.loads(schema.read_text()) if schema else None
        req = ChatRequest.simple(
            model,
            prompt,
            system=system,
            max_tokens=max_tokens or min(spec.default_max_tokens, 1024),
            temperature=temperature,
            thinking=thinking,
            json_schema=json_schema,
            call_type="chat",
        )
        backend = (
            get_backend("openai", registry=reg, base_url=base_url, api_key=api_key)
            if base_url
            else get_backend("vllm", registry=reg, model=model)
        )
        if journal:
            backend = JournaledBackend(backend, Journal(journal))
        res = backend.chat([req])[0]
        backend.close()
    except (LocalfinError, json.JSONDecodeError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(
        json.dumps(
            {
                "text": res.text,
                "parsed": res.parsed,
                "parse_error": res.parse_error,
                "reasoning": res.reasoning,
                "finish_reason": res.finish_reason,
                "usage": res.usage.__dict__,
                "latency_s": round(res.latency_s, 3),
                "backend": res.backend,
                "revision": res.revision,
            },
            indent=2,
        )
    )


def serve(
    model: str = typer.Argument(..., help="Registry key."),
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback unless told otherwise)."),
    port: int = typer.Option(8000),
    api_key: str = typer.Option(None, envvar="LOCALFIN_API_KEY", help="Require this bearer key."),
    model_path: Path = typer.Option(None, help="Explicit weights directory."),
    dry_run: bool = typer.Option(False, help="Print the server command and exit."),
) -> None:
    """Run an OpenAI-compatible vLLM server for a registry model (foreground)."""
    import os
    import subprocess

    from localfin import env
    from localfin.errors import LocalfinError
    from serving.server import check_host, server_command

    try:
        spec = _registry_for(model, model_path).get(model)
        cmd = server_command(spec, host=check_host(host), port=port, api_key=api_key)
    except LocalfinError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    shown = [("***" if i and cmd[i - 1] == "--api-key" else c) for i, c in enumerate(cmd)]
    typer.echo(" ".join(shown), err=True)
    if dry_run:
        return
    if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
        typer.echo(f"warning: serving on {host} without an API key", err=True)
    child_env = dict(os.environ, **env.offline_env())
    raise typer.Exit(subprocess.call(cmd, env=child_env))


def demo(
    model: str = typer.Option("smollm2-135m", help="Registry key of the CPU model."),
    out: Path = typer.Option(Path("reports/demo"), help="Output folder for store, journal, report."),
    model_path: Path = typer.Option(None, help="Explicit weights directory."),
    requests: int = typer.Option(8, help="Schema-constrained requests in the batch."),
) -> None:
    """The CPU demo: synthetic market → causal screen → LLM pair pick (journaled) → report."""
    from localfin_cli.demo import run_demo

    report = run_demo(
        model=model, out_dir=out, registry=_registry_for(model, model_path), n_requests=requests
    )
    typer.echo(report.read_text())


def register(app: typer.Typer) -> None:
    """Attach the top-level serving commands to ``app``."""
    app.command("chat")(chat)
    app.command("serve")(serve)
    app.command("demo")(demo)
