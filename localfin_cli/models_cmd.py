"""`localfin models list|prepare`."""

from __future__ import annotations

from pathlib import Path

import typer

from localfin_cli._common import progress_for, quiet_run, result

__all__ = ["app"]

app = typer.Typer(help="Registry models: list them, prepare the CPU default.", no_args_is_help=True)


@app.command("list")
def list_models() -> None:
    """Show every registry key, where its weights are expected, whether they are there, and where
    the entry comes from (localfin, a plugin, a models file)."""
    from rich.console import Console
    from rich.table import Table

    from serving.errors import ModelNotPreparedError
    from serving.models.registry import default_registry

    table = Table("key", "model", "device", "source", "tp", "max len", "parsers", "ready / where", "from")
    reg = default_registry()
    for s in reg.specs():
        try:
            where = f"yes: {s.resolve_path()}"
        except ModelNotPreparedError as exc:
            where = "no: " + str(exc).split(": ", 1)[-1]
        parsers = ",".join(p for p in (s.reasoning_parser, s.tool_call_parser) if p) or "-"
        table.add_row(
            s.key,
            s.display_name,
            s.device,
            s.source,
            str(s.tensor_parallel_size),
            str(s.max_model_len),
            parsers,
            where,
            reg.origin(s.key),
        )
    Console(width=200).print(table)


@app.command("prepare")
def prepare(
    ctx: typer.Context,
    key: str = typer.Argument("smollm2-135m", help="Registry key of a pip-packaged model."),
    cache_dir: Path = typer.Option(None, help="Target folder (default: LOCALFIN_MODEL_CACHE)."),
    force: bool = typer.Option(False, help="Convert again even if a verified copy exists."),
) -> None:
    """Convert a pip-packaged model once into HF safetensors in the cache (checked by sha256)."""
    from localfin import env
    from localfin.errors import ConfigError
    from serving.models.prepare import prepare_smollm2
    from serving.models.registry import default_registry

    spec = default_registry().get(key)
    if spec.source != "pip_package":
        raise ConfigError(
            f"{key} is a {spec.source} model; nothing to prepare (prepare applies to pip-packaged "
            f"models; {key} is expected at {spec.expected_path() or 'a directory you give'})"
        )
    with quiet_run(ctx, "models-prepare", announce=False) as rl:
        path = prepare_smollm2(cache_dir or env.model_cache_dir(), force=force, progress=progress_for(rl))
        result(rl, str(path))
