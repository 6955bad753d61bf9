import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    # Two-core machine: one torch thread per test keeps runs predictable, and the
    # bit-exactness tests need it (the stacked AdamW: studies/scaling/optim.py). Reset before every test: the
    # inline executor sets the process's thread count when a test calls it.
    torch.set_num_threads(1)
