"""Packaging: one source of the version (and ``localfin --version``), the license, the citation
file and the changelog agree with it."""

from __future__ import annotations

import contextlib
import io
import tomllib
from pathlib import Path

import yaml

import localfin

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_written_in_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "localfin._version.__version__"}
    from setuptools.config.pyprojecttoml import read_configuration

    built = read_configuration(ROOT / "pyproject.toml", expand=True, ignore_option_errors=False)
    assert built["project"]["version"] == localfin.__version__
    literal = f'"{localfin.__version__}"'
    holders = [
        str(p.relative_to(ROOT))
        for pkg in ("localfin", "serving", "agent", "bank", "kernels", "localfin_cli")
        for p in (ROOT / pkg).rglob("*.py")
        if f"__version__ = {literal}" in p.read_text(encoding="utf-8")
    ]
    assert holders == ["localfin/_version.py"]


def test_localfin_version():
    from localfin_cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--version"]) == 0
    assert out.getvalue() == f"localfin {localfin.__version__}\n"


def test_license_citation_and_changelog():
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == localfin.__version__ and cff["license"] == "Apache-2.0"
    titles = [r["title"] for r in cff["references"]]
    assert any(t.startswith("Moira: Policy Memory and Belief Revision") for t in titles)
    assert any(t.startswith("FinAcumen: Financial Multimodal Reasoning") for t in titles)
    assert all(r["authors"] for r in cff["references"])
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog and f"## [{localfin.__version__}]" in changelog
