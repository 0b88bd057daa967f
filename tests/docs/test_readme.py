"""The README and the documentation pages speak to users: the README stays short, its relative
links resolve, and no page holds paths outside the repository, machine-load figures or words
about how the project is organised."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 300

#: (name, pattern) of what no user page may hold
FORBIDDEN: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a path outside the repository", re.compile(r"\.\./shared")),
    ("a load average", re.compile(r"load\s+average|loadavg", re.IGNORECASE)),
    (
        "a load figure",
        re.compile(r"\bload\s+(?:of\s+)?\d+(?:\.\d+)?\b(?!\s*(?:items?|questions?|rows?|files?|entries)\b)"),
    ),
    ("a load figure", re.compile(r"\[load\b|1-minute\s+load", re.IGNORECASE)),
    ("an issue number", re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)),
    ("words about how the work was organised", re.compile(r"\b(?:this|last|next)\s+stop\b", re.IGNORECASE)),
    ("a commit as a figure", re.compile(r"\bmain\s+at\s+[0-9a-f]{7,40}\b")),
    ("an internal tool's name", re.compile(r"\bfarm-(?:bench|studio)\b")),
)

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def user_pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def findings(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for name, pattern in FORBIDDEN:
            hit = pattern.search(line)
            if hit:
                found.append(f"line {number}: {name}: {hit.group(0)!r}")
    return found


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; at most {MAX_README_LINES}"


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_speak_to_users(page):
    assert findings(page.read_text(encoding="utf-8")) == []


def test_the_checks_catch_what_they_look_for():
    bad = (
        "read ../shared/data/prices/x.csv\n"
        "took 3 min [load 2.6-6.7]\n"
        "the 1-minute load average was 4\n"
        "at load 2.9\n"
        "as issue 19 asks\n"
        "this stop's runs\n"
        "main at 0a3663f took 5 min\n"
        "drawn by farm-studio look\n"
    )
    flagged = {int(f.split(":", 1)[0].removeprefix("line ")) for f in findings(bad)}
    assert flagged == set(range(1, 9))
    good = (
        "loads 1,668 questions; load 20 items; the engine's load; `localfin data import --prices DATA/p.csv`"
    )
    assert findings(good) == []


def test_every_relative_link_of_the_readme_resolves():
    text = README.read_text(encoding="utf-8")
    targets = [
        t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")
    ]
    assert targets, "the README links into the docs"
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert missing == []


def _options() -> dict[str, set[str]]:
    """Every command's options, by its name without ``localfin``."""
    from localfin_cli.reference import commands

    return {
        full.removeprefix("localfin").strip(): {
            o for p in getattr(cmd, "params", []) for o in getattr(p, "opts", [])
        }
        for full, cmd, _ in commands()
    }


def test_the_readmes_words_on_options_are_true():
    """The README says which commands take --out, --config and --json: each one named does."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    para = text.split("The commands that write results take `--out`:")[1].split("A failing command")[0]
    options = _options()
    writers = ["demo", "report", "export", "pairs run", "pairs matrix", "qa eval", "reproduce run"]
    named = re.findall(r"`([a-z -]+)`", para.split("write into that folder")[0])
    assert named == writers
    for command in writers:
        assert "--out" in options[command], command
    assert "`pairs screen --out FILE`" in para and "`--json` prints it" in para
    assert {"--out", "--json"} <= options["pairs screen"]
    configs = re.findall(r"`([a-z -]+)`", para.split("comes with `--config FILE`")[1].split(";")[0])
    assert configs == ["pairs run", "pairs matrix"]
    for command in [*configs, *(f"reproduce {m}" for m in ("check", "run", "plan", "smoke", "settings"))]:
        assert "--config" in options[command], command
    # commands that take neither exist (the claim is not "every command")
    assert "--out" not in options["data info"] and "--config" not in options["audit"]
