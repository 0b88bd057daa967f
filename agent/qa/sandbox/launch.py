"""The command line that starts one sandboxed Python worker, and what it binds.

Isolation is bubblewrap (``bwrap``) started by an *unprivileged* user, so that it builds the
sandbox from user namespaces and keeps no privilege:

* As a normal user (a workstation), ``bwrap`` runs as that user.
* As root (CI, containers), root first drops to ``SandboxConfig.sandbox_uid`` (``nobody``) with
  ``setpriv --reuid --regid --clear-groups --inh-caps=-all --bounding-set=-all
  --no-new-privs``. Measured here: ``bwrap`` started *as root* keeps uid 0 and every capability
  inside (it can read any file it binds and unmount its own ``/tmp``; ``--uid 65534 --cap-drop
  ALL`` does not help, and root is exempt from ``RLIMIT_NPROC``).

Namespaces: user (nested, then ``--disable-userns``: the code cannot make new ones), pid (the
worker is pid 1 and alone, ``--as-pid-1``: nothing else inside to signal or trace), net (only a
loopback of its own: no route to the host's ports, abstract sockets or DNS), ipc, uts, cgroup,
mount; a new session (no controlling terminal). Inside: no capabilities (effective, permitted
and bounding sets empty), ``no_new_privs``, the seccomp deny-list of
:mod:`agent.qa.sandbox.seccomp`, and a root file system that holds only

=====================================  ======================================================
``/usr/lib``, ``/usr/lib64`` (ro)      shared libraries (``/lib``, ``/lib64`` as on the host)
``/opt/py/bin/python3`` (ro)           the interpreter (see below)
``/opt/py/lib/pythonX.Y`` (ro)         its standard library; its own ``site-packages`` hidden
``/opt/py/lib/libpythonX.Y.so.1.0``    where the interpreter is a shared build
``/opt/site/<name>`` (ro)              the packages of ``SandboxConfig.packages`` (+ ``.libs``)
``/proc``                              of the sandbox's own pid namespace
``/dev``                               null, zero, full, random, urandom, tty (read-only dir)
``/tmp`` (rw)                          private tmpfs of ``tmp_mb``; cwd and ``HOME``
=====================================  ======================================================

``/`` and ``/dev`` are remounted read-only, so ``/tmp`` is the only writable place. No
``/etc``, no ``/home``, no ``/root``, no repository, no data folder, no ``/usr/bin`` (no shell).
The environment is cleared and rebuilt (``HOME``, ``TMPDIR``, ``PATH``, ``LANG``,
``PYTHONHASHSEED=0`` for deterministic set order, one thread for OpenBLAS/OpenMP/MKL/numexpr:
the process limit forbids threads). ``bwrap`` itself (and the root helpers before it) start
with a two-variable environment, so no secret of ours sits in any process of the sandbox.

What the code can still see: kernel-wide read-only facts under ``/proc`` (cpuinfo, meminfo,
load, its own mount table, which names the host paths of the bound folders), the shared
libraries under ``/usr/lib``, and the clock. What it can still use up: its own limits (CPU,
address space, ``/tmp``, files of ``max_file_mb`` on at most ``max_open_files`` descriptors).
There is no seccomp allow-list: kernel bugs reachable from a user namespace are out of scope.

The interpreter: the base interpreter the project's venv was made from (``sys._base_executable``
resolved), the only one whose ABI matches the venv's compiled numpy and pandas. It runs with
``-S -s -P -B`` and finds the bound packages through ``sys.path``; nothing else of the venv is
visible. As root, the base interpreter and the venv often live under ``/root``, which
``nobody`` cannot enter; then the folders holding them are first bind-mounted onto a fresh
``0755`` tmpfs in a private mount namespace (``unshare --mount --propagation private``, so the
host's mounts are untouched) and bwrap binds the needed paths from there. Where every path is
already readable by ``nobody`` (e.g. ``/usr/local`` and a world-readable checkout) that step is
skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import sysconfig
from dataclasses import dataclass
from importlib import resources
from importlib.util import find_spec
from pathlib import Path

from agent.qa.sandbox.config import MAX_ERROR_CHARS, SandboxConfig, SandboxUnavailable

__all__ = [
    "HostLayout",
    "Launcher",
    "host_layout",
    "find_programs",
    "INSIDE_PREFIX",
    "INSIDE_SITE",
    "INSTALL_HINT",
]

INSIDE_PREFIX = "/opt/py"
INSIDE_SITE = "/opt/site"
_SYSTEM_LIB_DIRS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64")
_HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`; `make install` and `make "
    "install-gpu` do it when run as root) and allow unprivileged user namespaces (sysctl "
    "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also "
    "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)"
)

# Run as root inside `unshare --mount --propagation private`: mount a 0755 tmpfs on the stage
# folder, bind each folder the unprivileged bwrap cannot reach onto it, then exec the rest.
_STAGE_SCRIPT = """set -eu
stage=$1; shift
mount -t tmpfs -o mode=0755,size=64k,nosuid,nodev localfin-sandbox "$stage"
while [ "$1" != "--" ]; do
  mkdir "$stage/$2"
  mount --bind -o ro "$1" "$stage/$2"
  shift 2
