"""What every sender shares: how it says a message did not go."""

from __future__ import annotations


class SendFailure(Exception):
    """The provider did not take the message: ``retry`` when it certainly was not sent and may
    be sent again (a refused connection, "try again later"); otherwise it is final."""

    def __init__(self, reason: str, retry: bool) -> None:
        super().__init__(reason)
        self.reason, self.retry = reason, retry
