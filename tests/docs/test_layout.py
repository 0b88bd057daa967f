"""The site as a reader sees it in a 1280-pixel window: no page wider than the window, no table
that scrolls sideways, no code line cut off behind a scroll bar, no name in a table broken inside
a word (measured in headless Chromium, ``slow``); the configuration reference speaks of keys and
values, never of the code's internal constants, classes or functions; the hook that keeps names
whole."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "serving", "bank", "kernels", "localfin", "localfin_cli")
_CONSTANT = re.compile(r"_?[A-Z][A-Z0-9]*_[A-Z0-9_]+")
_CODE_PATH = re.compile(r"\b(?:{})\.[a-z_]+\.[\w.]+".format("|".join(PACKAGES)))


def _hook():
    spec = importlib.util.spec_from_file_location("table_names", ROOT / "docs" / "_hooks" / "table_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assigned(node: ast.stmt) -> list[tuple[ast.expr, ast.expr | None]]:
    """``(name, value)`` pairs a module-level assignment binds (``A, B = "a", "b"`` pairwise)."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign):
        targets, value = [node.target], node.value
    else:
        return []
    out: list[tuple[ast.expr, ast.expr | None]] = []
    for target in targets:
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            out += list(zip(target.elts, value.elts))
        else:
            out.append((target, value))
    return out


def internal_constants() -> set[str]:
    """Module-level UPPER_CASE names of our packages, except labels named as their own value
    (``LONG_SHORT = "LONG_SHORT"``: the word a user reads in a trades table)."""
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                for target, value in _assigned(node):
                    if not isinstance(target, ast.Name) or not _CONSTANT.fullmatch(target.id):
                        continue
                    if not (isinstance(value, ast.Constant) and value.value == target.id):
                        names.add(target.id.lstrip("_"))
    return names


def test_the_configuration_reference_names_no_internal_constant():
    from agent.configref import render_markdown

    page = render_markdown()
    constants = internal_constants()
    assert {"BASELINE_METHODS", "NO_BETA_LEGS", "BLOCK_ORDERS"} <= constants  # the scan sees them
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", page))
    assert sorted(words & constants) == []
    described = [line for line in page.splitlines() if not line.startswith("Validated by")]
    paths = _CODE_PATH.findall("\n".join(described))
    assert paths == []  # a key is described in the user's words, not by the code behind it
    assert not re.search(r"`[\w.]*\._\w+`", page)  # no private class
    assert "docs/" not in page  # a guide is named by its title, not by a file of the repository
    lone = set(re.findall(r"`([A-Z][A-Z0-9]+)`", page))  # a one-word constant given as code
    assert sorted(lone & constants) == []


def test_the_configuration_reference_describes_keys_without_the_code_behind_them():
    """A key's description names no class, function, method or module (docstring roles), no
    constant (``:data:`PAIRINGS```): the reader sees the values, not where the code keeps them."""
    from agent.configref import config_files, walk

    role = re.compile(r":(?:class|func|meth|mod|attr):`[^`]+`|:data:`~?[\w.]*[A-Z][A-Z0-9_]+`")
    found = []
    for f in config_files():
        for t in f.tables:
            for key, _cls, docs, own in walk(t):
                texts = [(d.name, d.description or "") for d in docs]
                texts += [(k, desc) for k, (_ty, _de, desc) in own.extra.items()]
                found += [f"{f.name} [{key}] {name}: {m}" for name, text in texts for m in role.findall(text)]
    assert found == []


def test_names_in_table_cells_become_runs_that_wrap_only_after_a_separator():
    keep = _hook().keep_names
    assert keep("<td><code>--models-file</code></td>") == (
        '<td><code><span class="nb">--models-file</span></code></td>'
    )
    assert keep("<td><code>retry_backoff_max_s</code></td>") == (
        '<td><code><span class="nb">retry_backoff_max_s</span></code></td>'  # a key stays whole
    )
    path = keep("<td><code>agent/prompts/pairs_select.yaml:17</code></td>")
    assert path.count('<span class="nb">') == 6 and re.sub(r"<[^>]+>", "", path) == (
        "agent/prompts/pairs_select.yaml:17"
    )
    assert keep('<th><code><span title="x.y">model_path</span></code></th>') == (
        '<th><code><span title="x.y"><span class="nb">model_path</span></span></code></th>'
    )
    assert keep("<td>on 2024-12-02, the equal-magnitude legs</td>") == (
        '<td>on <span class="nb">2024-12-02,</span> the equal-magnitude legs</td>'
    )
    prose = keep("<td><code>a b</code> and a/very/long/path/in/text.json</td>")
    assert prose.startswith("<td><code>a b</code> and ") and prose.count("<wbr>") == 6
    assert keep("<p><code>--models-file</code></p>") == "<p><code>--models-file</code></p>"  # tables only
    typed = keep('<td><code><span title="c">Callable</span>[[<a title="p">PairView</a>], str]</code></td>')
    assert '<span class="nb">[[</span><wbr><a title="p">PairView</a>' in typed  # may wrap before the name
    assert keep("<td>date (YYYY-MM-DD), EG-DDQN</td>") == (  # parts that are not lower-case words
        '<td>date <span class="nb">(YYYY-MM-DD),</span> <span class="nb">EG-DDQN</span></td>'
    )


def test_names_in_the_navigation_are_kept_whole():
    nav = _hook().keep_nav_names
    entry = '<span class="md-ellipsis">\n  [baselines.finmem.memory.reflection]\n</span>'
    assert nav(entry) == (
        '<span class="md-ellipsis">\n  <span class="nb">[baselines.</span><wbr>'
        '<span class="nb">finmem.</span><wbr><span class="nb">memory.</span><wbr>'
        '<span class="nb">reflection]</span>\n</span>'
    )
    assert nav('<span class="md-ellipsis">localfin bench moira-news-share</span>') == (
        '<span class="md-ellipsis">localfin bench <span class="nb">moira-news-share</span></span>'
    )
    words = '<span class="md-ellipsis">The causal screen over many dates</span>'
    assert nav(words) == words


def test_a_table_a_command_prints_is_marked_to_keep_its_lines():
    spec = importlib.util.spec_from_file_location("terminal_tables", ROOT / "docs/_hooks/terminal_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    head = '<div class="highlight"><pre><span></span><code>'
    lines = '<span id="__span-9-1">┏━━┓\n</span><span id="__span-9-2">┃ a ┃\n</span>└──┘'
    box = f"{head}{lines}</code></pre></div>"
    assert module.mark_terminal_tables(box) == box.replace('"highlight"', '"highlight terminal-table"')
    code = head + "localfin plugins list  # │ a comment\n</code></pre></div>"
    assert module.mark_terminal_tables(code) == code


@pytest.mark.slow
def test_every_page_fits_a_1280_pixel_window(tmp_path, page_layout):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT))
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    problems = {}
    pages = sorted(p for p in site.rglob("index.html") if "assets" not in p.parts)
    assert len(pages) > 20
    for page in pages:
        got = page_layout(page)
        found = []
        if got["page"] > got["width"]:
            found.append(f"page {got['page']} px wide")
        found += [f"table scrolls: {t['head']}" for t in got["tables"] if t["scrolls"]]
        found += [f"table beyond the window: {t['head']}" for t in got["tables"] if t["right"] > got["width"]]
        found += [f"code cut off: {line}" for line in got["code"]]
        found += [f"name broken: {name}" for name in got["names"]]
        if found:
            problems[str(page.relative_to(site))] = found
    assert problems == {}
