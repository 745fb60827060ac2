from __future__ import annotations

import pytest

from brainframe.services.seed import seed_brainframe


@pytest.fixture
def seeded(db: None) -> None:
    """The demo data, as `make run` loads it."""
    seed_brainframe()
