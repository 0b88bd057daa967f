"""The sandbox escape corpus: each attack is contained, reported as a clear tool error, and the
tool answers ``1 + 1`` right after.

Every case runs in a fresh Python tool (the production sandbox with smaller limits) and checks,
on the host side, after the call returned:
* the result is an error of the expected kind whose text shows what blocked the attack;
* no secret reached the model: the fake secret put in this process's environment, the gold
  answers of a benchmark file, the journal's content, the host's /etc/passwd line of root;
* nothing changed on the host: the marker files the attacks try to create do not exist, the gold
  and journal files are unchanged, a victim process (of the sandbox's own uid where the test
  runs as root) is still alive, a listening socket received no connection;
* the next call ``1 + 1`` returns 2 (the session is still usable, restarted where the attack
  killed the worker).

Cases aimed at the reply channel and at error formatting (forged replies, a forged reply that
also answers the host's sync, astral output at the limit, an exception whose ``__str__`` or
type name never returns, a traceback 100,000 frames deep) are also run as sequences: the calls
after them get their own correct replies (state kept where the attack only stopped a call).

Attacks written as real code would be: where the operating system only returns an error code
(``system()``, ``setuid``...), the attack checks it and raises, as any script would, so that
the errno shows in the tool's error.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.qa.sandbox import SandboxConfig, SandboxUnavailable, probe
from agent.qa.sandbox.seccomp import SYSCALLS, machine_arch
from agent.qa.tools.python_tool import PythonTool
from serving.chat.types import ChatRequest, ChatResult, Message, Usage
from serving.journal import Journal

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_GOLD = (
    Path(os.environ.get("LOCALFIN_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    / "qa"
    / "tatqa_dev.jsonl"
)
SECRET = "sk-localfin-fake-secret-8c1f"
GOLD_ANSWER = "GOLD-ANSWER-4417.25"

CORPUS = SandboxConfig(
    cpu_seconds=2.0, wall_seconds=20.0, memory_mb=768, tmp_mb=8, max_file_mb=4, max_output_chars=2000
)
LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
CHECK = (
    "if rc != 0:\n"
    "    raise OSError(ctypes.get_errno(), f'{{what}} returned {{rc}}: ' + os.strerror(ctypes.get_errno()))"
)


# Forging a reply: the reply pipe's number is in sys.argv[1]; a well-formed frame claims a value.
FORGE = (
    "import json, os, struct, sys\n"
    "cfg = json.loads(sys.argv[1])\n"
    "body = json.dumps({{'stdout': '', 'value': \"'FORGED'\", 'error': None, 'cpu_seconds': 0.0,"
    " 'nonce': {nonce}}}).encode()\n"
    "os.write(cfg['out_fd'], struct.pack('>I', len(body)) + body)\n"
)
# ... with the call's own nonce, read from the worker's frames (the code can see all of its process)
STEAL_NONCE = (
    "import sys\nf = sys._getframe()\n"
    "while f is not None and not isinstance(f.f_locals.get('request'), dict):\n    f = f.f_back\n"
    "nonce = f.f_locals['request']['nonce']\n"
)
# ... and answering the host's sync itself, read from the request pipe: the forged reply is taken,
# the real one stays behind, and the next call finds it
ANSWER_SYNC = (
    "head = os.read(cfg['in_fd'], 4)\n"
    "sync = json.loads(os.read(cfg['in_fd'], struct.unpack('>I', head)[0]))\n"
    "body = json.dumps(sync).encode()\n"
    "os.write(cfg['out_fd'], struct.pack('>I', len(body)) + body)\n"
)


def _literal(code: str) -> str:
    """``code`` as a Case template (braces doubled: the cases are formatted with host values)."""
    return code.replace("{", "{{").replace("}", "}}")


@dataclass(frozen=True)
class Case:
    """One attack: code (formatted with the host's values), the expected error kind and a
    regex the tool's text must match (what blocked it)."""

    name: str
    code: str
    kind: str
    blocked_by: str
    config: SandboxConfig = CORPUS
    needs: tuple[str, ...] = field(default=())
    slow: bool = False


def _syscall(name: str) -> int:
    table = SYSCALLS.get(machine_arch())
    return -1 if table is None else table[2][name]


CASES: list[Case] = [
    # --- reading files that hold secrets or answers ---------------------------------------
    Case("read_etc_passwd", "open('/etc/passwd').read()", "exception", r"FileNotFoundError.*'/etc/passwd'"),
    Case("read_etc_shadow", "open('/etc/shadow').read()", "exception", r"FileNotFoundError.*'/etc/shadow'"),
    Case("list_root_home", "import os\nos.listdir('/root')", "exception", r"FileNotFoundError.*'/root'"),
    Case("list_user_home", "import os\nos.listdir({home!r})", "exception", r"FileNotFoundError"),
    Case("read_repository_file", "open({repo_file!r}).read()", "exception", r"FileNotFoundError"),
    Case("read_gold_answers", "open({gold!r}).read()", "exception", r"FileNotFoundError"),
    Case(
        "read_shared_tatqa_gold",
        "open({shared_gold!r}).read()",
        "exception",
        r"FileNotFoundError",
        needs=("shared_gold",),
    ),
    Case("read_run_journal", "open({journal!r}, 'rb').read()", "exception", r"FileNotFoundError"),
    Case("read_via_dotdot", "open('/tmp/../../..' + {gold!r}).read()", "exception", r"FileNotFoundError"),
    Case(
        "read_via_symlink",
        "import os\nos.symlink({gold!r}, '/tmp/link')\nopen('/tmp/link').read()",
        "exception",
        r"FileNotFoundError.*'/tmp/link'",
    ),
    Case("read_via_proc_1_root", "open('/proc/1/root/etc/passwd').read()", "exception", r"FileNotFoundError"),
    Case(
        "read_parent_environ_via_proc",
        "open('/proc/{host_pid}/environ', 'rb').read()",
        "exception",
        r"FileNotFoundError.*/proc/\d+/environ",
    ),
    # --- environment secrets ----------------------------------------------------------------
    Case(
        "env_secret",
        "import os\nos.environ['LOCALFIN_FAKE_SECRET']",
        "exception",
        r"KeyError: 'LOCALFIN_FAKE",
    ),
    Case(
        "proc_self_environ_secret",
        "data = open('/proc/self/environ', 'rb').read()\n"
        "[v for v in data.split(b'\\0') if v.startswith(b'LOCALFIN_FAKE_SECRET=')][0]",
        "exception",
        r"IndexError",
    ),
    # --- writing outside the private /tmp ---------------------------------------------------
    Case("write_open_root_fs", "open('/opt/pwned', 'w').write('x')", "exception", r"Read-only file system"),
    Case("write_open_host_path", "open({target!r}, 'w').write('x')", "exception", r"FileNotFoundError"),
    Case(
        "write_os_rename",
        "import os\nopen('/tmp/a', 'w').write('x')\nos.rename('/tmp/a', '/opt/a')",
        "exception",
        r"Invalid cross-device link",
    ),
    Case(
        "write_os_link",
        "import os\nos.link(os.__file__, '/tmp/hard')",
        "exception",
        r"Invalid cross-device link",
    ),
    Case(
        "write_shutil_copy",
        "import shutil\nopen('/tmp/a', 'w').write('x')\nshutil.copy('/tmp/a', '/usr/lib/pwned')",
        "exception",
        r"Read-only file system",
    ),
    Case(
        "write_subprocess_shell",
        "import subprocess\nsubprocess.run(['sh', '-c', 'echo pwned > {target}'], check=True)",
        "exception",
        r"BlockingIOError.*Resource temporarily unavailable",
    ),
    Case(
        "write_os_system",
        "import os\nrc = os.system('echo pwned > {target}')\n"
        "if rc != 0:\n    raise OSError(f'os.system returned {{rc}}')",
        "exception",
        r"OSError: os.system returned",
    ),
    Case(
        "write_through_symlink",
        "import os\nos.symlink(os.__file__, '/tmp/l')\nopen('/tmp/l', 'a').write('pwned')",
        "exception",
        r"Read-only file system|Permission denied",
    ),
    Case(
        "fill_private_tmp",
        "for i in range(64):\n    open(f'/tmp/f{{i}}', 'wb').write(b'0' * (1 << 20))",
        "exception",
        r"No space left on device",
    ),
    Case(
        "file_larger_than_limit",
        "open('/tmp/big', 'wb').write(b'0' * (6 << 20))",
        "exception",
        r"File too large",
    ),
    Case("memfd_memory_file", "import os\nos.memfd_create('hog')", "exception", r"PermissionError"),
    # --- network ----------------------------------------------------------------------------
    Case(
        "tcp_to_host_listener",
        "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)",
        "exception",
        r"ConnectionRefusedError",
    ),
    Case(
        "abstract_unix_socket_on_host",
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({abstract!r})",
        "exception",
        r"ConnectionRefusedError|FileNotFoundError",
    ),
    Case("dns_lookup", "import socket\nsocket.getaddrinfo('example.com', 443)", "exception", r"gaierror"),
    Case(
        "raw_socket",
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)",
        "exception",
        r"PermissionError",
    ),
    # --- processes, CPU, memory, output -----------------------------------------------------
    Case("fork_bomb", "import os\nwhile True:\n    os.fork()", "exception", r"BlockingIOError"),
    Case(
        "thread_bomb",
        "import threading\nwhile True:\n    threading.Thread(target=input).start()",
        "exception",
        r"can't start new thread",
    ),
    Case(
        "infinite_loop_cpu",
        "while True:\n    pass",
        "timeout",
        r"CPU limit \(0.3 s\).*variables are kept",
        config=SandboxConfig(cpu_seconds=0.3, tmp_mb=8),
        slow=True,
    ),
    Case(
        "infinite_wait_wall",
        "import time\ntime.sleep(600)",
        "timeout",
        r"no reply within 2 s of wall time.*variables are gone",
        config=SandboxConfig(wall_seconds=2.0, tmp_mb=8),
        slow=True,
    ),
    Case(
        "cpu_timer_disarmed",
        "import signal\nsignal.setitimer(signal.ITIMER_PROF, 0)\nwhile True:\n    pass",
        "timeout",
        r"CPU budget \(1 s over its life\).*variables are gone",
        config=SandboxConfig(cpu_seconds=0.5, worker_cpu_seconds=1, wall_seconds=60.0, tmp_mb=8),
        slow=True,
    ),
    Case("huge_allocation", "x = bytearray(64 << 30)", "memory", r"768 MiB memory limit.*MemoryError"),
    Case(
        "growing_allocation",
        "hog = []\nwhile True:\n    hog.append(bytearray(50 << 20))",
        "memory",
        r"MemoryError",
        slow=True,
    ),
    Case(
        "numpy_allocation",
        "import numpy as np\nnp.ones((200_000, 200_000))",
        "memory",
        r"Unable to allocate",
    ),
    Case("huge_output", "print('x' * 10**7)", "output_limit", r"printed more than 2000 characters"),
    Case("endless_output", "while True:\n    print('spam')", "output_limit", r"printed more than 2000"),
    # --- signals ----------------------------------------------------------------------------
    Case(
        "kill_parent",
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill({host_pid}, signal.SIGKILL)",
        "exception",
        r"ProcessLookupError",
    ),
    Case("kill_minus_one", "import os\nos.kill(-1, 9)", "exception", r"ProcessLookupError"),
    Case(
        "kill_same_uid_victim",
        "import os\nos.kill({victim_pid}, 9)",
        "exception",
        r"ProcessLookupError",
    ),
    # --- ctypes and raw system calls --------------------------------------------------------
    Case(
        "ctypes_libc_system",
        LIBC + "what = 'system()'\nrc = libc.system(b'cat /etc/shadow > {target}')\nimport os\n" + CHECK,
        "exception",
        r"\[Errno 11\] system\(\) returned",
    ),
    Case(
        "ctypes_setuid_root",
        LIBC + "import os\nwhat = 'setuid(0)'\nrc = libc.setuid(0)\n" + CHECK,
        "exception",
        r"\[Errno (1|22)\] setuid\(0\) returned -1",
    ),
    Case(
        "ctypes_unmount_private_tmp",
        LIBC + "import os\nwhat = 'umount2'\nrc = libc.umount2(b'/tmp', 2)\n" + CHECK,
        "exception",
        r"\[Errno 1\] umount2 returned -1",
    ),
    Case(
        "ctypes_new_user_namespace",
        LIBC + "import os\nwhat = 'unshare'\nrc = libc.unshare(0x10000000)\n" + CHECK,
        "exception",
        r"\[Errno 1\] unshare returned -1",
    ),
    Case(
        "ptrace_attach",
        LIBC + "import os\nwhat = 'ptrace'\nrc = libc.ptrace(16, 1, 0, 0)\n" + CHECK,
        "exception",
        r"\[Errno 1\] ptrace returned -1",
    ),
    Case(
        "keyring_read",
        LIBC
        + "import os\nwhat = 'keyctl'\nrc = libc.syscall({keyctl_nr}, 0, -3, 0)\nrc = 0 if rc > 0 else rc\n"
        + CHECK,
        "exception",
        r"\[Errno 1\] keyctl returned -1",
        needs=("seccomp",),
    ),
    Case(
        "raise_own_limits",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)",
        "exception",
        r"not allowed to raise maximum limit",
    ),
    # --- import tricks ----------------------------------------------------------------------
    Case(
        "builtins_import_os_exec_shell",
        "__builtins__.__import__('os').execv('/bin/sh', ['sh', '-c', 'id > {target}'])",
        "exception",
        r"FileNotFoundError",
    ),
    Case(
        "importlib_subprocess",
        "import importlib\nimportlib.import_module('subprocess').check_output(['id'])",
        "exception",
        r"BlockingIOError",
    ),
    Case(
        "exec_replaces_worker",
        "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)'])",
        "crashed",
        r"stopped replying.*variables are gone",
        slow=True,
    ),
    Case(
        "inherited_directory_descriptor",
        "import os\nfor fd in range(64):\n    try:\n        print(os.listdir(fd))\n"
        "    except OSError:\n        pass\n"
        "raise PermissionError('no directory descriptor to escape through')",
        "exception",
        r"\AError \(exception\):\n.*PermissionError: no directory descriptor",
    ),
    # --- the reply channel ------------------------------------------------------------------
    Case(
        "garble_reply_pipe",
        # every descriptor the worker holds, wherever the parent's numbering put the pipes
        "import os\nfor fd in sorted(int(f) for f in os.listdir('/proc/self/fd')):\n"
        "    try:\n        os.write(fd, b'\\xff' * 16)\n    except OSError:\n        pass",
        "crashed",
        r"reply was unreadable",
    ),
    Case("tamper_worker_json", "import json\njson.dumps = None", "crashed", r"worker (died|exited)"),
    Case(
        "forge_reply_without_nonce",
        _literal(FORGE.format(nonce="'guessed'")),
        "crashed",
        r"reply pipe held a reply that does not answer this call.*variables are gone",
    ),
    Case(
        "forge_reply_with_stolen_nonce",
        _literal(STEAL_NONCE + FORGE.format(nonce="nonce")),
        "crashed",
        r"reply pipe held a second reply to this call.*variables are gone",
    ),
    Case(
        "forge_two_replies_ahead",
        _literal(STEAL_NONCE + FORGE.format(nonce="nonce") + FORGE.format(nonce="'next'")),
        "crashed",
        r"reply pipe held a second reply to this call",
    ),
    # --- error formatting runs under the CPU limit, the state survives ---------------------
    Case(
        "looping_exception_str",
        "class Endless(Exception):\n    def __str__(self):\n        while True:\n            pass\n"
        "raise Endless()",
        "exception",
        r"Endless.*(str\(\) failed|could not be formatted within the CPU limit)",
        config=SandboxConfig(cpu_seconds=0.5, tmp_mb=8),
    ),
    Case(
        "looping_exception_type_name",
        "def endless(cls):\n    while True:\n        pass\n"
        "class Meta(type):\n    pass\nMeta.__module__ = property(endless)\n"
        "class Endless(Exception, metaclass=Meta):\n    pass\nraise Endless()",
        "exception",
        r"Endless \(its message could not be formatted within the CPU limit\)",
        config=SandboxConfig(cpu_seconds=0.5, tmp_mb=8),
    ),
    Case(
        "deep_recursion_traceback",
        "import sys\nsys.setrecursionlimit(100_000)\ndef dive(n):\n    return dive(n + 1)\ndive(0)",
        "exception",
        r"\A(?!.*traceback cut).*line 4, in dive.*RecursionError: maximum recursion depth",
    ),
]


