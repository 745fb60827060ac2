"""Local servers for what notifications and answers reach: SMTP servers (a small one speaking the
protocol as Django's SMTP backend does, and aiosmtpd's), and a webhook receiver that can fail a
number of times first."""

from __future__ import annotations

import socketserver
import threading
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class SMTPServer:
    """Accepts every message (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT) and keeps
    (envelope recipients, parsed message) for each."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def reply(self, line: str) -> None:
                self.wfile.write(f"{line}\r\n".encode())

            def handle(self) -> None:
                self.reply("220 test SMTP ready")
                recipients: list[str] = []
                while True:
                    raw = self.rfile.readline()
                    if not raw:
                        return
                    command = raw.decode(errors="replace").strip()
                    verb = command.split(" ", 1)[0].upper()
                    if verb == "EHLO":
                        self.reply("250-test")
                        self.reply("250 8BITMIME")
                    elif verb in ("HELO", "NOOP", "MAIL"):
                        self.reply("250 OK")
                    elif verb == "RSET":
                        recipients = []
                        self.reply("250 OK")
                    elif verb == "RCPT":
                        recipients.append(command.split(":", 1)[1].strip().strip("<>"))
                        self.reply("250 OK")
                    elif verb == "DATA":
                        self.reply("354 end with .")
                        lines = []
                        while (line := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
                            lines.append(line[1:] if line.startswith(b"..") else line)
                        outer.messages.append((recipients, message_from_bytes(b"".join(lines))))
                        recipients = []
                        self.reply("250 queued")
                    elif verb == "QUIT":
                        self.reply("221 bye")
                        return
                    else:
                        self.reply("502 not implemented")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class WebhookReceiver:
    """A webhook endpoint on a local port that answers 500 ``failures`` times, then 204."""

    def __init__(self, failures: int = 0) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                outer.headers.append(dict(self.headers))
                outer.paths.append(self.path)
                self.send_response(500 if len(outer.bodies) <= failures else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class MailServer:
    """A real SMTP server (aiosmtpd) on a local port: keeps (envelope recipients, parsed
    message) for each message it takes; ``defer_next``: answer that many DATA commands with
    ``451`` (try again later) first."""

    def __init__(self, defer_next: int = 0) -> None:
        from aiosmtpd.controller import Controller

        from rabs.stack.devstack import free_port

        self.messages: list[tuple[list[str], Message]] = []
        self.defer_next = defer_next
        outer = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                if outer.defer_next > 0:
                    outer.defer_next -= 1
                    return "451 4.3.0 try again later"
                outer.messages.append(
                    (list(envelope.rcpt_tos), message_from_bytes(envelope.original_content))
                )
                return "250 2.0.0 queued"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def close(self) -> None:
        self.controller.stop()
