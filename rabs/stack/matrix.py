"""The embedded Matrix homeserver (docs/channels.md): Synapse from the package registry, for chat.

Synapse's pins are not ours, so it lives in a venv of its own (``var/matrix-venv``, built from
``requirements/matrix.txt`` by ``make install`` or, when missing, by the first process that needs
it). Its data (SQLite, media, signing key, secrets) lives in a directory of its own under
``var/``. The control plane is its **application service**: the homeserver pushes every event
in a room where one of our users is a member to ``<web>/matrix/_matrix/app/v1/transactions/``,
and our users are the namespace ``@rabs_<agent>`` (an agent's bot) and ``@rabs.<username>``
(a staff member posting from the board).

A homeserver started here is a child of the process that started it (``make run``'s launcher,
a test session): in a session of its own, told by the kernel to stop when that process dies
(``die_with_parent``), and stopped by it on the way out. One homeserver per data directory
(an exclusive lock on it while it runs).

With ``RABS_MATRIX_URL`` set, nothing is started: that homeserver is used, with the tokens of the
registration its operator installed (``python -m rabs.stack.matrix registration``).

This module imports nothing from Django: the launcher uses it before settings exist.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from rabs.stack.embedded import var_dir
from rabs.stack.procs import die_with_parent

BASE_DIR = Path(__file__).resolve().parents[2]
REQUIREMENTS = BASE_DIR / "requirements" / "matrix.txt"
APPSERVICE_ID = "rabs"
#: Our users' localparts: ``rabs_<agent>`` (a bot), ``rabs.<username>`` (staff on the board).
USER_PREFIX = "rabs"
#: Where the control plane receives the homeserver's transactions, under the web root.
APPSERVICE_PATH = "/matrix"
START_TIMEOUT_SECONDS = 90.0


class HomeserverError(RuntimeError):
    """The homeserver could not be built or started; the message says why and where the log is."""


def venv_dir() -> Path:
    return var_dir() / "matrix-venv"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def install(*, quiet: bool = True) -> Path:
    """Build (or bring up to date) the homeserver's venv from ``requirements/matrix.txt``."""
    venv = venv_dir()
    stamp = venv / ".installed"
    wanted = REQUIREMENTS.read_text()
    if stamp.exists() and stamp.read_text() == wanted and venv_python().exists():
        stamp.touch()  # up to date (and newer than its requirements, for make)
        return venv
    if not venv_python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check"]
    if quiet:
        pip.append("--quiet")
    try:
        subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    except subprocess.CalledProcessError as exc:
        raise HomeserverError(f"could not install {REQUIREMENTS} into {venv}: {exc}") from exc
    stamp.write_text(wanted)
    return venv


