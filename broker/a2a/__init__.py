"""The broker's A2A face: agent cards, and a JSON-RPC endpoint through which an external agent
hands a task to one of ours (``a2a-sdk``)."""
