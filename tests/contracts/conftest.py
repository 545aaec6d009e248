"""The real services the contract runs need, shared with the integration tests (one definition,
in tests/integration/conftest.py): the Docker daemon and the test image, and a throwaway
PostgreSQL server (one per module)."""

from __future__ import annotations

from tests.integration.conftest import client, image, postgres

__all__ = ["client", "image", "postgres"]
