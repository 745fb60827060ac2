"""The agent side: the service that runs inside an agent's VM (``service``), its loops
(``loop``), what its model is told (``model``), its client of the broker (``client``) and its
private memory (``memory``).

Nothing here imports the control plane; it talks to it only over the broker's HTTP API.
"""
