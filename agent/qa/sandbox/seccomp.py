"""A small seccomp deny-list for the sandbox (a second layer behind the namespaces).

bubblewrap loads a classic BPF program given on a file descriptor (``--seccomp FD``) just before
it runs the worker. Ours returns ``EPERM`` for the system calls below and allows everything
else; a call made through another ABI (i386 ``int 0x80`` or x32 numbers on x86_64, arm32 on
aarch64) is refused whole, since its numbers differ and would slip past the list.

What is refused, and why (most are already powerless without capabilities; the list is
defence in depth, each line a known route of sandbox escapes or host interference):

* ``add_key``, ``request_key``, ``keyctl``: the kernel keyrings are not namespaced by bwrap;
  the worker would inherit the caller's session keyring (on a workstation, the user's keys).
* ``ptrace``, ``process_vm_readv``, ``process_vm_writev``: reading or steering other processes.
* ``memfd_create``: anonymous files whose memory no folder size limits.
* ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``: large kernel attack surface,
  the usual way in for privilege escalation from a user namespace.
* mount API (``mount``, ``umount2``, ``pivot_root``, ``chroot``, ``open_tree``, ``move_mount``,
  ``fsopen``, ``fsmount``, ``fspick``, ``mount_setattr``), ``unshare``, ``setns``: changing the
  sandbox's own file system view or namespaces.
* ``name_to_handle_at``, ``open_by_handle_at``: opening files by handle, past the mount view.
* kernel and machine control: ``kexec_*``, ``*init_module``, ``delete_module``, ``reboot``,
  ``swapon``, ``swapoff``, ``acct``, ``quotactl``, ``syslog``, ``fanotify_init``,
  ``lookup_dcookie``, ``vhangup``, clock setting calls, and on x86_64 ``iopl``, ``ioperm``,
  ``uselib``.

Architectures: x86_64 and aarch64. Elsewhere :func:`seccomp_program` returns None, the sandbox
runs without this layer (namespaces, no capabilities and limits still apply) and says so in the
log; the isolation check then does not require a filter.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["DENIED", "SYSCALLS", "seccomp_program", "machine_arch"]

#: System calls refused with EPERM (names as in the kernel's unistd tables).
DENIED: tuple[str, ...] = (
    "add_key",
    "request_key",
    "keyctl",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "memfd_create",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "name_to_handle_at",
    "open_by_handle_at",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "fanotify_init",
    "lookup_dcookie",
    "vhangup",
    "clock_settime",
    "settimeofday",
    "adjtimex",
    "clock_adjtime",
    "iopl",
    "ioperm",
    "uselib",
)

_X86_64 = {
    "ptrace": 101, "syslog": 103, "uselib": 134, "vhangup": 153, "pivot_root": 155, "adjtimex": 159,
    "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167,
    "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
    "quotactl": 179, "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248,
    "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298, "fanotify_init": 300,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313, "memfd_create": 319,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442,
}  # fmt: skip
_AARCH64 = {
    "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51, "vhangup": 58,
    "quotactl": 60, "acct": 89, "unshare": 97, "kexec_load": 104, "init_module": 105, "delete_module": 106,
    "clock_settime": 112, "syslog": 116, "ptrace": 117, "reboot": 142, "settimeofday": 170, "adjtimex": 171,
    "add_key": 217, "request_key": 218, "keyctl": 219, "swapon": 224, "swapoff": 225, "perf_event_open": 241,
    "fanotify_init": 262, "name_to_handle_at": 264, "open_by_handle_at": 265, "clock_adjtime": 266,
    "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271, "finit_module": 273,
    "memfd_create": 279, "bpf": 280, "userfaultfd": 282, "kexec_file_load": 294, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
}  # fmt: skip

#: Per architecture: (AUDIT_ARCH value, first number of a foreign ABI sharing it or None,
#: syscall numbers). aarch64 has no iopl/ioperm/uselib.
SYSCALLS: dict[str, tuple[int, int | None, dict[str, int]]] = {
    "x86_64": (0xC000003E, 0x40000000, _X86_64),
    "aarch64": (0xC00000B7, None, _AARCH64),
}

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_OFF_NR, _OFF_ARCH = 0, 4  # offsets in struct seccomp_data


def machine_arch() -> str:
    """The machine name as seccomp tables know it (``x86_64``, ``aarch64``, ...)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def seccomp_program(arch: str | None = None) -> bytes | None:
    """The filter as bytes of ``struct sock_filter`` for bwrap's ``--seccomp``, or None for an
    architecture without a table."""
    entry = SYSCALLS.get(arch or machine_arch())
    if entry is None:
        return None
    audit_arch, foreign_abi, numbers = entry
    numbers_denied = sorted({numbers[name] for name in DENIED if name in numbers})
    checks: list[tuple[int, int]] = []  # (opcode, k) of each jump to "deny"
    if foreign_abi is not None:
        checks.append((_JGE_K, foreign_abi))
    checks += [(_JEQ_K, nr) for nr in numbers_denied]
    prog: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 1, 0, audit_arch),
        (_RET_K, 0, 0, _RET_EPERM),
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    deny_at = len(prog) + len(checks) + 1
    for opcode, k in checks:
        prog.append((opcode, deny_at - len(prog) - 1, 0, k))
    prog += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_EPERM)]
    assert len(prog) == deny_at + 1 and deny_at < 256
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)
