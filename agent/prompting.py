"""Prompt templates as versioned package data: YAML files rendered with Jinja2 (StrictUndefined).

A prompt file holds ``name``, ``version``, ``system``, ``user`` (Jinja templates) and optionally
``schema`` (the JSON schema of the reply). Rendering fails loudly on a missing variable.

A user's own prompt texts: :func:`load_prompt` with a ``directory`` reads ``<directory>/<name>.yaml``
when that file exists (the packaged file otherwise) and accepts it only if it has the packaged
file's format: the same ``name``, the same template variables (the values the code fills in), and
the same reply schema fields (property names, types, enums, required fields; length and count
bounds may differ but must be present where the packaged schema has them, so every reply stays
bounded). :func:`check_prompt_dir` validates a whole directory at config load, before any model
call; every error names the file and the missing or unknown variable or field.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from localfin.errors import ConfigError

__all__ = [
    "Prompt",
    "load_prompt",
    "check_prompt_dir",
    "packaged_names",
    "prompt_record",
    "template_variables",
]

#: Schema keys whose values a user file may change (bounds); the key itself must stay.
_BOUNDS = ("maxLength", "minLength", "maxItems", "minItems")


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt template: its texts, reply schema, and where it came from (``source``:
    ``"package"`` or the user file's path; ``sha256``: of the file's text)."""

    name: str
    version: str
    system: str
    user: str
    schema: dict[str, Any] | None
    source: str = "package"
    sha256: str = ""

    def render(self, **values: Any) -> tuple[str, str]:
        """``(system, user)`` texts with ``values`` filled in; missing values raise."""
        import jinja2

        try:
            return (
                _template(self.system).render(**values).strip(),
                _template(self.user).render(**values).strip(),
            )
        except jinja2.UndefinedError as exc:
            raise ConfigError(f"prompt {self.name!r} v{self.version} ({self.source}): {exc}") from exc


