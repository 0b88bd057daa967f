"""The sandboxed Python worker and the Python tool: state, values, errors, limits, restarts,
refusal without isolation, the command line and the seccomp table.

The escape corpus lives in test_qa_sandbox_escape.py. Tests that need a working sandbox skip
(with the reason) where bubblewrap or user namespaces are missing; the refusal tests run
everywhere.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import pytest

from agent.qa.sandbox import SandboxConfig, SandboxUnavailable, probe
from agent.qa.sandbox import launch as launch_mod
from agent.qa.sandbox import session as session_mod
from agent.qa.sandbox.launch import Launcher, find_programs, host_layout
from agent.qa.sandbox.seccomp import DENIED, SYSCALLS, machine_arch, seccomp_program
from agent.qa.tools.base import Tool, ToolResult
from agent.qa.tools.python_tool import PythonTool, extract_numbers
from localfin.errors import ConfigError

FAST = SandboxConfig(cpu_seconds=5.0, wall_seconds=20.0, memory_mb=768, tmp_mb=8, max_output_chars=2000)


@pytest.fixture(scope="module")
def isolation() -> dict:
    """The isolation report of a probe sandbox; skips where none can run here."""
    try:
        return probe(FAST)
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox on this machine: {exc}")


@pytest.fixture
def tool(isolation: dict) -> PythonTool:
    t = PythonTool(FAST)
    yield t
    t.close()


# --- behaviour --------------------------------------------------------------------------------


def test_tool_follows_the_contract(tool: PythonTool) -> None:
    assert isinstance(tool, Tool)
    assert tool.name == "python"
    assert tool.args_schema["required"] == ["code"]
    assert tool.args_schema["additionalProperties"] is False


def test_state_persists_and_last_expression_is_returned(tool: PythonTool) -> None:
    first = tool({"code": "revenue = 1250.0\ncost = 980.5"})
    assert first.ok and "no output" in first.text and first.numbers == ()
    code = "margin = (revenue - cost) / revenue\nprint(f'margin {margin:.4f}')\nround(margin * 100, 2)"
    second = tool({"code": code})
    assert second.ok, second
    assert second.text == "margin 0.2156\n=> 21.56"
    assert second.numbers == (0.2156, 21.56)
    assert tool({"code": "_ + 1"}).text == "=> 22.56"  # `_` is the last value, as at a prompt


def test_numpy_and_pandas_work_with_one_thread(tool: PythonTool) -> None:
    result = tool(
        {
            "code": "import numpy as np, pandas as pd\n"
            "r = pd.Series([0.01, -0.02, 0.03])\n"
            "a = np.ones((200, 200))\n"
            "print(int((a @ a)[0, 0]))\n"
            "float(round((1 + r).prod() - 1, 6))"
        }
    )
    assert result.ok, result.text
    assert result.numbers == (200.0, 0.019494)


def test_traceback_shows_only_the_models_code(tool: PythonTool) -> None:
    result = tool({"code": "import json\ndef parse(s):\n    return json.loads(s)\nparse('{broken')"})
    assert not result.ok and result.error == "exception"
    assert "JSONDecodeError" in result.text
    files = re.findall(r'File "([^"]+)"', result.text)
    assert files and all(f.startswith("<cell-") for f in files), result.text
    assert "json/decoder.py" not in result.text and "_worker" not in result.text
    assert result.numbers == ()  # numbers of a traceback are not tool output


def test_syntax_error_is_an_exception_result(tool: PythonTool) -> None:
    result = tool({"code": "x = (1 +"})
    assert not result.ok and result.error == "exception" and "SyntaxError" in result.text
    assert tool({"code": "1 + 1"}).text == "=> 2"


def test_cpu_limit_interrupts_and_keeps_state(isolation: dict) -> None:
    tool = PythonTool(SandboxConfig(cpu_seconds=0.3, tmp_mb=8))
    assert tool({"code": "kept = 7"}).ok
    result = tool({"code": "while True:\n    pass"})
    assert not result.ok and result.error == "timeout"
    assert "variables are kept" in result.text
    assert tool({"code": "kept * 6"}).text == "=> 42"
    assert tool.session is not None and tool.session.starts == 1
    tool.close()


def test_wall_limit_kills_and_the_next_call_says_state_was_lost(isolation: dict) -> None:
    with PythonTool(SandboxConfig(wall_seconds=2.0, tmp_mb=8)) as t:
        assert t({"code": "kept = 7"}).ok
        result = t({"code": "import time\ntime.sleep(120)"})
        assert not result.ok and result.error == "timeout"
        assert "wall time" in result.text and "variables are gone" in result.text
        after = t({"code": "1 + 1"})
        assert after.ok and after.text.startswith("Note: the Python worker was restarted")
        assert after.text.endswith("=> 2") and after.numbers == (2.0,)
        lost = t({"code": "kept"})
        assert lost.error == "exception" and "NameError" in lost.text
        assert "restarted" not in lost.text  # the note comes once
        assert t.session is not None and t.session.starts == 2


def test_memory_and_output_limits_are_results(tool: PythonTool) -> None:
    memory = tool({"code": "x = bytearray(4 << 30)"})
    assert memory.error == "memory" and "768 MiB" in memory.text and "MemoryError" in memory.text
    output = tool({"code": "for i in range(10**6):\n    print('row', i)"})
    assert output.error == "output_limit" and "printed more than 2000 characters" in output.text
    assert len(output.text) < 1000
    assert tool({"code": "i < 10**6"}).text == "=> True"  # the loop was stopped early


def test_set_order_is_deterministic_across_workers(isolation: dict) -> None:
    code = "sorted_not = list({'alpha', 'beta', 'gamma', 'delta', 'eps'})\nsorted_not"
    texts = []
    for _ in range(2):
        with PythonTool(FAST) as t:
            texts.append(t({"code": code}).text)
    assert texts[0] == texts[1]


def test_replies_survive_writes_to_fd_1_and_2(tool: PythonTool) -> None:
    code = "import os\nos.write(1, b'\\x00\\x00\\x00\\x05junk' * 100)\nos.write(2, b'x')\n'fine'"
    result = tool({"code": code})
    assert result.ok and result.text == "=> 'fine'"


def test_bad_arguments(tool: PythonTool) -> None:
    for args in ({}, {"code": ""}, {"code": "   "}, {"code": 3}, {"code": "1", "extra": 1}):
        result = tool(args)
        assert not result.ok and result.error == "bad_args", args
    long = tool({"code": "#" * (FAST.max_code_chars + 1)})
    assert long.error == "bad_args" and str(FAST.max_code_chars) in long.text


def test_close_kills_the_worker(isolation: dict) -> None:
    t = PythonTool(FAST)
    assert t({"code": "1"}).ok
    worker = t.session._worker  # type: ignore[union-attr]
    assert worker is not None and worker.proc.poll() is None
    bwrap = worker.proc.pid
    children = Path(f"/proc/{bwrap}/task/{bwrap}/children").read_text().split()
    assert len(children) == 1  # --as-pid-1: bwrap's only child is the worker
    t.close()
    assert worker.proc.poll() is not None
    status = Path(f"/proc/{children[0]}/status")
    assert not status.exists() or "\nState:\tZ" in status.read_text()  # gone (or only a zombie)
    assert t({"code": "1"}).error == "refused"  # a closed tool never runs code again


def test_probe_reports_the_isolation(isolation: dict) -> None:
    assert isolation["uid"] != 0 and isolation["cap_eff"] == 0 and isolation["cap_bnd"] == 0
    assert isolation["no_new_privs"] == 1 and isolation["interfaces"] == ["lo"]
    assert isolation["root_writable"] is False and isolation["host_paths_visible"] == []
    assert isolation["nproc_limit"] == isolation["tasks"] == 1
    if seccomp_program() is not None:
        assert isolation["seccomp"] == 2
    if os.geteuid() == 0:
        assert isolation["uid"] == FAST.sandbox_uid


# --- refusal without isolation (runs everywhere) ---------------------------------------------


def test_missing_bwrap_raises_or_refuses_and_never_runs_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(launch_mod.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        PythonTool(FAST)
    marker = tmp_path / "ran"
    t = PythonTool(FAST, on_unavailable="refuse")
    result = t({"code": f"open({str(marker)!r}, 'w').write('x')"})
    assert not result.ok and result.error == "refused"
    assert "never run without isolation" in result.text and "bubblewrap" in result.text
    assert not marker.exists()
    t.close()


def test_a_sandbox_failing_its_isolation_check_is_refused(
    monkeypatch: pytest.MonkeyPatch, isolation: dict, tmp_path: Path
) -> None:
    def failing(facts: object, config: SandboxConfig, seccomp: bool) -> list[str]:
        return ["the code would run as uid 0"]

    monkeypatch.setattr(session_mod, "_check_facts", failing)
    with PythonTool(FAST) as t:
        result = t({"code": "1 + 1"})
        assert result.error == "refused" and "isolation check failed" in result.text
        assert "uid 0" in result.text
        assert t({"code": "1 + 1"}).error == "refused"  # stays refused


def test_a_sandbox_that_cannot_start_is_refused(monkeypatch: pytest.MonkeyPatch, isolation: dict) -> None:
    real = find_programs

    def broken(as_root: bool) -> dict[str, str]:
        return {**real(as_root), "bwrap": "/bin/false"}

    monkeypatch.setattr(session_mod, "find_programs", broken)
    with PythonTool(SandboxConfig(startup_seconds=20.0)) as t:
        result = t({"code": "1 + 1"})
    assert result.error == "refused" and "did not start" in result.text


def test_isolation_check_catches_each_problem() -> None:
    good = {
        "uid": 65534,
        "euid": 65534,
        "cap_eff": 0,
        "cap_prm": 0,
        "cap_bnd": 0,
        "no_new_privs": 1,
        "seccomp": 2,
        "interfaces": ["lo"],
        "root_writable": False,
        "host_paths_visible": [],
        "env_keys": ["HOME", "PATH"],
        "tasks": 1,
        "nproc_limit": 1,
    }
    check = session_mod._check_facts
    assert check(good, FAST, seccomp=True) == []
    bad = {
        "uid": 0,
        "cap_eff": 1 << 21,
        "no_new_privs": 0,
        "seccomp": 0,
        "interfaces": ["lo", "eth0"],
        "root_writable": True,
        "host_paths_visible": ["/etc/passwd"],
        "env_keys": ["HOME", "AWS_SECRET_ACCESS_KEY"],
        "nproc_limit": -1,
    }
    for key, value in bad.items():
        problems = check({**good, key: value}, FAST, seccomp=True)
        assert len(problems) == 1, (key, problems)
    assert check(None, FAST, seccomp=False) == ["no isolation report"]


# --- config, command line, numbers, seccomp ---------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cpu_seconds", 0.0),
        ("wall_seconds", 0.0),
        ("worker_cpu_seconds", 0),
        ("memory_mb", 64),
        ("max_processes", -1),
        ("max_output_chars", 10),
        ("tmp_mb", 0),
        ("max_file_mb", 0),
        ("max_open_files", 3),
        ("sandbox_uid", 0),
        ("packages", ("numpy", "not a name")),
    ],
)
def test_config_errors_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"SandboxConfig.{field}"):
        SandboxConfig(**{field: value})


def test_command_line_binds_only_what_the_worker_needs() -> None:
    layout = host_layout(FAST.packages)
    inside = [dest for _, dest in layout.binds]
    assert inside[0] == "/opt/py/bin/python3"
    assert {d.rsplit("/", 1)[1] for d in inside if d.startswith("/opt/site/")} >= {"numpy", "pandas"}
    for as_root in (False, True):
        programs = {"bwrap": "/x/bwrap", "setpriv": "/x/setpriv", "unshare": "/x/unshare", "sh": "/x/sh"}
        launcher = Launcher(config=FAST, layout=layout, programs=programs, as_root=as_root)
        argv = launcher.argv(in_fd=5, out_fd=6, stage=Path("/tmp/stage") if as_root else None, seccomp_fd=7)
        binds = [argv[i + 1 : i + 3] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
        sources = {src for src, _ in binds}
        assert "/" not in sources and not any(d in ("/", "/etc", "/home", "/root", "/work") for _, d in binds)
        assert not any(dest.startswith(("/etc", "/home", "/root", "/work")) for _, dest in binds)
        assert "--bind" not in argv  # nothing of the host is writable
        for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--as-pid-1", "--clearenv"):
            assert flag in argv
        assert argv[argv.index("--seccomp") + 1] == "7"
        if as_root:
            assert argv[0] == "/x/unshare"
            i = argv.index("/x/setpriv")
            assert argv[i + 1 : i + 7] == [
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
            ]
            assert argv[i + 7] == "/x/bwrap"
            assert all(src.startswith(("/tmp/stage/", "/usr/lib", "/lib")) for src in sources)
        else:
            assert argv[0] == "/x/bwrap"


def test_host_env_of_bwrap_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALFIN_FAKE_SECRET", "sk-should-not-travel")
    assert Launcher.host_env() == {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def test_extract_numbers() -> None:
    text = "total 1,234.5 and -0.25, 3e-4; x1 np.float64(3.5) .5 (12%) $4.50 nan inf"
    assert extract_numbers(text) == (1234.5, -0.25, 0.0003, 3.5, 0.5, 12.0, 4.5)
    assert len(extract_numbers("1 " * 5000)) == 1000


def test_tool_result_text_is_bounded(isolation: dict) -> None:
    with PythonTool(SandboxConfig(max_output_chars=10_000, tmp_mb=8)) as tool:
        result = tool({"code": "print('a' * 3000)\n'b' * 1900 + 'END'"})
    assert isinstance(result, ToolResult) and result.ok
    assert len(result.text) <= 4000 and result.text.endswith("END'") and "chars cut" in result.text


def _header_numbers(path: Path, prefix: str) -> dict[str, int]:
    found = {}
    for name, nr in re.findall(rf"#define {prefix}(\w+)\s+(\d+)\b", path.read_text()):
        found[name] = int(nr)
    return found


@pytest.mark.parametrize(
    ("arch", "header", "prefix"),
    [
        ("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "__NR_"),
        ("aarch64", "/usr/include/asm-generic/unistd.h", "__NR(?:3264)?_"),
    ],
)
def test_seccomp_numbers_match_the_kernel_headers(arch: str, header: str, prefix: str) -> None:
    if not Path(header).exists():
        pytest.skip(f"{header} not installed")
    table = SYSCALLS[arch][2]
    kernel = _header_numbers(Path(header), prefix)
    for name, nr in table.items():
        assert kernel.get(name) == nr, (arch, name, nr, kernel.get(name))
    missing = set(DENIED) - set(table)
    assert missing <= {"iopl", "ioperm", "uselib"}, missing


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_seccomp_program_jumps_land_on_deny(arch: str) -> None:
    prog = seccomp_program(arch)
    assert prog is not None and len(prog) % 8 == 0
    ins = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
    deny = len(ins) - 1
    assert ins[-1] == (0x06, 0, 0, 0x00050001) and ins[-2] == (0x06, 0, 0, 0x7FFF0000)
    denied = set()
    for i, (code, jt, _jf, k) in enumerate(ins[4:-2], start=4):
        assert i + 1 + jt == deny
        if code == 0x15:
            denied.add(k)
    assert denied == {SYSCALLS[arch][2][n] for n in DENIED if n in SYSCALLS[arch][2]}
    assert seccomp_program("sparc") is None
    assert machine_arch() in ("x86_64", "aarch64") or seccomp_program() is None


def test_measure_costs_reports_positive_medians(isolation: dict) -> None:
    from agent.qa.sandbox.costs import measure_costs

    costs = measure_costs(FAST, starts=1, calls=3)
    for key in ("start_ms", "call_ms", "pandas_call_ms", "plain_python_start_ms", "start_ratio"):
        assert costs[key] > 0, costs
    assert costs["call_ms"] < costs["start_ms"]


def test_output_at_the_limit_in_escaped_characters_still_replies(isolation: dict) -> None:
    # Printed and returned text at the limit in characters that JSON writes as 6 bytes each.
    with PythonTool(SandboxConfig(tmp_mb=8)) as t:
        n = t.config.max_output_chars
        result = t({"code": f"print('\\x01' * {n - 1})\n'\\u00e9' * {n - 10}"})
    assert result.ok, result.text
    assert result.text.endswith("\u00e9'") and "\x01" in result.text


def test_concurrent_workers_have_their_own_process_limits(isolation: dict) -> None:
    # Under root every worker runs as the same uid: the process limit must still be per sandbox.
    fork = "import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\nos.waitpid(pid, 0)[1] >> 8"
    tools = [PythonTool(SandboxConfig(max_processes=1 if i == 0 else 0, tmp_mb=8)) for i in range(4)]
    try:
        assert [t({"code": "n = 1\nn + 1"}).text for t in tools] == ["=> 2"] * 4
        assert tools[0]({"code": fork}).text == "=> 7"
        assert tools[0]({"code": fork}).text == "=> 7"  # the child was reaped: room again
        assert tools[1]({"code": fork}).error == "exception"
    finally:
        for t in tools:
            t.close()
