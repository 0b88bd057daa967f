"""Reading the authors' checkout: every pinned text is found at the pinned snapshot with its
digest; a checkout that differs or lacks a file is refused with the file, the text and what
differs named (or, with the check off, used and declared); their texts are never in this
repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from authors_support import REPO_ROOT, snapshot

from agent.qa.authors.checkout import AuthorsCodeError, open_authors_code
from agent.qa.authors.pins import AUTHORS_FILES, PINS
from agent.qa.authors.source import SourceFile, Template, locate


@pytest.fixture(scope="module")
def code():
    return open_authors_code(snapshot())


def test_every_pinned_text_is_found_at_the_snapshot_with_its_digest(code) -> None:
    rows = code.records(only_used=False)
    assert len(rows) == len(PINS) and all(r["pinned"] for r in rows)
    assert code.differs == () and "@ 16246593" in code.describe()
    # a text is a string, an f-string template or a literal table, each as its name says
    assert isinstance(code.template("hint.rounded"), Template)
    assert code.render("hint.rounded", dp=2, num=3.14159).endswith("(e.g., 3.14).")
    assert code.table("tool.terminate.parameters")["required"] == ["final_answer"]
    assert set(code.used()) == {"hint.rounded", "tool.terminate.parameters"}  # in pin order


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "checkout"
    for rel in AUTHORS_FILES:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(snapshot() / rel, dst / rel)
    return dst


def test_a_checkout_whose_text_differs_is_refused_naming_the_file_and_the_text(tmp_path) -> None:
    root = _copy(tmp_path)
    f = root / "finacumen/ft/variant/baseline_raw.py"
    f.write_text(f.read_text(encoding="utf-8").replace("Output ONLY", "Output only"), encoding="utf-8")
    with pytest.raises(AuthorsCodeError) as err:
        open_authors_code(root)
    said = str(err.value)
    assert "finacumen/ft/variant/baseline_raw.py:19-24: SYSTEM_PROMPT (the text 'base.system')" in said
    assert "the pinned commit's is fd46f343ac8eb153" in said and "authors_code_verify = false" in said
    loose = open_authors_code(root, verify=False)  # the opt-out: used as it is, and said
    assert loose.differs == ("base.system",) and "Output only" in loose.text("base.system")
    assert "1 text(s) differing" in loose.describe() and "base.system" in loose.describe()


def test_a_missing_file_folder_or_path_is_named(tmp_path) -> None:
    root = _copy(tmp_path)
    (root / "finacumen/fm/collect.py").unlink()
    with pytest.raises(AuthorsCodeError, match=r"finacumen/fm/collect\.py: the file is missing"):
        open_authors_code(root)
    with pytest.raises(AuthorsCodeError, match="no such folder"):
        open_authors_code(tmp_path / "nowhere")
    with pytest.raises(AuthorsCodeError, match=r"qa\.authors_code is empty"):
        open_authors_code("")
    f = root / "finacumen/ft/agent/toolcall.py"
    f.write_text("x = 1\n", encoding="utf-8")
    (root / "finacumen/fm/collect.py").write_text("y = 2\n", encoding="utf-8")
    with pytest.raises(
        AuthorsCodeError, match=r"finacumen/ft/agent/toolcall\.py: has no 'ToolCallAgent.think'"
    ):
        open_authors_code(root)


def test_templates_render_conversions_nested_specs_and_positional_fields(tmp_path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "N = 10\n"
        "T = {'d': f'Default {N}', 'l': [1, -2]}\n"
        "def g(x, dp, items):\n"
        "    '''doc'''\n"
        "    a = f'{x!r} is {x:.{dp}f} of {len(items)}'\n"
        "    return 'plain'\n",
        encoding="utf-8",
    )
    src = SourceFile(f, "m.py")
    t = locate(src, "g#0").value
    assert t.keys == ("x", "dp", "#3")  # fields are counted in order, a spec's own included
    assert t.render(x=1.5, dp=3, **{"#3": 4}) == "1.5 is 1.500 of 4"
    with pytest.raises(KeyError, match="'#3' has no value"):
        t.render(x=1, dp=1)
    assert locate(src, "g#1").value == "plain" and locate(src, "T").value == {"d": "Default 10", "l": [1, -2]}
    assert locate(src, "g#1").lines == "6"


def test_none_of_their_texts_is_stored_in_this_repository(code) -> None:
    texts = [
        v for p in PINS if isinstance(v := code._texts[p.name].found.value, str) and len(v.strip()) >= 30
    ]
    texts += [
        part for p in PINS if isinstance(t := code._texts[p.name].found.value, Template)
        for part in t.parts if isinstance(part, str) and len(part.strip()) >= 30
    ]  # fmt: skip
    assert len(texts) > 40
    ours = [
        p for d in ("agent", "serving", "docs", "localfin", "localfin_cli", "bench", "tests")
        for p in (REPO_ROOT / d).rglob("*") if p.suffix in (".py", ".md", ".yaml", ".toml", ".txt", ".json")
    ]  # fmt: skip
    found = []
    for p in ours:
        body = p.read_text(encoding="utf-8", errors="replace")
        found += [f"{p.relative_to(REPO_ROOT)}: {t[:40]!r}" for t in texts if t.strip() in body]
    assert found == []