# --- configuration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Secrets:
    """Kept in the data directory (mode 600), made once: the application service's two tokens,
    the shared secret for registering accounts, and Synapse's own keys."""

    as_token: str
    hs_token: str
    registration_secret: str
    macaroon_secret: str
    form_secret: str

    @classmethod
    def load_or_make(cls, data: Path) -> Secrets:
        path = data / "rabs-secrets.json"
        try:
            return cls(**json.loads(path.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            made = cls(*(secrets.token_urlsafe(32) for _ in range(5)))
            path.write_text(json.dumps(made.__dict__))
            path.chmod(0o600)
            return made


def _signing_key(data: Path) -> Path:
    """Synapse's ed25519 signing key (``ed25519 <version> <seed>``), made once."""
    path = data / "signing.key"
    if not path.exists():
        # imported here: made once per data directory, not on every start
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        seed = Ed25519PrivateKey.generate().private_bytes(
            Encoding.Raw, PrivateFormat.Raw, NoEncryption()
        )
        path.write_text(f"ed25519 a_rabs {base64.b64encode(seed).decode().rstrip('=')}\n")
        path.chmod(0o600)
    return path


def registration(*, url: str, server_name: str, keys: Secrets) -> dict[str, Any]:
    """The application service registration the homeserver loads (``app_service_config_files``)."""
    name = server_name.replace(".", r"\.")
    return {
        "id": APPSERVICE_ID,
        "url": url,
        "as_token": keys.as_token,
        "hs_token": keys.hs_token,
        "sender_localpart": f"{USER_PREFIX}_service",
        "namespaces": {
            "users": [{"exclusive": True, "regex": f"@{USER_PREFIX}[._].*:{name}"}],
            "rooms": [],
            "aliases": [],
        },
        "rate_limited": False,
    }


def _config(*, data: Path, port: int, server_name: str, keys: Secrets) -> dict[str, Any]:
    fast = {"per_second": 1000, "burst_count": 1000}
    return {
        "server_name": server_name,
        "pid_file": str(data / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(data / "homeserver.db")}},
        "log_config": str(data / "log.yaml"),
        "media_store_path": str(data / "media"),
        "signing_key_path": str(_signing_key(data)),
        "registration_shared_secret": keys.registration_secret,
        "macaroon_secret_key": keys.macaroon_secret,
        "form_secret": keys.form_secret,
        "report_stats": False,
        # A local homeserver: no federation, no key servers, nothing reaches outside.
        "trusted_key_servers": [],
        "federation_domain_whitelist": [],
        "suppress_key_server_warning": True,
        "url_preview_enabled": False,
        "presence": {"enabled": False},
        "enable_metrics": False,
        "app_service_config_files": [str(data / "appservice.yaml")],
        # People and the control plane post as fast as they like on a local server.
        "rc_message": fast,
        "rc_registration": fast,
        "rc_login": {"address": fast, "account": fast, "failed_attempts": fast},
        "rc_joins": {"local": fast, "remote": fast},
        "rc_invites": {"per_room": fast, "per_user": fast, "per_issuer": fast},
    }


_LOG_CONFIG = {
    "version": 1,
    "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"level": "WARNING", "handlers": ["console"]},
    "disable_existing_loggers": False,
}


def _write_yaml(path: Path, value: Any) -> None:
    # JSON is YAML: no YAML writer needed before Django's requirements are importable.
    path.write_text(json.dumps(value, indent=1))


# --- running it ---------------------------------------------------------------------------------


@dataclass
class Homeserver:
    """A homeserver the control plane talks to: its client URL and the tokens of our
    registration; ``process`` when this process started it."""

    url: str
    server_name: str
    as_token: str
    hs_token: str
    registration_secret: str = ""
    process: subprocess.Popen[bytes] | None = None
    data: Path | None = None
    started_seconds: float = 0.0
    _lock: IO[str] | None = field(default=None, repr=False)

    def env(self) -> dict[str, str]:
        """What the control plane's processes need to reach it (settings read these)."""
        return {
            "RABS_MATRIX_URL": self.url,
            "RABS_MATRIX_SERVER_NAME": self.server_name,
            "RABS_MATRIX_AS_TOKEN": self.as_token,
            "RABS_MATRIX_HS_TOKEN": self.hs_token,
        }

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def start(
    *,
    data: Path,
    port: int,
    appservice_url: str,
    server_name: str = "rabs.local",
    fresh: bool = False,
    timeout: float = START_TIMEOUT_SECONDS,
) -> Homeserver:
    """Start Synapse on 127.0.0.1:``port`` with its data in ``data`` (``fresh``: emptied first),
    the control plane at ``appservice_url`` as its application service; return once it
    answers. Raises HomeserverError (with the log's tail) if it does not."""
    began = time.monotonic()
    python = install().joinpath("bin", "python")
    data = data.resolve()
    if fresh and data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True, exist_ok=True)
    lock = open(data / "homeserver.lock", "a+")  # noqa: SIM115 - held while it runs
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise HomeserverError(f"a homeserver already runs on {data}") from None
    keys = Secrets.load_or_make(data)
    _write_yaml(data / "appservice.yaml", registration(
        url=appservice_url.rstrip("/") + APPSERVICE_PATH, server_name=server_name, keys=keys,
    ))  # fmt: skip
    _write_yaml(data / "log.yaml", _LOG_CONFIG)
    config = data / "homeserver.yaml"
    _write_yaml(config, _config(data=data, port=port, server_name=server_name, keys=keys))
    log_path = data / "homeserver.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(python), "-m", "synapse.app.homeserver", "-c", str(config)],
            cwd=data, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent,
        )  # fmt: skip
    server = Homeserver(
        url=f"http://127.0.0.1:{port}",
        server_name=server_name,
        as_token=keys.as_token,
        hs_token=keys.hs_token,
        registration_secret=keys.registration_secret,
        process=process,
        data=data,
        _lock=lock,
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{server.url}/_matrix/client/versions", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log_path.read_text(errors="replace")[-3000:]
            raise HomeserverError(f"the homeserver did not start ({log_path}):\n{tail}")
        time.sleep(0.1)
    server.started_seconds = time.monotonic() - began
    return server


def configured() -> Homeserver | None:
    """The homeserver named by ``RABS_MATRIX_URL`` (an existing one), if any."""
    url = os.environ.get("RABS_MATRIX_URL", "")
    if not url:
        return None
    return Homeserver(
        url=url,
        server_name=os.environ.get("RABS_MATRIX_SERVER_NAME", ""),
        as_token=os.environ.get("RABS_MATRIX_AS_TOKEN", ""),
        hs_token=os.environ.get("RABS_MATRIX_HS_TOKEN", ""),
    )


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def for_stack(env: dict[str, str], web_url: str) -> Homeserver | None:
    """``make run``'s homeserver: None when ``RABS_MATRIX_URL`` names one (or
    ``RABS_MATRIX_EMBEDDED=false``), else the embedded one under ``var/matrix`` on
    ``RABS_MATRIX_PORT`` (8008, or any free port if that one is taken), started now."""
    if env.get("RABS_MATRIX_URL") or env.get("RABS_MATRIX_EMBEDDED", "true") == "false":
        return None
    port = int(env.get("RABS_MATRIX_PORT") or 8008)
    if not _port_free(port):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
    server = start(
        data=var_dir() / "matrix",
        port=port,
        appservice_url=web_url,
        server_name=env.get("RABS_MATRIX_SERVER_NAME") or "rabs.local",
    )
    print(f"Matrix homeserver up at {server.url} ({server.started_seconds:.1f} s)", flush=True)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rabs.stack.matrix")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("install", help="build var/matrix-venv from requirements/matrix.txt")
    reg = sub.add_parser(
        "registration", help="print an application service registration for your homeserver"
    )
    reg.add_argument("--url", required=True, help="this control plane's web root, as the "
                     "homeserver reaches it (e.g. http://127.0.0.1:8000)")  # fmt: skip
    reg.add_argument("--server-name", required=True)
    args = parser.parse_args(argv)
    if args.action == "install":
        print(install(quiet=False))
        return 0
    keys = Secrets(*(secrets.token_urlsafe(32) for _ in range(5)))
    document = registration(
        url=args.url.rstrip("/") + APPSERVICE_PATH, server_name=args.server_name, keys=keys
    )
    print(json.dumps(document, indent=1))
    print(
        f"# Set RABS_MATRIX_AS_TOKEN={keys.as_token} RABS_MATRIX_HS_TOKEN={keys.hs_token}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
