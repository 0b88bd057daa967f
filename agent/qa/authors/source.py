"""Reading string constants, f-string templates and literal tables out of a Python file with
``ast``, never importing or running it: what localfin takes from a checkout of the FinAcumen
authors' code at run time (:mod:`agent.qa.authors.checkout`).

A text is found by a *locator* (our names for places in their files; the texts themselves are
never stored in this repository):

- ``NAME``: a module-level assignment ``NAME = ...``;
- ``NAME[key]``: the entry ``key`` (a string) of a module-level dict literal ``NAME = {...}``;
- ``Class.attr``: an assignment in a class body (``attr: str = ...`` or ``attr = ...``);
- ``func#k`` or ``Class.method#k``: the ``k``-th string (0-based, in source order) of that
  function's body: a string constant or an f-string that is not part of another f-string, the
  docstring not counted.

A module-level table built by a list comprehension over a literal list (a list of patterns
compiled one by one) is found as that literal list.

What is found is one :class:`Found`: its value (a ``str`` for a constant, a :class:`Template`
for an f-string, a plain value for a literal table such as a tool's ``parameters``), its line
span and the sha256 of its source text (the exact characters of the file between the node's
first and last character), which the pinned table compares (:mod:`agent.qa.authors.pins`).

A :class:`Template` renders an f-string with values we give: a field whose expression is a name
(``{name}``, ``{str(name)}``) takes that name's value; any other expression is field ``#i``
(``i``: its position among the f-string's fields, counted in order with those of a format
spec). Conversions (``!r``) and format specs
(``:.2f``, also ``:.{dp}f``) apply as Python applies them. A literal table may hold f-strings
whose names are module-level constants of the same file (``f"Default {_DEFAULT_TOP_N}"``).
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localfin.errors import InputError

__all__ = ["Found", "Template", "SourceFile", "locate"]


@dataclass(frozen=True)
class Template:
    """An f-string read from source: its parts in order, each a literal ``str`` or a field
    ``(key, conversion, spec)`` with ``spec`` a :class:`Template` or None."""

    parts: tuple[Any, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """Every field key, nested format specs included, in order (repeats kept once)."""
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, tuple):
                key, _, spec = p
                out.append(key)
                if spec is not None:
                    out += spec.keys
        return tuple(dict.fromkeys(out))

    def render(self, **values: Any) -> str:
        """The f-string's value with ``values`` for its fields (a missing one is an error that
        names it; ``#i`` keys are passed as ``**{"#0": ...}``)."""
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            key, conv, spec = p
            if key not in values:
                raise KeyError(f"template field {key!r} has no value (fields: {', '.join(self.keys)})")
            v = values[key]
            if conv == "r":
                v = repr(v)
            elif conv == "s":
                v = str(v)
            elif conv == "a":
                v = ascii(v)
            out.append(format(v, spec.render(**values) if spec is not None else ""))
        return "".join(out)


@dataclass(frozen=True)
class Found:
    """A text or table found by a locator."""

    locator: str
    value: Any
    first_line: int
    last_line: int
    sha256: str

    @property
    def lines(self) -> str:
        return (
            f"{self.first_line}"
            if self.first_line == self.last_line
            else f"{self.first_line}-{self.last_line}"
        )


def _template(node: ast.JoinedStr) -> Template:
    parts: list[Any] = []
    counter = [0]

    def walk(n: ast.JoinedStr) -> list[Any]:
        out: list[Any] = []
        for v in n.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
                continue
            assert isinstance(v, ast.FormattedValue)
            expr, conv = v.value, chr(v.conversion) if v.conversion and v.conversion > 0 else ""
            if isinstance(expr, ast.Name):
                key = expr.id
            elif (
                isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Name)
                and expr.func.id == "str"
                and len(expr.args) == 1
                and isinstance(expr.args[0], ast.Name)
                and not expr.keywords
            ):
                key, conv = expr.args[0].id, conv or "s"
            else:
                key = f"#{counter[0]}"
            counter[0] += 1
            spec = Template(tuple(walk(v.format_spec))) if v.format_spec is not None else None
            out.append((key, conv, spec))
        return out

    parts = walk(node)
    return Template(tuple(parts))