@lru_cache(maxsize=256)
def _template(text: str) -> Any:
    """A compiled template (compiling is most of the cost of a render; agents render the same
    few templates thousands of times)."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
    return env.from_string(text)


def template_variables(text: str) -> set[str]:
    """The variables a template reads from its caller (loop variables excluded)."""
    import jinja2
    from jinja2 import meta

    env = jinja2.Environment(autoescape=False)
    try:
        return set(meta.find_undeclared_variables(env.parse(text)))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"template syntax error at line {exc.lineno}: {exc.message}") from exc


def _parse(text: str, where: str, name: str) -> Prompt:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"prompt file {where}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"prompt file {where}: expected a mapping with name, version, system, user")
    missing = [k for k in ("name", "version", "system", "user") if k not in data]
    if missing:
        raise ConfigError(f"prompt file {where} lacks {', '.join(missing)}")
    for k in ("system", "user"):
        if not isinstance(data[k], str):
            raise ConfigError(f"prompt file {where}: {k} must be a text, got {type(data[k]).__name__}")
    schema = data.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise ConfigError(f"prompt file {where}: schema must be a mapping (a JSON schema)")
    return Prompt(
        str(data["name"]),
        str(data["version"]),
        data["system"],
        data["user"],
        schema,
        source=where,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


@lru_cache(maxsize=64)
def _packaged(name: str) -> Prompt:
    try:
        text = resources.files("agent").joinpath("prompts", f"{name}.yaml").read_text("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no prompt named {name!r} in agent/prompts") from None
    p = _parse(text, f"{name}.yaml", name)
    return Prompt(p.name, p.version, p.system, p.user, p.schema, "package", p.sha256)


def _shape(schema: Any, path: str) -> Any:
    """The part of a reply schema a user file must keep: every key and value except the
    values of the bound keys (which may change, but must stay present)."""
    if isinstance(schema, dict):
        return {k: ("<bound>" if k in _BOUNDS else _shape(v, f"{path}.{k}")) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_shape(v, f"{path}[{i}]") for i, v in enumerate(schema)]
    return schema


def _diff(own: Any, ref: Any, path: str) -> str | None:
    """The first place where ``own``'s shape differs from ``ref``'s, in words."""
    if isinstance(ref, dict) and isinstance(own, dict):
        for k in ref:
            if k not in own:
                return f"schema field {path}.{k} is missing"
        for k in own:
            if k not in ref:
                return f"schema field {path}.{k} is unknown (the packaged schema has no such key)"
        for k in ref:
            d = _diff(own[k], ref[k], f"{path}.{k}")
            if d:
                return d
        return None
    if own != ref:
        return f"schema field {path} is {own!r}; the packaged file has {ref!r}"
    return None


def _check(own: Prompt, ref: Prompt, where: str) -> None:
    if own.name != ref.name:
        raise ConfigError(
            f"prompt file {where}: name {own.name!r}; allowed: {ref.name!r} (the file's own name)"
        )
    try:
        mine = template_variables(own.system) | template_variables(own.user)
    except ConfigError as exc:
        raise ConfigError(f"prompt file {where}: {exc}") from None
    want = template_variables(ref.system) | template_variables(ref.user)
    if want - mine:
        raise ConfigError(
            f"prompt file {where}: template variable(s) {', '.join(sorted(want - mine))} missing; "
            f"the code fills in exactly: {', '.join(sorted(want))}"
        )
    if mine - want:
        raise ConfigError(
            f"prompt file {where}: unknown template variable(s) {', '.join(sorted(mine - want))}; "
            f"the code fills in exactly: {', '.join(sorted(want))}"
        )
    if (own.schema is None) != (ref.schema is None):
        what = "missing" if own.schema is None else "unexpected"
        raise ConfigError(f"prompt file {where}: schema {what}")
    if ref.schema is not None:
        d = _diff(_shape(own.schema, "schema"), _shape(ref.schema, "schema"), "schema")
        if d:
            raise ConfigError(f"prompt file {where}: {d}")


@lru_cache(maxsize=128)
def _user_file(name: str, path: str, stamp: tuple[int, int]) -> Prompt:
    text = Path(path).read_text(encoding="utf-8")
    own = _parse(text, path, name)
    _check(own, _packaged(name), path)
    return own


def load_prompt(name: str, directory: str | Path | None = None) -> Prompt:
    """``agent/prompts/<name>.yaml``, or ``<directory>/<name>.yaml`` when ``directory`` is given
    and holds that file (checked against the packaged file: module docstring)."""
    if directory:
        f = Path(directory).expanduser() / f"{name}.yaml"
        try:
            st = os.stat(f)
        except FileNotFoundError:
            return _packaged(name)
        return _user_file(name, str(f), (st.st_mtime_ns, st.st_size))
    return _packaged(name)


def packaged_names() -> tuple[str, ...]:
    """The names of every packaged prompt (``agent/prompts/*.yaml``), sorted."""
    folder = resources.files("agent").joinpath("prompts")
    return tuple(sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml")))


def check_prompt_dir(directory: str | Path, names: tuple[str, ...]) -> dict[str, Prompt]:
    """Validate every prompt file of ``directory`` that a run renders against the packaged one;
    ``names``: the prompts the run renders. The folder may also hold the other packaged prompts
    (a copy of all of ``agent/prompts``: the other agent's, the demo's), which this run does not
    read; any other ``*.yaml`` file is an error (a misspelt file would otherwise be ignored
    silently). Returns name -> the prompt a run will use."""
    d = Path(directory).expanduser()
    if not d.is_dir():
        raise ConfigError(
            f"prompt.dir={str(directory)!r} is not a directory; allowed: a folder of prompt YAML files"
        )
    known = set(names) | set(packaged_names())
    unknown = sorted(p.name for p in d.glob("*.yaml") if p.stem not in known)
    unknown += sorted(p.name for p in d.glob("*.yml"))
    if unknown:
        raise ConfigError(
            f"prompt.dir={str(d)!r} holds {', '.join(unknown)}, not a prompt of localfin; allowed file "
            f"names: those of this run ({', '.join(n + '.yaml' for n in names)}) and the other packaged "
            "prompts (agent/prompts)"
        )
    return {n: load_prompt(n, d) for n in names}


def prompt_record(prompt: Prompt) -> dict[str, str]:
    """What a manifest records of a prompt: name, version, sha256 of its file, source."""
    return {"name": prompt.name, "version": prompt.version, "sha256": prompt.sha256, "source": prompt.source}
