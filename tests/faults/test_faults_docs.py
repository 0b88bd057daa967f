"""docs/faults.md shows the exit-code table of localfin.errors.EXIT_CODES, row for row."""

from __future__ import annotations

from faults_support import REPO_ROOT

from localfin.errors import EXIT_CODES


def test_the_docs_exit_code_table_is_the_code_table():
    text = (REPO_ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| code")
    ]
    assert rows == [[str(e.code), e.name, e.meaning, e.action] for e in EXIT_CODES]
