"""`localfin report RUN_DIR`: the page's path on stdout, --out, and one-line errors with exit code 2
for bad input (a missing folder, a folder without runs, a bad --window or --scale, a foreign --out)."""

from __future__ import annotations

from pathlib import Path

import report_support as rs


def test_report_prints_the_page_path_and_writes_it(cli, tmp_path: Path) -> None:
    exp = rs.experiment(tmp_path / "e", with_moira=False, exposures=("no_beta",))
    r = cli("report", exp)
    assert r.code == 0, r.err
    assert r.out == f"{exp / 'report' / 'index.html'}\n"
    assert "5 runs, 1 results tables" in r.err
    r = cli("report", exp, "--out", tmp_path / "elsewhere")
    assert r.code == 0, r.err and (tmp_path / "elsewhere" / "index.html").is_file()
    assert r.out.strip() == str(tmp_path / "elsewhere" / "index.html")


def test_report_help_is_listed(cli) -> None:
    r = cli("--help")
    assert r.code == 0 and "report" in r.out


def test_bad_input_gives_one_line_and_exit_code_2(cli, tmp_path: Path) -> None:
    r = cli("report", tmp_path / "missing")
    assert r.code == 2 and r.err.startswith("error: RUN_DIR=") and r.err.count("\n") == 1
    (tmp_path / "empty").mkdir()
    r = cli("report", tmp_path / "empty")
    assert r.code == 2 and "no readable run folder" in r.err
    exp = rs.experiment(tmp_path / "e", with_moira=False, exposures=("beta",))
    r = cli("report", exp, "--screenshot", tmp_path / "s.png", "--window", "wide")
    assert r.code == 2 and "--window='wide'" in r.err
    r = cli("report", exp, "--screenshot", tmp_path / "s.png", "--scale", "2")
    assert r.code == 2 and "--scale=2.0" in r.err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "a.txt").write_text("x", encoding="utf-8")
    r = cli("report", exp, "--out", tmp_path / "mine")
    assert r.code == 2 and "not a report folder" in r.err
    assert not (tmp_path / "s.png").exists()


def test_the_report_package_imports_no_agent_code_and_no_plotting_at_import() -> None:
    """agent.report reads what the agents wrote: it imports only the shared records, metrics,
    settlement and run-tape modules of agent.pairs (the tape and its re-settlement with
    frictions), never agent.qa; matplotlib loads only when drawing."""
    import ast
    import subprocess
    import sys

    pkg = Path(__file__).resolve().parents[3] / "agent" / "report"
    allowed = {
        "agent.pairs.market.records",
        "agent.pairs.market.metrics",
        "agent.pairs.market.settlement",
        "agent.pairs.market.execution",
        "agent.pairs.market.tape",
        "agent.pairs.market.tables",
    }
    for f in sorted(pkg.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for n in names:
                if n.startswith("agent.") and not n.startswith("agent.report"):
                    assert n in allowed, f"{f.name} imports {n}"
    code = "import sys, agent.report.build, localfin_cli.report_cmd; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
