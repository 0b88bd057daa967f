"""The house's layout, checked statically (every import statement, top level or inside a function):
the agents never import the report, agent/pairs' and agent/qa's subpackages import only downward,
the two agents never import each other, backends are opened in one place and agents never fall back to the
registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: agent/pairs' parts, lowest first; a module may import its own part or a lower one
#: (moira and baselines stand beside each other: neither imports the other).
PAIRS_RANK = {"screen": 0, "market": 1, "lifecycle": 2, "moira": 3, "baselines": 3, "experiment": 4}

#: agent/qa's stages, lowest first, the same rule (parts of one rank stand beside each other:
#: neither imports the other)
QA_RANK = {
    "core": 0,
    "sandbox": 0,
    "tools": 1,
    "loaders": 1,
    "authors": 1,
    "data": 2,
    "scoring": 3,
    "memory": 3,
    "solver": 4,
    "evaluation": 5,
    "analysis": 5,
    "cluster": 6,
}


def _modules(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in ``path`` (``from a import b`` gives ``a`` and
    ``a.b``), plus every string passed to ``import_module``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value))
    return out


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_agents_never_import_the_report():
    found = [
        f"{_rel(p)}:{line} imports {mod}"
        for p in _modules("agent/pairs", "agent/qa")
        for line, mod in _imports(p)
        if mod == "agent.report" or mod.startswith("agent.report.")
    ]
    assert found == []


def test_the_scan_sees_an_import_of_the_report_inside_a_function(tmp_path):
    # the scan itself can fail: an import of the report hidden in a function body is found
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from agent.report.tables import build_settings\n", encoding="utf-8")
    assert (2, "agent.report.tables") in _imports(bad)


def test_pairs_parts_import_only_downward():
    found = []
    for p in _modules("agent/pairs"):
        parts = p.relative_to(ROOT / "agent" / "pairs").parts
        if len(parts) < 2:
            continue  # agent/pairs/__init__.py
        own = PAIRS_RANK[parts[0]]
        for line, mod in _imports(p):
            m = re.match(r"agent\.pairs\.(\w+)", mod)
            if m and m.group(1) in PAIRS_RANK and m.group(1) != parts[0] and PAIRS_RANK[m.group(1)] >= own:
                found.append(f"{_rel(p)}:{line} ({parts[0]}) imports {mod}")
    assert found == []


def downward_crossings(agent: str, rank: dict[str, int], root: Path = ROOT) -> list[str]:
    """``file:line (part) imports X`` for every import in ``agent/<agent>`` of a part of it that
    is not below the file's own part (one beside it or above it)."""
    found = []
    own_pkg = f"agent.{agent}"
    for p in sorted((root / "agent" / agent).rglob("*.py")):
        parts = p.relative_to(root / "agent" / agent).parts
        if len(parts) < 2:
            continue  # the agent's __init__.py
        own = rank[parts[0]]
        for line, mod in _imports(p):
            m = re.match(rf"{re.escape(own_pkg)}\.(\w+)", mod)
            if m and m.group(1) in rank and m.group(1) != parts[0] and rank[m.group(1)] >= own:
                found.append(f"{p.relative_to(root)}:{line} ({parts[0]}) imports {mod}")
    return found


def test_qa_stages_import_only_downward():
    assert downward_crossings("qa", QA_RANK) == []


def test_every_qa_subpackage_has_a_rank_and_a_docstring():
    subs = {p.parent.name for p in (ROOT / "agent" / "qa").glob("*/__init__.py")}
    assert subs == set(QA_RANK)
    top = {p.stem for p in (ROOT / "agent" / "qa").glob("*.py")}
    assert top == {"__init__"}
    for sub in subs:
        tree = ast.parse((ROOT / "agent" / "qa" / sub / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), sub


def test_the_stage_scan_finds_an_import_beside_or_above(tmp_path):
    room = tmp_path / "agent" / "qa" / "scoring"
    room.mkdir(parents=True)
    (room / "m.py").write_text(
        "from agent.qa.core.items import QAItem\n"
        "def f():\n    from agent.qa.memory.memory import ExperienceMemory\n"
        "from agent.qa.solver.react import QASolver\n",
        encoding="utf-8",
    )
    assert sorted(downward_crossings("qa", QA_RANK, tmp_path)) == [
        "agent/qa/scoring/m.py:3 (scoring) imports agent.qa.memory.memory",
        "agent/qa/scoring/m.py:3 (scoring) imports agent.qa.memory.memory.ExperienceMemory",
        "agent/qa/scoring/m.py:4 (scoring) imports agent.qa.solver.react",
        "agent/qa/scoring/m.py:4 (scoring) imports agent.qa.solver.react.QASolver",
    ]


def test_agents_pairs_and_qa_never_import_each_other():
    found = [
        f"{_rel(p)}:{line} imports {mod}"
        for folder, other in (("agent/pairs", "agent.qa"), ("agent/qa", "agent.pairs"))
        for p in _modules(folder)
        for line, mod in _imports(p)
        if mod == other or mod.startswith(other + ".")
    ]
    assert found == []


def test_backends_are_opened_in_one_place_and_agents_never_take_the_registry_default():
    opened = re.compile(r"\b(VLLMBackend|OpenAIBackend)\(")
    outside = [
        f"{_rel(p)}:{n}"
        for p in _modules("agent", "bench", "localfin_cli", "localfin", "bank", "kernels")
        for n, text in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if opened.search(text)
    ]
    assert outside == []
    # agent/api.py is the Python API, the top of the house like the command line: it is where a
    # user's registry (localfin's models, plugins', models files') is built
    defaults = [
        f"{_rel(p)}:{n}"
        for p in _modules("agent")
        if _rel(p) != "agent/api.py"
        for n, text in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "default_registry()" in text
    ]
    assert defaults == []
