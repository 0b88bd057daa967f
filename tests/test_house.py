"""The house's import directions, checked statically (every import statement, at the top of a
module or inside a function, and every ``import_module`` string): each top-level package imports
only itself and the packages allowed below it, so no import runs upward and there is no circle
between packages; no two files import each other, directly or round a loop; no folder of the
packages grown into rooms holds more than :data:`MAX_MODULES_PER_FOLDER` modules; and serving's
rooms import only the rooms below them."""

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


#: the packages of ours whose files the circle scan reads (every file, every import in it)
PACKAGES = tuple(sorted(ALLOWED))


def _module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of :data:`PACKAGES` under ``root`` (a
    package is its ``__init__.py``)."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _named(path: Path, name: str) -> list[str]:
    """Every module name a file's imports name, relative imports resolved: ``import a.b``,
    ``from a import b`` (``a.b`` and ``a``), ``from .b import c``, ``import_module("a.b")``;
    at the top of the file or inside a function alike."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            out += [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append(node.args[0].value)
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports. A name stands for the deepest module of ours it
    names (``from a.b import f``: ``a.b``; ``from a import b``: ``a.b`` where that is a module)
    and for the packages above it, whose ``__init__`` Python runs first, except a module's own
    packages, which are running already."""
    files = _module_files(root)
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        for name in _named(path, mod):
            parts = name.split(".")
            hits = [".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in files]
            if not hits:
                continue
            deepest, above = hits[0], hits[1:]
            graph[mod].add(deepest)
            graph[mod].update(p for p in above if not mod.startswith(p + "."))
        graph[mod].discard(mod)
    return graph


def file_circles(root: Path = ROOT) -> list[str]:
    """Every group of files that import each other, directly or round a loop (the strongly
    connected components of :func:`import_graph` with more than one file), as
    ``a.py <-> b.py <-> ...``."""
    graph, files = import_graph(root), _module_files(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):  # Tarjan's algorithm, iterative (no recursion limit)
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(" <-> ".join(sorted(str(files[m].relative_to(root)) for m in group)))
    return sorted(found)


def test_no_two_files_import_each_other_directly_or_round_a_loop():
    assert file_circles() == []


def test_the_circle_scan_finds_a_planted_circle_and_names_its_files(tmp_path):
    pkg = tmp_path / "serving"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "sub" / "__init__.py").write_text("", encoding="utf-8")
    # a -> b at the top, b -> c inside a function, c -> a by a relative import: one loop
    (pkg / "a.py").write_text("from serving.sub.b import f\n", encoding="utf-8")
    (pkg / "sub" / "b.py").write_text("def f():\n    from serving.sub import c\n", encoding="utf-8")
    (pkg / "sub" / "c.py").write_text("from ..a import g\n", encoding="utf-8")
    # d <-> e through import_module strings only; f imports a but nothing imports f
    (pkg / "d.py").write_text("import importlib\nimportlib.import_module('serving.e')\n", encoding="utf-8")
    (pkg / "e.py").write_text("def g():\n    import serving.d\n", encoding="utf-8")
    (pkg / "f.py").write_text("import serving.a\n", encoding="utf-8")
    assert file_circles(tmp_path) == [
        "serving/a.py <-> serving/sub/b.py <-> serving/sub/c.py",
        "serving/d.py <-> serving/e.py",
    ]


def test_a_package_init_that_imports_a_module_importing_it_back_is_a_circle(tmp_path):
    # serving/sub/__init__.py runs x.py, which asks the half-run package for a name
    sub = tmp_path / "serving" / "sub"
    sub.mkdir(parents=True)
    (sub / "__init__.py").write_text("from serving.sub.x import X\n", encoding="utf-8")
    (sub / "x.py").write_text("from serving.sub import Y\n", encoding="utf-8")
    (sub / "y.py").write_text("from serving.sub.x import X\n", encoding="utf-8")
    assert file_circles(tmp_path) == ["serving/sub/__init__.py <-> serving/sub/x.py"]


#: the most modules (``.py`` files besides ``__init__.py``) one folder may hold
MAX_MODULES_PER_FOLDER = 20
#: the packages whose every folder is held to :data:`MAX_MODULES_PER_FOLDER`
ROOMS_CHECKED = ("agent/qa", "serving", "agent/reproduce")


def crowded_folders(root: Path = ROOT, packages: tuple[str, ...] = ROOMS_CHECKED) -> list[str]:
    """``folder: n modules`` for every folder under ``packages`` with more than
    :data:`MAX_MODULES_PER_FOLDER` modules."""
    found = []
    for pkg in packages:
        for folder in sorted({p.parent for p in (root / pkg).rglob("*.py")}):
            n = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
            if n > MAX_MODULES_PER_FOLDER:
                found.append(f"{folder.relative_to(root)}: {n} modules")
    return found


