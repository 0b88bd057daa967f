"""Every benchmark that `localfin bench` and `localfin bench all` run is a module of bench's
subpackages with a ``parser()`` and a ``main(argv)`` whose first parameter is the argument list,
and runs as a script (``python -m``) through the shared error path (read from the source: no
benchmark is imported here)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.suite.all import MODULES
from localfin_cli.bench_cmd import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]


def _source(module: str) -> ast.Module:
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    assert path.is_file(), f"{module}: no file {path.relative_to(ROOT)}"
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("module", sorted({m for m, _ in BENCHMARKS.values()} | set(MODULES.values())))
def test_every_benchmark_is_a_subpackage_module_with_parser_and_main_argv(module):
    assert module.count(".") == 2, f"{module} is not in a subpackage of bench"
    tree = _source(module)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "parser" in funcs and not funcs["parser"].args.args
    assert "main" in funcs and funcs["main"].args.args[0].arg == "argv"
    main_block = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    assert main_block and "run_main(main)" in ast.unparse(main_block[0])


def test_the_benchmarks_page_files_every_command_under_its_folder():
    rows = [
        line
        for line in (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and "`bench/" in line
    ]
    for name, (module, _) in BENCHMARKS.items():
        folder = "/".join(module.split(".")[:2]) + "/"
        assert any(f"`{folder}`" in row and f"`{name}`" in row for row in rows), (name, folder)
