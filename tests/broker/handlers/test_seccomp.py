"""The script sandbox's seccomp filter: for each class of kernel call an escape starts from, a
script tool Henry calls through the broker tries it, and the call's recorded outcome is the
refusal (EPERM, the filter's answer). The same probes without the filter show that it, not the
sandbox's other layers, is what refuses them."""

from __future__ import annotations

import json
import platform
import textwrap
from pathlib import Path
from typing import Any

import pytest

from brainframe.models import ToolCall
from broker.handlers import sandbox
from tests import factories as f
from tests.signing import SignedClient

#: Each probe tries one call and exits 1 naming its errno, or prints what it reached.
PROBE = textwrap.dedent(
    """
    import ctypes, errno, json, os, platform, sys
    NR = {
        "x86_64": {"ptrace": 101, "unshare": 272, "setns": 308, "mount": 165, "keyctl": 250,
                   "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
                   "process_vm_readv": 310, "init_module": 175, "io_uring_setup": 425,
                   "clone": 56},
        "aarch64": {"ptrace": 117, "unshare": 97, "setns": 268, "mount": 40, "keyctl": 219,
                    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
                    "process_vm_readv": 270, "init_module": 105, "io_uring_setup": 425,
                    "clone": 220},
    }[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    NEWUSER, NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17

    def call(name, *args):
        done = libc.syscall(NR[name], *args)
        return "ok" if done >= 0 else errno.errorcode[ctypes.get_errno()]

    def clone_newuser():
        pid = libc.syscall(NR["clone"], NEWUSER | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
        if pid < 0:
            return errno.errorcode[ctypes.get_errno()]
        os.waitpid(pid, 0)
        return "ok"

    def mount():
        call("unshare", NEWUSER | NEWNS)  # a namespace of its own would make mount work
        return call("mount", b"none", b"/workspace", b"tmpfs", 0, 0)

    PROBES = {
        "ptrace": lambda: call("ptrace", 0, 0, 0, 0),  # PTRACE_TRACEME
        "process_vm_readv": lambda: call("process_vm_readv", os.getpid(), 0, 0, 0, 0, 0),
        "unshare": lambda: call("unshare", NEWUSER),
        "clone_newuser": clone_newuser,
        "setns": lambda: call("setns", -1, 0),
        "mount": mount,
        "keyctl": lambda: call("keyctl", 0, -3, 0),  # KEYCTL_GET_KEYRING_ID, session keyring
        "bpf": lambda: call("bpf", 0, 0, 0),
        "perf_event_open": lambda: call("perf_event_open", 0, 0, -1, -1, 0),
        "userfaultfd": lambda: call("userfaultfd", 1),  # UFFD_USER_MODE_ONLY
        "io_uring_setup": lambda: call("io_uring_setup", 1, 0),
        "init_module": lambda: call("init_module", 0, 0, b""),
    }
    def isolated(name):
        # Each in a child of its own: one probe's namespace must not change the next one's.
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write_end, PROBES[name]().encode())
            os._exit(0)
        os.close(write_end)
        answer = os.read(read_end, 100).decode()
        os.waitpid(pid, 0)
        return answer

    wanted = json.load(sys.stdin).get("probes") or list(PROBES)
    answers = {name: isolated(name) for name in wanted}
    seccomp = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")][0]
    refused = {name: answer for name, answer in answers.items() if answer != "ok"}
    if len(wanted) == 1 and refused:
        sys.exit(f"{wanted[0]} refused: {refused[wanted[0]]} (seccomp mode {seccomp})")
    print(json.dumps({"answers": answers, "seccomp": seccomp}))
    """
)
CLASSES = [
    "ptrace",
    "process_vm_readv",
    "unshare",
    "clone_newuser",
    "setns",
    "mount",
    "keyctl",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "init_module",
]
pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "aarch64"), reason="probes know x86_64 and aarch64"
)


@pytest.fixture
def probe_tool(settings: Any, tmp_path: Path, seeded: None) -> str:
    settings.RABS_SCRIPT_ROOT = tmp_path
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    jobs.chmod(0o755)
    (jobs / "probe.py").write_text(PROBE)
    (jobs / "probe.py").chmod(0o644)
    f.ToolFactory(
        tool_id="test.script.escape",
        agent_access=["henry"],
        handler_type="script",
        handler_config={"argv": ["python", "probe.py"], "cwd": "jobs"},
        input_schema={"type": "object"},
        output_schema={},
    )
    return str(jobs)


@pytest.mark.parametrize("probe", CLASSES)
def test_each_escape_class_is_refused_and_recorded(
    henry: SignedClient, probe_tool: str, probe: str
) -> None:
    if sandbox.seccomp_status():
        pytest.fail(f"the seccomp filter is not in place: {sandbox.seccomp_status()}")
    answer = henry.post(
        "/api/v1/tool-calls/",
        {"tool_id": "test.script.escape", "arguments": {"probes": [probe]}, "reason": "attempt"},
    )
    body = answer.json()
    assert body["outcome"] == "failed", f"{probe} got through: {body.get('result')}"
    assert f"{probe} refused: EPERM (seccomp mode 2)" in body["error"], body["error"]
    call = ToolCall.objects.get(pk=body["call_id"])
    assert call.outcome == "failed" and f"{probe} refused: EPERM" in call.error


def test_without_the_filter_the_same_calls_are_not_refused_alike(probe_tool: str) -> None:
    """The control: the sandbox's namespaces, dropped capabilities and no_new_privs alone leave
    most of these calls open (or answer other errors); the filter's EPERM is its own."""

    def probe(seccomp: bool) -> dict[str, Any]:
        outcome = sandbox.run_sandboxed(
            command=["python", "probe.py"],
            stdin=json.dumps({"probes": CLASSES}).encode(),
            tool_dir=Path(probe_tool),
            limits=sandbox.LIMIT_DEFAULTS,
            env={"PATH": "/usr/bin:/bin"},
            timeout=20,
            seccomp=seccomp,
        )
        assert outcome.returncode == 0, outcome.stderr
        found: dict[str, Any] = json.loads(outcome.stdout)
        return found

    filtered, bare = probe(True), probe(False)
    assert filtered["seccomp"] == "2" and bare["seccomp"] == "0"
    assert set(filtered["answers"].values()) == {"EPERM"}, filtered
    assert bare["answers"]["ptrace"] == "ok" and bare["answers"]["keyctl"] == "ok", bare
    assert bare["answers"]["process_vm_readv"] == "ok", bare
    open_without = [name for name, answer in bare["answers"].items() if answer != "EPERM"]
    assert len(open_without) >= len(CLASSES) - 1, bare
