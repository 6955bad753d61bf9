import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _threads():
    # Two-core machine: one torch thread per test process keeps runs predictable.
    torch.set_num_threads(1)
