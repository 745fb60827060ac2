"""The script sandbox's seccomp filter: the kernel calls a script never needs and an escape
would, refused with EPERM. Built once at install (libseccomp, through ``pyseccomp``) into a
compiled BPF program that bubblewrap loads (``--seccomp FD``) for every script:

    python broker/handlers/seccomp.py var/bin/rabs-seccomp.bpf   (a script: no package import)

Default allow, deny the dangerous, as container runtimes do (Docker's default profile):

- tracing and reading other processes: ``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``,
  ``pidfd_getfd``;
- namespaces: ``unshare``, ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag (``clone3``,
  whose flags a filter cannot read, answers ENOSYS: the C library falls back to ``clone``);
- mounts and the root: ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and the new mount API;
- the kernel's keyrings: ``keyctl``, ``add_key``, ``request_key``;
- ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``;
- kernel modules and the machine: ``init_module``, ``finit_module``, ``delete_module``,
  ``kexec_*``, ``reboot``, ``swapon``/``swapoff``, ``acct``, ``quotactl``, ``syslog``,
  ``iopl``/``ioperm``, the clock setters, ``open_by_handle_at``, ``personality``,
  and ``ioctl(TIOCSTI)`` (typing into a terminal).

A call from another architecture's ABI (x32, 32-bit) kills the process (libseccomp's default for
a foreign architecture). Standard library and ``pyseccomp`` only: no Django.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path

#: Refused with EPERM, by name (a name this kernel's architecture lacks is skipped).
DENIED = (
    # tracing and other processes' memory
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    # namespaces
    "unshare",
    "setns",
    # mounts and the root
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    # keyrings
    "keyctl",
    "add_key",
    "request_key",
    # kernel interfaces an escape starts from
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # kernel modules and the machine
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "name_to_handle_at",
    "open_by_handle_at",
    "lookup_dcookie",
    "personality",
    "uselib",
    "vhangup",
    "nfsservctl",
)
#: clone(2) flags that make a namespace.
CLONE_NEW = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
    | 0x00000080  # CLONE_NEWTIME
)
TIOCSTI = 0x5412


def seccomp_program() -> bytes:
    """The compiled BPF program (for this machine's architecture)."""
    # Imported here: only the install step compiles the filter; nothing else loads libseccomp.
    import tempfile

    import pyseccomp as seccomp

    refuse = seccomp.ERRNO(errno.EPERM)
    program = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED:
        try:
            program.add_rule(refuse, name)
        except (ValueError, RuntimeError, OSError):  # not a call of this architecture
            continue
    for flag in _bits(CLONE_NEW):
        program.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    program.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    program.add_rule(refuse, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    with tempfile.TemporaryFile() as out:
        program.export_bpf(out)
        out.seek(0)
        return out.read()


def _bits(mask: int) -> list[int]:
    return [1 << bit for bit in range(64) if mask >> bit & 1]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python broker/handlers/seccomp.py OUTPUT", file=sys.stderr)
        return 2
    target = Path(argv[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".new")
    temporary.write_bytes(seccomp_program())
    temporary.replace(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
