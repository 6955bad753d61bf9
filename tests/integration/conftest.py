import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = Path(__file__).parent / "tiny.yaml"


def bindscale(*args, cwd=None, timeout=300):
    """Run the CLI in a subprocess, as a user would."""
    env = os.environ | {"PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "bindscale", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def tiny():
    return TINY
