"""The documentation site: it builds with ``mkdocs build --strict`` (a broken link, a missing page
or a reference that does not resolve fails), every config key has a description, the generated
CLI reference holds every command, and the guides' TOML examples are valid files."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from localfin.fielddoc import describe, field_docs

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = tmp_path / "site"
    for page in (
        "index.html",
        "reference/cli/index.html",
        "reference/config/index.html",
        "reference/api/index.html",
    ):
        assert (site / page).is_file(), page
    config = (site / "reference/config/index.html").read_text(encoding="utf-8")
    assert "server_default" in config and "Moira Appendix C" in config and "tensor_parallel_size" in config
    api = (site / "reference/api/index.html").read_text(encoding="utf-8")
    assert "run_experiment" in api and "load_runs" in api


def test_every_config_key_has_a_description():
    from agent.configref import undocumented

    assert undocumented() == []


def test_the_description_finder_reads_comments_and_docstrings():
    @dataclasses.dataclass(frozen=True)
    class Example:
        """An example.

        alpha: the first; beta / gamma: two at once,
            on two lines.
        ``delta``: quoted.
        """

        alpha: int = 1
        beta: float = 0.5
        gamma: str = "x"
        delta: bool = False
        #: from a comment above
        epsilon: tuple[int, ...] = (1, 2)
        zeta: int | None = None  # from the end of the line
        eta: int = 0

    docs = field_docs(Example)
    assert docs["alpha"] == "the first"
    assert docs["beta"] == docs["gamma"] == "two at once, on two lines."
    assert docs["delta"] == "quoted." and docs["epsilon"] == "from a comment above"
    assert docs["zeta"] == "from the end of the line" and "eta" not in docs
    rows = {d.name: d for d in describe(Example)}
    assert (rows["epsilon"].type, rows["epsilon"].default) == ("array of integers", "[1, 2]")
    assert (rows["zeta"].type, rows["zeta"].default) == ("integer or unset", "unset")
    assert rows["delta"].allowed == "true, false" and rows["eta"].description == ""


def _command_tree() -> set[str]:
    """Every visible command and group of the typer app, walked here on its own."""
    import typer

    from localfin_cli.main import app

    found: set[str] = set()

    def walk(cmd, path: tuple[str, ...], parent) -> None:
        ctx = typer.Context(cmd, parent=parent, info_name=path[-1])
        found.add(" ".join(path))
        for name in getattr(cmd, "list_commands", lambda _: [])(ctx):
            sub = cmd.get_command(ctx, name)
            if not sub.hidden:
                walk(sub, (*path, name), ctx)

    walk(typer.main.get_command(app), ("localfin",), None)
    return found


def test_the_cli_reference_holds_every_command():
    from localfin_cli.bench_cmd import BENCHMARKS
    from localfin_cli.reference import commands, render_markdown

    text = render_markdown()
    names = [full for full, _, _ in commands()]
    assert set(names) == _command_tree() and len(names) == len(set(names))
    wanted = {f"localfin reproduce {m}" for m in ("list", "check", "run", "smoke", "rehearse", "plan")}
    wanted |= {f"localfin bench {b}" for b in BENCHMARKS} | {"localfin pairs run", "localfin qa eval"}
    assert wanted <= set(names) and len(names) >= 55, sorted(wanted - set(names))
    for full in names:
        assert f"`{full}` {{#{full.replace(' ', '-')}}}" in text, full
    for option in ("--models-file", "--version", "--dry-run", "--config", "--resume", "--paths", "--quick"):
        assert f"`{option}`" in text, option
    assert "legacy-flags" not in text and "--run-dir" not in text  # deprecated aliases stay hidden
    pairs_run = text.split("{#localfin-pairs-run}")[1].split("{#localfin-pairs-")[0]
    assert "`--model`" in pairs_run


def _toml_blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"```toml\n(.*?)```", text, re.S)


def test_the_guides_toml_examples_are_valid(tmp_path):
    from agent.pairs.experiment.config import parse_config
    from serving.models.user_models import parse_models

    experiment = _toml_blocks("experiments.md")[0]
    cfg = parse_config(tomllib.loads(experiment), base_dir=tmp_path)
    assert [v.name for v in cfg.variants] == ["full", "no-consolidation"]
    assert cfg.variants[1].policy.consolidation is False
    (tmp_path / "staples.toml").write_text(experiment)
    from agent.pairs.experiment.matrix_config import parse_matrix

    matrix = parse_matrix(tomllib.loads(_toml_blocks("experiments.md")[1]), base_dir=tmp_path)
    assert len(matrix.cells()) == 3
    specs = parse_models(tomllib.loads(_toml_blocks("extending.md")[0]), base_dir=tmp_path)
    assert [s.key for s in specs] == ["my-llama", "mistral-small"]
    assert specs[0].tool_call_parser == "llama3_json" and specs[0].tensor_parallel_size == 2


def test_the_generated_pages_in_the_repository_are_current():
    """The command-line and configuration references and the protocol pages are kept in the
    repository (their links work in a clone); each equals what the code renders now."""
    from localfin_cli.docs_pages import PAGES, stale_pages

    assert set(PAGES) == {
        "reference/cli.md",
        "reference/config.md",
        "protocol/moira.md",
        "protocol/finacumen.md",
    }
    assert stale_pages() == [], "write them: python -m localfin_cli.docs_pages"


def test_the_generated_pages_say_when_they_differ(tmp_path):
    from localfin_cli.docs_pages import stale_pages, write_pages

    assert sorted(stale_pages(tmp_path)) == sorted(
        ["reference/cli.md", "reference/config.md", "protocol/moira.md", "protocol/finacumen.md"]
    )
    assert len(write_pages(tmp_path)) == 4 and stale_pages(tmp_path) == []
    page = tmp_path / "reference" / "cli.md"
    page.write_text(page.read_text(encoding="utf-8").replace("localfin pairs run", "localfin pairs go"))
    assert stale_pages(tmp_path) == ["reference/cli.md"]


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_every_relative_link_of_the_docs_resolves_in_a_clone():
    """Every link of a page under docs/ to another file names a file of the repository (not one
    the site build writes), so it works on a code host as on the site."""
    missing = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in _LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                missing.append(f"{page.relative_to(ROOT)}: {target}")
    assert missing == []


def test_shipped_configs_cite_only_pages_that_exist():
    """A shipped config's comments cite documentation pages of the repository, never a file a
    user does not have."""
    cited = []
    for config in sorted((ROOT / "agent").rglob("configs/*.toml")):
        text = config.read_text(encoding="utf-8")
        assert not re.search(r"\bSPEC\b", text), f"{config.relative_to(ROOT)} cites SPEC"
        for page in re.findall(r"\bdocs/[\w./-]+\.md\b", text):
            cited.append(page)
            assert (ROOT / page).is_file(), f"{config.relative_to(ROOT)} cites {page}"
    assert "docs/demo.md" in cited and "docs/reproduce.md" in cited