class Host:
    """What the attacks aim at, on the host side, and the checks that nothing happened."""

    def __init__(self, tmp_path: Path) -> None:
        self.gold = tmp_path / "gold" / "test.jsonl"
        self.gold.parent.mkdir()
        self.gold.write_text(f'{{"id": "q1", "answer": "{GOLD_ANSWER}"}}\n')
        self.journal = tmp_path / "run" / "journal.sqlite"
        self.journal.parent.mkdir()
        with Journal(self.journal) as journal:
            request = ChatRequest(
                model="tiny-qwen3", messages=(Message(role="user", content="q"),), max_tokens=8
            )
            answer = ChatResult(
                text=f"answer {GOLD_ANSWER}",
                reasoning=None,
                parsed=None,
                parse_error=None,
                finish_reason="stop",
                usage=Usage(prompt_tokens=1, completion_tokens=2),
                latency_s=0.1,
                backend="scripted",
                model="tiny-qwen3",
                revision="test",
                call_type=request.call_type,
                request_key=request.key(),
            )
            journal.put_many([(request, answer)])
        self.journal_bytes = self.journal.read_bytes()
        self.target = tmp_path / "pwned"
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.listener.setblocking(False)
        # An abstract unix socket (X11 and D-Bus listen on such): per network namespace.
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind(f"\0localfin-escape-{os.getpid()}")
        self.abstract.listen(4)
        self.abstract.setblocking(False)
        victim = ["sleep", "600"]
        if os.geteuid() == 0:  # a victim of the very uid the sandbox runs as
            uid = str(CORPUS.sandbox_uid)
            victim = [
                shutil.which("setpriv") or "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
            ]
            victim += ["sleep", "600"]
        self.victim = subprocess.Popen(victim, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.values = {
            "home": str(Path.home()),
            "repo_file": str(REPO_ROOT / "README.md"),
            "gold": str(self.gold),
            "shared_gold": str(SHARED_GOLD),
            "journal": str(self.journal),
            "target": str(self.target),
            "port": self.listener.getsockname()[1],
            "abstract": f"\0localfin-escape-{os.getpid()}",
            "host_pid": os.getpid(),
            "victim_pid": self.victim.pid,
            "keyctl_nr": _syscall("keyctl") if SYSCALLS.get(machine_arch()) else -1,
        }

    def leaked(self, text: str) -> list[str]:
        marks = [SECRET, GOLD_ANSWER, "root:x:0:0", "root:*:", "root:!"]
        return [m for m in marks if m in text]

    def assert_untouched(self) -> None:
        for path in (self.target, Path("/x"), Path("/opt/pwned"), Path("/usr/lib/pwned")):
            assert not path.exists(), f"{path} was created"
        assert GOLD_ANSWER in self.gold.read_text()
        assert self.journal.read_bytes() == self.journal_bytes
        assert self.victim.poll() is None, "the victim process was killed"
        for listener in (self.listener, self.abstract):
            with pytest.raises(BlockingIOError):
                conn, _ = listener.accept()
                conn.close()

    def close(self) -> None:
        self.listener.close()
        self.abstract.close()
        self.victim.kill()
        self.victim.wait()


@pytest.fixture(scope="module")
def isolation() -> dict:
    try:
        return probe(CORPUS)
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox on this machine: {exc}")


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory, isolation: dict) -> Iterator[Host]:
    """One set of targets for the whole corpus (each case's checks run after its own call)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCALFIN_FAKE_SECRET", SECRET)
        h = Host(tmp_path_factory.mktemp("escape"))
        yield h
        h.close()


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 20 and len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]
)
def test_attack_is_contained(case: Case, host: Host, isolation: dict) -> None:
    if "shared_gold" in case.needs and not SHARED_GOLD.exists():
        pytest.skip(f"{SHARED_GOLD} not present (set LOCALFIN_SHARED_DATA)")
    if "seccomp" in case.needs and isolation.get("seccomp") != 2:
        pytest.skip("no seccomp filter on this architecture")
    code = case.code.format(**host.values)
    with PythonTool(case.config) as tool:
        result = tool({"code": code})
        assert not result.ok, f"{case.name}: the attack succeeded: {result.text}"
        assert result.error == case.kind, result.text
        assert re.search(case.blocked_by, result.text, re.DOTALL), result.text
        assert host.leaked(result.text) == []
        host.assert_untouched()
        after = tool({"code": "1 + 1"})
        assert after.ok and after.text.endswith("=> 2") and after.numbers[-1] == 2.0, after


def _replies(tool: PythonTool, calls: list[tuple[str, str]]) -> None:
    for code, want in calls:
        got = tool({"code": code})
        assert got.ok and got.text.endswith(want), (code, got.text)


FRESH_CALLS = [
    ("x = 7\nx * 3", "=> 21"),
    ("'abc'.upper()", "=> 'ABC'"),
    ("sum(range(10))", "=> 45"),
    ("x + 1", "=> 8"),
]


@pytest.mark.parametrize(
    "code",
    [
        FORGE.format(nonce="'guessed'"),
        STEAL_NONCE + FORGE.format(nonce="nonce"),
        STEAL_NONCE + FORGE.format(nonce="nonce") + FORGE.format(nonce="'next'"),
    ],
    ids=["without_nonce", "stolen_nonce", "two_ahead"],
)
def test_a_forged_reply_never_shifts_later_replies(code: str, isolation: dict) -> None:
    with PythonTool(CORPUS) as tool:
        _replies(tool, [("kept = 5\nkept", "=> 5")])
        attack = tool({"code": code})
        assert attack.error == "crashed" and "reply pipe held" in attack.text, attack.text
        assert "FORGED" not in attack.text
        first = tool({"code": "41 + 1"})
        assert first.ok and first.text.endswith("=> 42") and "restarted" in first.text, first.text
        _replies(tool, FRESH_CALLS)
        assert tool.session is not None and tool.session.starts == 2


def test_a_forged_reply_that_also_answers_the_sync_is_found_by_the_next_call(isolation: dict) -> None:
    """The code takes the host's sync token from the request pipe and answers it: the host
    takes its forged reply for this call (a claim about its own output, as a print would be),
    and the real reply, left in the pipe, carries this call's nonce, not the next call's."""
    with PythonTool(CORPUS) as tool:
        _replies(tool, [("kept = 5\nkept", "=> 5")])
        forged = tool({"code": STEAL_NONCE + FORGE.format(nonce="nonce") + ANSWER_SYNC})
        assert forged.ok and forged.text == "=> 'FORGED'", forged.text
        found = tool({"code": "kept * 2"})
        assert found.error == "crashed", found.text
        assert "reply that does not answer this call" in found.text and "variables are gone" in found.text
        assert "=> 10" not in found.text  # never the reply of another call
        first = tool({"code": "41 + 1"})
        assert first.ok and first.text.endswith("=> 42") and "restarted" in first.text, first.text
        _replies(tool, FRESH_CALLS)


KEPT_CALLS = [
    ("kept * 2", "=> 10"),
    ("kept = kept + 1\nkept", "=> 6"),
    ("str(kept) * 2", "=> '66'"),
]


def test_astral_output_at_the_limit_replies_and_keeps_the_state(isolation: dict) -> None:
    """Printed output and a value of max_output_chars astral characters each (4 bytes of UTF-8,
    12 of ASCII-escaped JSON): the reply fits the host's cap, the worker keeps its state."""
    with PythonTool(SandboxConfig(tmp_mb=8)) as tool:
        n = tool.config.max_output_chars
        _replies(tool, [("kept = 5\nkept", "=> 5")])
        code = f"s = '\\U0001F600' * {n - 2}\nprint(s + 'x')\ns"
        assert tool.session is not None
        result = tool.session.execute(code)
        astral = "\U0001f600" * (n - 2)
        assert result.ok and not result.worker_lost, result.error_text
        assert result.stdout == astral + "x\n" and len(result.stdout) == n
        assert result.value == repr(astral) and len(result.value) == n
        shown = tool({"code": "s[:3] + '!'"})
        assert shown.ok and shown.text == "=> '\U0001f600\U0001f600\U0001f600!'", shown.text
        assert tool.session.starts == 1
        _replies(tool, KEPT_CALLS)


FORMATTING_CASES = ("looping_exception_str", "looping_exception_type_name", "deep_recursion_traceback")


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.name in FORMATTING_CASES],
    ids=lambda c: c.name,
)
def test_error_formatting_stops_under_the_cpu_limit_and_keeps_the_state(case: Case, isolation: dict) -> None:
    with PythonTool(case.config) as tool:
        _replies(tool, [("kept = 5\nkept", "=> 5")])
        result = tool({"code": case.code})
        assert result.error == "exception" and re.search(case.blocked_by, result.text, re.DOTALL), result.text
        assert "variables are gone" not in result.text
        _replies(tool, KEPT_CALLS)
        assert tool.session is not None and tool.session.starts == 1