def _literal(node: ast.AST, names: Mapping[str, Any], where: str) -> Any:
    """A literal table's value: constants, f-strings over module constants, dicts, lists."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.JoinedStr):
        t = _template(node)
        missing = [k for k in t.keys if k not in names]
        if missing:
            raise InputError(f"{where}: an f-string in a literal table uses {missing}, not module constants")
        return t.render(**{k: names[k] for k in t.keys})
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise InputError(f"{where}: a literal table with ** unpacking")
        return {_literal(k, names, where): _literal(v, names, where) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(x, names, where) for x in node.elts]
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand, names, where)
    raise InputError(f"{where}: not a literal ({type(node).__name__} at line {getattr(node, 'lineno', '?')})")


def _value(node: ast.AST, names: Mapping[str, Any], where: str) -> Any:
    if isinstance(node, ast.JoinedStr):
        return _template(node)
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        # a table built by a comprehension over a literal list (``[re.compile(p) for p in [...]]``):
        # the literal list it runs over
        return _literal(node.generators[0].iter, names, where)
    return _literal(node, names, where)


class SourceFile:
    """One Python file of a checkout, parsed once (never imported)."""

    def __init__(self, path: Path, label: str) -> None:
        self.path, self.label = path, label
        try:
            self.text = path.read_text(encoding="utf-8")
            self.tree = ast.parse(self.text, filename=str(path))
        except FileNotFoundError:
            raise InputError(f"{label}: the file is missing") from None
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            raise InputError(f"{label}: cannot be read as Python ({exc})") from None
        self.lines = self.text.splitlines(keepends=True)
        # the lines as ast counts them (only \r, \n and \r\n end one), in UTF-8: a node's
        # columns are byte offsets into these
        self._raw = [line.encode("utf-8") for line in _LINE.findall(self.text)]
        self._strings: dict[int, list[ast.AST]] = {}
        self.names: dict[str, Any] = {}
        for st in self.tree.body:  # module constants a literal table may name
            target, value = _assigned(st)
            if target and isinstance(value, ast.Constant):
                self.names[target] = value.value

    def segment(self, node: ast.AST) -> str:
        """The node's source text, as :func:`ast.get_source_segment` gives it (which splits the
        whole file again on every call; a checkout's texts are hundreds of calls)."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start, end = node.col_offset, node.end_col_offset
        if end is None:
            return ""
        if first == last:
            return self._raw[first][start:end].decode("utf-8")
        parts = [self._raw[first][start:], *self._raw[first + 1 : last], self._raw[last][:end]]
        return b"".join(parts).decode("utf-8")

    def strings(self, fn: ast.AST) -> list[ast.AST]:
        """:func:`_strings` of ``fn``, walked once per function."""
        if id(fn) not in self._strings:
            self._strings[id(fn)] = _strings(fn)
        return self._strings[id(fn)]

    def found(self, locator: str, node: ast.AST, value: Any) -> Found:
        seg = self.segment(node)
        return Found(
            locator,
            value,
            node.lineno,
            node.end_lineno or node.lineno,
            hashlib.sha256(seg.encode("utf-8")).hexdigest(),
        )


#: one line as :mod:`ast` counts lines, its end included
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _assigned(st: ast.stmt) -> tuple[str, ast.AST | None]:
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id, st.value
    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
        return st.target.id, st.value
    return "", None


def _strings(fn: ast.AST) -> list[ast.AST]:
    """The string nodes of a function body in source order (module docstring rule: the first
    statement's bare string is not counted), parts of f-strings left out."""
    inner: set[int] = set()
    found: list[ast.AST] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.JoinedStr):
            for sub in ast.walk(n):
                if sub is not n:
                    inner.add(id(sub))
    body = getattr(fn, "body", [])
    doc = (
        id(body[0].value)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
        else None
    )  # fmt: skip
    for n in ast.walk(fn):
        if id(n) in inner or id(n) == doc:
            continue
        if isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, str)):
            found.append(n)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _scope(tree: ast.Module, dotted: str, label: str) -> ast.AST:
    node: ast.AST = tree
    for name in dotted.split("."):
        body = getattr(node, "body", [])
        hit = next(
            (
                n for n in body
                if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
            ),
            None,
        )  # fmt: skip
        if hit is None:
            raise InputError(f"{label}: has no {dotted!r} (no {name!r} there)")
        node = hit
    return node


def locate(src: SourceFile, locator: str) -> Found:
    """The text or table of ``locator`` in ``src`` (module docstring); InputError naming the
    file and the locator when it is not there."""
    label = f"{src.label}: {locator}"
    if "#" in locator:
        where, _, k = locator.rpartition("#")
        fn = _scope(src.tree, where, src.label)
        nodes = src.strings(fn)
        i = int(k)
        if i >= len(nodes):
            raise InputError(f"{label}: {where!r} holds {len(nodes)} strings, not {i + 1}")
        node = nodes[i]
        return src.found(locator, node, _value(node, src.names, label))
    if "[" in locator:
        name, _, key = locator.partition("[")
        key = key.rstrip("]")
        node = next((v for st in src.tree.body for t, v in [_assigned(st)] if t == name), None)
        if not isinstance(node, ast.Dict):
            raise InputError(f"{label}: no module-level dict {name!r}")
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and k.value == key:
                return src.found(locator, v, _value(v, src.names, label))
        raise InputError(f"{label}: {name!r} has no entry {key!r}")
    if "." in locator:
        cls, _, attr = locator.rpartition(".")
        scope = _scope(src.tree, cls, src.label)
        node = next((v for st in getattr(scope, "body", []) for t, v in [_assigned(st)] if t == attr), None)
        if node is None:
            raise InputError(f"{label}: {cls!r} assigns no {attr!r}")
        return src.found(locator, node, _value(node, src.names, label))
    node = next((v for st in src.tree.body for t, v in [_assigned(st)] if t == locator), None)
    if node is None:
        raise InputError(f"{label}: no module-level assignment {locator!r}")
    return src.found(locator, node, _value(node, src.names, label))
