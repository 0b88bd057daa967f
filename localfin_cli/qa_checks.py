"""The options of the `localfin qa` commands that name something (a model, a backend kind, an
embedder, tools, the sandbox policy, a store), checked before any data is read or any engine
starts; each error names the option as the user typed it (``--tools``, not an internal class)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from serving.models.registry import Registry

__all__ = ["EMBEDDERS", "checked_options", "tool_names_of"]

#: the embedders ``--embedder`` takes
EMBEDDERS = ("minilm", "hashing")


def checked_options(
    keys: dict[str, str | None], *, backend: str, base_url: str | None, embedder: str | None = None
) -> Registry:
    """Every name the options give, checked before any data is read or any engine starts, each
    error naming the option: ``--model`` / ``--judge`` (registry keys), ``--backend`` (a backend
    kind), ``--embedder``. ``keys``: option -> the registry key it gives (None: not given).
    Returns the registry."""
    from localfin.errors import ConfigError
    from serving.models.registry import default_registry
    from serving.open import BACKEND_KINDS, backend_kinds

    if backend not in BACKEND_KINDS and backend not in backend_kinds():
        raise ConfigError(f"--backend {backend!r}; allowed: {', '.join(backend_kinds())}")
    if backend == "openai" and not base_url:
        raise ConfigError("--base-url is required with --backend openai (e.g. http://127.0.0.1:8000/v1)")
    reg = default_registry()
    for option, key in keys.items():
        if key is not None:
            try:
                reg.get(key)
            except ConfigError as exc:
                raise ConfigError(f"{option}: {exc}") from None
    if embedder is not None and embedder not in EMBEDDERS:
        raise ConfigError(f"--embedder={embedder!r}; allowed: {', '.join(EMBEDDERS)}")
    return reg


def tool_names_of(tools: str, sandbox: str, store: Path | None) -> tuple[str, ...]:
    """The ``--tools`` names, checked against the built-in and the installed plugins' tools,
    with ``--sandbox-missing`` and ``--store`` (errors name the option)."""
    from agent.qa.data.extensions import tool_names
    from localfin.errors import ConfigError

    names = tuple(t.strip() for t in tools.split(",") if t.strip())
    known = tool_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"--tools has {', '.join(map(repr, unknown))}; allowed: {', '.join(known)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"--tools={tools!r} names a tool twice; allowed: each tool once")
    if sandbox not in ("raise", "refuse"):
        raise ConfigError(f"--sandbox-missing={sandbox!r}; allowed: raise, refuse")
    if "lookup" in names and store is not None and not Path(store).is_file():
        raise ConfigError(f"--store {store}: no market store there (localfin data import makes one)")
    return names
