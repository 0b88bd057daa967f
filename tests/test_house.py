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


#: inside bench: what each subpackage may import of bench besides itself and the shared base
#: (``bench._args``, ``bench.records``, which import no subpackage); the suite runs the others
BENCH_ALLOWED = {
    "kernels": set(),
    "retrieval": set(),
    "serving": set(),
    "tokens": set(),
    "agents": set(),
    "suite": {"kernels", "retrieval", "serving", "tokens", "agents"},
}
BENCH_BASE = {"__init__", "_args", "records"}


def bench_crossings(root: Path = ROOT) -> list[str]:
    """``file:line imports X`` for every import inside bench that its subpackage's row does not
    allow (the base importing a subpackage, or a subpackage one beside it)."""
    found = []
    for path in sorted((root / "bench").rglob("*.py")):
        rel = path.relative_to(root / "bench").parts
        own = rel[0] if len(rel) > 1 else None
        for line, mod in _imports(path):
            parts = mod.split(".")
            if parts[0] != "bench" or len(parts) < 2 or parts[1] in BENCH_BASE or parts[1] == own:
                continue
            if own is None or parts[1] not in BENCH_ALLOWED.get(own, set()):
                found.append(f"bench/{'/'.join(rel)}:{line} imports {mod}")
    return found


def test_bench_holds_the_shared_base_and_one_subpackage_per_measured_thing():
    top = {p.stem for p in (ROOT / "bench").glob("*.py")}
    subs = {p.name for p in (ROOT / "bench").iterdir() if (p / "__init__.py").is_file()}
    assert top == BENCH_BASE
    assert subs == set(BENCH_ALLOWED)


def test_no_bench_subpackage_imports_one_beside_it():
    assert bench_crossings() == []


def test_the_bench_scan_finds_a_subpackage_importing_one_beside_it(tmp_path):
    (tmp_path / "bench" / "kernels").mkdir(parents=True)
    (tmp_path / "bench" / "kernels" / "m.py").write_text(
        "from bench.records import RecordWriter\nfrom bench.serving.stats import summarize\n",
        encoding="utf-8",
    )
    (tmp_path / "bench" / "records.py").write_text("import bench.suite.all\n", encoding="utf-8")
    assert bench_crossings(tmp_path) == [
        "bench/kernels/m.py:2 imports bench.serving.stats",
        "bench/records.py:1 imports bench.suite.all",
    ]


def test_the_scan_finds_an_upward_import_inside_a_function(tmp_path):
    (tmp_path / "localfin").mkdir()
    (tmp_path / "localfin" / "m.py").write_text(
        "def f():\n    from bench.kernels.speed import synthetic_panel\n", encoding="utf-8"
    )
    assert upward_imports("localfin", tmp_path) == ["localfin/m.py:2 imports bench.kernels.speed"]