done
shift
exec "$@"
"""


@dataclass(frozen=True)
class HostLayout:
    """Host paths the worker needs and where they appear inside the sandbox.

    Attributes:
        binds: (host path, path inside) pairs, bound read-only, in mount order.
        hide: folders inside to cover with an empty read-only tmpfs (the interpreter's own
            site-packages).
        libpython: whether a shared libpython is bound (then ``LD_LIBRARY_PATH`` points at it).
        version: ``X.Y`` of the interpreter.
    """

    binds: tuple[tuple[Path, str], ...]
    hide: tuple[str, ...]
    libpython: bool
    version: str


def host_layout(packages: tuple[str, ...]) -> HostLayout:
    """Find the base interpreter, its standard library and the packages to bind.

    Raises:
        SandboxUnavailable: a path is missing or a package is not installed.
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    exe = Path(os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable))
    stdlib = Path(sysconfig.get_path("stdlib"))
    dynload = Path(str(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload"))
    needed = (("interpreter", exe), ("standard library", stdlib / "os.py"), ("lib-dynload", dynload))
    for what, path in needed:
        if not path.exists():
            raise SandboxUnavailable(f"sandbox: the base interpreter's {what} is missing at {path}")
    inside_lib = f"{INSIDE_PREFIX}/lib/python{version}"
    binds: list[tuple[Path, str]] = [
        (exe, f"{INSIDE_PREFIX}/bin/python3"),
        (stdlib, inside_lib),
        (dynload, f"{inside_lib}/lib-dynload"),
    ]
    hide = (f"{inside_lib}/site-packages",) if (stdlib / "site-packages").is_dir() else ()
    libpython = False
    soname = sysconfig.get_config_var("INSTSONAME")
    libdir = sysconfig.get_config_var("LIBDIR")
    shared = sysconfig.get_config_var("Py_ENABLE_SHARED")
    if shared and soname and libdir and (Path(libdir) / soname).exists():
        binds.append((Path(libdir) / soname, f"{INSIDE_PREFIX}/lib/{soname}"))
        libpython = True
    for name in packages:
        spec = find_spec(name)
        if spec is None or spec.origin is None:
            raise SandboxUnavailable(
                f"sandbox: package {name!r} of SandboxConfig.packages is not installed in {sys.prefix}"
            )
        locations = list(spec.submodule_search_locations or [])
        path = Path(locations[0]) if locations else Path(spec.origin)
        binds.append((path, f"{INSIDE_SITE}/{path.name}"))
        libs = path.parent / f"{name}.libs"
        if libs.is_dir():
            binds.append((libs, f"{INSIDE_SITE}/{libs.name}"))
    return HostLayout(binds=tuple(binds), hide=hide, libpython=libpython, version=version)


def find_programs(as_root: bool) -> dict[str, str]:
    """Absolute paths of bwrap (and, as root, setpriv, unshare and sh).

    Raises:
        SandboxUnavailable: one is missing (the message says how to install it).
    """
    names = ("bwrap", "setpriv", "unshare", "sh") if as_root else ("bwrap",)
    found = {name: shutil.which(name) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise SandboxUnavailable(
            f"sandbox: no OS isolation available, {', '.join(missing)} not found on PATH; {INSTALL_HINT}. "
            "Model-written code is never run without isolation."
        )
    return {name: str(path) for name, path in found.items()}


def _reachable_by_others(path: Path) -> bool:
    """Whether a user with no relation to the owners can reach and read ``path``."""
    try:
        for parent in list(path.parents)[::-1]:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        mode = os.stat(path).st_mode
    except OSError:
        return False
    need = (stat.S_IROTH | stat.S_IXOTH) if stat.S_ISDIR(mode) else stat.S_IROTH
    return mode & need == need


def _mount_roots(paths: list[Path]) -> list[Path]:
    """The smallest set of folders covering ``paths`` (the parent folder of each)."""
    roots: list[Path] = []
    for parent in sorted({p.parent for p in paths}, key=lambda p: len(p.parts)):
        if not any(parent == r or r in parent.parents for r in roots):
            roots.append(parent)
    return roots


@dataclass(frozen=True)
class Launcher:
    """Builds the argv of one worker; ``stage`` is the mount point used as root (or None)."""

    config: SandboxConfig
    layout: HostLayout
    programs: dict[str, str]
    as_root: bool

    def needs_stage(self) -> bool:
        """As root, whether some bound path is out of reach of the unprivileged uid."""
        return self.as_root and not all(_reachable_by_others(host) for host, _ in self.layout.binds)

    def argv(
        self, *, in_fd: int, out_fd: int, stage: Path | None, seccomp_fd: int | None = None
    ) -> list[str]:
        """The full command: [unshare ... sh ... setpriv ...] bwrap ... python -c WORKER CFG.

        ``seccomp_fd`` is a readable descriptor holding :func:`seccomp_program`'s bytes."""
        sources = {host: host for host, _ in self.layout.binds}
        prefix: list[str] = []
        if self.as_root:
            if stage is not None:
                roots = _mount_roots(list(sources))
                pairs: list[str] = []
                for i, root in enumerate(roots):
                    pairs += [str(root), f"m{i}"]
                for host in sources:
                    i = next(i for i, r in enumerate(roots) if r == host.parent or r in host.parents)
                    sources[host] = stage / f"m{i}" / host.relative_to(roots[i])
                prefix += [self.programs["unshare"], "--mount", "--propagation", "private", "--"]
                prefix += [self.programs["sh"], "-c", _STAGE_SCRIPT, "sh", str(stage), *pairs, "--"]
            uid = str(self.config.sandbox_uid)
            prefix += [
                self.programs["setpriv"],
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
            ]
        return prefix + self._bwrap(sources, seccomp_fd) + self._python(in_fd=in_fd, out_fd=out_fd)

    def _bwrap(self, sources: dict[Path, Path], seccomp_fd: int | None) -> list[str]:
        cfg = self.config
        args = [self.programs["bwrap"], "--unshare-all", "--unshare-user", "--disable-userns"]
        # --as-pid-1: the worker is the only process of its pid namespace (no bwrap reaper it could
        # ptrace or signal); signals it sends itself without a handler are then ignored.
        args += ["--as-pid-1", "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox"]
        for path in _SYSTEM_LIB_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for host, inside in self.layout.binds:
            args += ["--ro-bind", str(sources[host]), inside]
        for inside in self.layout.hide:
            args += ["--tmpfs", inside, "--remount-ro", inside]
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(cfg.tmp_mb << 20), "--tmpfs", "/tmp"]
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        env = {
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "PATH": f"{INSIDE_PREFIX}/bin",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            **dict.fromkeys(_THREAD_VARS, "1"),
        }
        if self.layout.libpython:
            env["LD_LIBRARY_PATH"] = f"{INSIDE_PREFIX}/lib"
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args

    def _python(self, *, in_fd: int, out_fd: int) -> list[str]:
        cfg = self.config
        worker_cfg = {
            "in_fd": in_fd,
            "out_fd": out_fd,
            "site": INSIDE_SITE,
            "max_open_files": cfg.max_open_files,
            "max_file_bytes": cfg.max_file_mb << 20,
            "max_processes": cfg.max_processes,
            "worker_cpu_seconds": cfg.worker_cpu_seconds,
            "memory_bytes": cfg.memory_mb << 20,
            "max_output_chars": cfg.max_output_chars,
            "max_error_chars": MAX_ERROR_CHARS,
        }
        source = resources.files("agent.qa.sandbox").joinpath("_worker.py").read_text(encoding="utf-8")
        return [f"{INSIDE_PREFIX}/bin/python3", "-S", "-s", "-P", "-B", "-c", source, json.dumps(worker_cfg)]

    @staticmethod
    def host_env() -> dict[str, str]:
        """The whole environment bwrap (and the root helpers) start with: no secret of ours."""
        return dict(_HOST_ENV)
