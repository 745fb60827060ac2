"""The agent side: the service that runs inside an agent's VM, its SDK and private memory.

Nothing here imports the control plane; it talks to it only over the broker's HTTP API.
"""
