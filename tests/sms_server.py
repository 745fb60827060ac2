"""A local SMS provider speaking Twilio's Messages API: ``POST /2010-04-01/Accounts/<sid>/
Messages.json`` (basic auth, form fields To, From, Body, StatusCallback) answered ``201`` with
the message's sid, then the status callbacks a carrier's progress makes (``sent``, then
``delivered``, or ``undelivered`` with an error code), each signed in ``X-Twilio-Signature`` with
the auth token as Twilio signs them.

``incoming`` posts a text from a person to our webhook the way Twilio does.
``fail_next``: answer that many requests with ``503`` first (a provider having a bad minute);
``refuse``: numbers answered ``400`` with Twilio's code 21211 (not a valid phone number);
``undeliverable``: numbers the carrier reports ``undelivered`` (code 30003)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


def twilio_signature(token: str, url: str, params: dict[str, str]) -> str:
    signed = url + "".join(f"{key}{params[key]}" for key in sorted(params))
    return base64.b64encode(
        hmac.new(token.encode(), signed.encode(), hashlib.sha1).digest()
    ).decode()


@dataclass
class SentSMS:
    sid: str
    to: str
    sender: str
    body: str
    callback: str


@dataclass
class SMSProvider:
    account: str = "AC0123456789abcdef0123456789abcdef"
    token: str = "auth-token-for-the-local-provider"
    fail_next: int = 0
    refuse: set[str] = field(default_factory=set)
    undeliverable: set[str] = field(default_factory=set)
    callback_delay: float = 0.2
    messages: list[SentSMS] = field(default_factory=list)
    requests: int = 0
    callbacks: list[tuple[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.requests += 1
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                expected = (
                    "Basic " + base64.b64encode(f"{outer.account}:{outer.token}".encode()).decode()
                )
                if self.path != f"/2010-04-01/Accounts/{outer.account}/Messages.json":
                    return self.answer(404, {"code": 20404, "message": "not found"})
                if self.headers.get("Authorization") != expected:
                    return self.answer(401, {"code": 20003, "message": "authenticate"})
                if outer.fail_next > 0:
                    outer.fail_next -= 1
                    return self.answer(503, {"code": 20503, "message": "service unavailable"})
                if form.get("To") in outer.refuse:
                    return self.answer(
                        400, {"code": 21211, "message": f"The 'To' number {form['To']} is not "
                              "a valid phone number."}
                    )  # fmt: skip
                sid = "SM" + uuid.uuid4().hex
                sent = SentSMS(sid, form["To"], form["From"], form["Body"], form["StatusCallback"])
                outer.messages.append(sent)
                self.answer(201, {"sid": sid, "status": "queued", "to": sent.to, "body": sent.body})
                threading.Thread(target=outer._progress, args=(sent,), daemon=True).start()

            def answer(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _progress(self, sent: SentSMS) -> None:
        """The carrier's progress, reported to the message's StatusCallback as Twilio does."""
        final = "undelivered" if sent.to in self.undeliverable else "delivered"
        for status in ("sent", final):
            time.sleep(self.callback_delay)
            params = {
                "AccountSid": self.account,
                "MessageSid": sent.sid,
                "SmsSid": sent.sid,
                "MessageStatus": status,
                "SmsStatus": status,
                "To": sent.to,
                "From": sent.sender,
                "ApiVersion": "2010-04-01",
            }
            if status == "undelivered":
                params["ErrorCode"] = "30003"
            signature = twilio_signature(self.token, sent.callback, params)
            try:
                answer = httpx.post(
                    sent.callback,
                    data=params,
                    headers={"X-Twilio-Signature": signature},
                    timeout=10,
                )
                self.callbacks.append((status, answer.status_code))
            except httpx.HTTPError:
                self.callbacks.append((status, 0))

    def incoming(self, webhook: str, *, sender: str, body: str, to: str = "+61400000999") -> Any:
        """A text from ``sender`` arriving at the provider: posted to our webhook as Twilio
        posts an inbound message (form fields, signed)."""
        params = {
            "AccountSid": self.account,
            "MessageSid": "SM" + uuid.uuid4().hex,
            "From": sender,
            "To": to,
            "Body": body,
            "NumMedia": "0",
        }
        signature = twilio_signature(self.token, webhook, params)
        return httpx.post(
            webhook, data=params, headers={"X-Twilio-Signature": signature}, timeout=20
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
