"""The house's import directions between the top-level packages, checked statically (every import
statement, at the top of a module or inside a function, and every ``import_module`` string):
each package imports only itself and the packages allowed below it, so no import runs upward and
there is no circle between packages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: what each package of ours may import (besides itself); bench and localfin_cli, on top, are
#: imported by nobody
ALLOWED = {
    "kernels": set(),
    "localfin": set(),
    "serving": {"localfin"},
    "bank": {"localfin", "kernels"},
    "agent": {"localfin", "kernels", "serving", "bank"},
    "bench": {"localfin", "kernels", "serving", "bank", "agent"},
    "localfin_cli": {"localfin", "kernels", "serving", "bank", "agent", "bench"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value))
    return out


def upward_imports(package: str, root: Path = ROOT) -> list[str]:
    """``file:line imports X`` for every import of ``package`` that its row does not allow."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for line, mod in _imports(path):
            top = mod.split(".")[0]
            if top in ALLOWED and top != package and top not in ALLOWED[package]:
                found.append(f"{path.relative_to(root)}:{line} imports {mod}")
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_package_imports_one_above_or_beside_it(package):
    assert upward_imports(package) == []


def test_the_rows_have_no_circle():
    # a package that may import another is never importable by it
    for pkg, below in ALLOWED.items():
        for other in below:
            assert pkg not in ALLOWED[other], f"{pkg} <-> {other}"


def test_the_scan_finds_an_upward_import_inside_a_function(tmp_path):
    (tmp_path / "localfin").mkdir()
    (tmp_path / "localfin" / "m.py").write_text(
        "def f():\n    from bench.kernels import synthetic_panel\n", encoding="utf-8"
    )
    assert upward_imports("localfin", tmp_path) == ["localfin/m.py:2 imports bench.kernels"]
