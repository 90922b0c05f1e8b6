"""Fixtures shared by the audit tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    """A real Dask LocalCluster on loopback (2 worker processes), one per test module."""
    from audits.partitioned import dask_client

    with dask_client(n_workers=2) as c:
        yield c
