"""Prompt templates as versioned package data: YAML files rendered with Jinja2 (StrictUndefined).

A prompt file holds ``name``, ``version``, ``system``, ``user`` (Jinja templates) and optionally
``schema`` (the JSON schema of the reply). Rendering fails loudly on a missing variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from localfin.errors import ConfigError

__all__ = ["Prompt", "load_prompt"]


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt template."""

    name: str
    version: str
    system: str
    user: str
    schema: dict[str, Any] | None

    def render(self, **values: Any) -> tuple[str, str]:
        """``(system, user)`` texts with ``values`` filled in; missing values raise."""
        import jinja2

        try:
            return (
                _template(self.system).render(**values).strip(),
                _template(self.user).render(**values).strip(),
            )
        except jinja2.UndefinedError as exc:
            raise ConfigError(f"prompt {self.name!r} v{self.version}: {exc}") from exc


@lru_cache(maxsize=256)
def _template(text: str) -> Any:
    """A compiled template (compiling is most of the cost of a render; agents render the same
    few templates thousands of times)."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
    return env.from_string(text)


def load_prompt(name: str) -> Prompt:
    """Load ``agent/prompts/<name>.yaml`` from the installed package."""
    import yaml

    try:
        text = resources.files("agent").joinpath("prompts", f"{name}.yaml").read_text("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no prompt named {name!r} in agent/prompts") from None
    data = yaml.safe_load(text)
    missing = [k for k in ("name", "version", "system", "user") if k not in data]
    if missing:
        raise ConfigError(f"prompt file {name}.yaml lacks {', '.join(missing)}")
    return Prompt(str(data["name"]), str(data["version"]), data["system"], data["user"], data.get("schema"))
