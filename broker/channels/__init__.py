"""Channels both ways (docs/channels.md): answers and posts leave through governed calls
(``channel.reply``, ``chat.assistant.post``) and are delivered here, one sender per channel —
an SMS provider speaking Twilio's Messages API (``sms``), the deployment's mail server
(``mail``), the Matrix homeserver (``matrix``) — retried with back-off, exactly once
(``delivery``). The homeserver's application-service transactions bring room messages in
(``appservice``). The rules (who may be answered, what a channel carries, delivery states) live
in ``brainframe.services.ledger``.
"""