def test_no_folder_holds_more_than_the_limit_of_modules():
    assert crowded_folders() == []


def test_the_folder_count_finds_a_crowded_folder(tmp_path):
    room = tmp_path / "agent" / "qa" / "flat"
    room.mkdir(parents=True)
    for i in range(MAX_MODULES_PER_FOLDER + 1):
        (room / f"m{i}.py").write_text("", encoding="utf-8")
    (room / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "agent" / "qa" / "ok.py").write_text("", encoding="utf-8")
    (tmp_path / "serving").mkdir()
    for i in range(MAX_MODULES_PER_FOLDER + 1):
        (tmp_path / "serving" / f"m{i}.py").write_text("", encoding="utf-8")
    (tmp_path / "agent" / "reproduce").mkdir()
    assert crowded_folders(tmp_path) == [
        f"agent/qa/flat: {MAX_MODULES_PER_FOLDER + 1} modules",
        f"serving: {MAX_MODULES_PER_FOLDER + 1} modules",
    ]


#: serving's rooms, lowest first: a room imports only rooms below its own (two of one rank stand
#: beside each other: neither imports the other). Of serving's top-level modules, ``errors.py``
#: (every room's errors) sits below every room and ``journal.py`` (over the chat interface) below
#: every room but ``chat``; ``open.py``, ``chat_once.py`` and ``gpu_smoke.py`` compose the rooms on
#: top, and no room imports them.
SERVING_RANK = {"chat": 0, "models": 0, "hardware": 0, "engines": 1, "cluster": 1, "http": 2}
#: serving's top-level modules each room may import
SERVING_BASE = {"errors": set(SERVING_RANK), "journal": set(SERVING_RANK) - {"chat"}}


def serving_crossings(root: Path = ROOT) -> list[str]:
    """``file:line (room) imports X`` for every import in a room of serving of a room not below
    its own, or of a top-level module :data:`SERVING_BASE` does not allow it."""
    found = []
    for path in sorted((root / "serving").rglob("*.py")):
        rel = path.relative_to(root / "serving").parts
        if len(rel) < 2:
            continue  # a top-level module
        own = rel[0]
        for line, mod in _imports(path):
            parts = mod.split(".")
            if parts[0] != "serving" or len(parts) < 2 or parts[1] == own:
                continue
            other = parts[1]
            if other in SERVING_RANK:
                allowed = SERVING_RANK[other] < SERVING_RANK[own]
            else:
                allowed = own in SERVING_BASE.get(other, set())
            if not allowed:
                found.append(f"serving/{'/'.join(rel)}:{line} ({own}) imports {mod}")
    return found


def test_serving_rooms_import_only_downward():
    assert serving_crossings() == []


def test_every_serving_room_has_a_rank_and_every_room_a_docstring():
    subs = {p.parent.name for p in (ROOT / "serving").glob("*/__init__.py")}
    assert subs == set(SERVING_RANK)
    for init in [
        *(ROOT / "serving").glob("*/__init__.py"),
        *(ROOT / "agent" / "reproduce").glob("*/__init__.py"),
    ]:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init.relative_to(ROOT)


def test_the_serving_scan_finds_a_room_importing_beside_above_or_the_top(tmp_path):
    room = tmp_path / "serving" / "models"
    room.mkdir(parents=True)
    (room / "m.py").write_text(
        "from serving.errors import ConfigError\nfrom serving.chat.types import ChatRequest\n"
        "def f():\n    from serving.engines.vllm_engine import VLLMBackend\n"
        "from serving.open import open_backend\n",
        encoding="utf-8",
    )
    assert sorted(serving_crossings(tmp_path)) == [
        "serving/models/m.py:2 (models) imports serving.chat.types",
        "serving/models/m.py:4 (models) imports serving.engines.vllm_engine",
        "serving/models/m.py:5 (models) imports serving.open",
    ]


def test_vllm_is_imported_by_the_engine_module_alone():
    """vLLM (the production engine, heavy and GPU-specific) is imported in one module: the
    in-process engine; everything else reaches it through that module or over HTTP."""
    found = sorted(
        f"{path.relative_to(ROOT)}:{line}"
        for package in ALLOWED
        for path in (ROOT / package).rglob("*.py")
        for line, mod in _imports(path)
        if mod.split(".")[0] == "vllm"
    )
    assert found and all(f.startswith("serving/engines/vllm_engine.py:") for f in found), found
