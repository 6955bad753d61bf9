"""bindscale.train.speed: freed blocks stay in the heap (no page faults per step); denormals flushed while training."""

import subprocess
import sys

import pytest
import torch

# Train a width-512 stack (one torch thread, as in a pool worker) and print the minor page
# faults of steps 26-75 (read at the progress calls, which come every 25 steps). "default"
# marks the allocator as already tuned, so run_group leaves glibc's defaults in place.
SCRIPT = """
import resource, sys, torch
import bindscale.train.speed as cpu
from bindscale.studies.scaling.config import ModelConfig, TrainConfig, TrialConfig
from bindscale.studies.scaling.trial import run_group
torch.set_num_threads(1)
cpu._done = sys.argv[1] == "default"
train = TrainConfig(steps=75, n_evals=1, eval_tasks=8, probe_tasks=8, probe_samples=1, precision="fp32")
trials = [TrialConfig(model=ModelConfig(width=512, depth=3), train=train, seed=s) for s in range(2)]
seen = []
run_group(trials, progress=lambda n: seen.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt))
print(seen[-1] - seen[0])
"""


def faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_keep_freed_memory_removes_the_page_faults_of_training_steps():
    default, kept = faults("default"), faults("keep")
    # measured here (11 runs): 39 000-178 000 faults in 50 steps under the defaults, 0-4 500 kept
    assert kept < default / 4, (default, kept)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_keep_freed_memory_applies_once_per_process(monkeypatch):
    import ctypes

    import bindscale.train.speed as cpu

    opened = []
    real = ctypes.CDLL
    monkeypatch.setattr(cpu, "_done", False)
    monkeypatch.setattr(cpu.ctypes, "CDLL", lambda *a, **k: opened.append(a) or real(*a, **k))
    assert cpu.keep_freed_memory() and cpu.keep_freed_memory()
    assert len(opened) == 1  # the second call finds the settings in place


def test_denormals_are_flushed_inside_cpu_training_and_kept_outside():
    from bindscale.train.speed import cpu_training

    tiny = torch.full((4,), 1e-39)  # subnormal in float32
    assert float((tiny * 0.5)[0]) > 0
    with cpu_training("cpu"):
        if not torch.set_flush_denormal(True):
            pytest.skip("this CPU cannot flush denormals")
        assert float((tiny * 0.5)[0]) == 0.0
    assert float((tiny * 0.5)[0]) > 0


def test_cpu_training_blocks_nest():
    from bindscale.train.speed import cpu_training

    tiny = torch.full((4,), 1e-39)
    with cpu_training():
        with cpu_training():
            pass
        flushed = float((tiny * 0.5)[0]) == 0.0  # still inside the outer block
    assert flushed == torch.set_flush_denormal(False)  # (False on CPUs without FTZ: nothing to check)
    assert float((tiny * 0.5)[0]) > 0


HUGE = """
import torch
from bindscale.train.speed import cpu_training
with cpu_training("cpu"):
    x = torch.ones(16 << 20)  # 64 MiB: PyTorch's first allocation of 2 MiB or more in this process
    with open("/proc/self/smaps_rollup") as f:
        print(next(int(line.split()[1]) for line in f if line.startswith("AnonHugePages")))
"""


def thp_mode() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return "never"


def huge_kib(env: dict) -> int:
    import os

    out = subprocess.run([sys.executable, "-c", HUGE], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"} | env)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(thp_mode() == "never", reason="transparent huge pages are off on this machine")
def test_cpu_training_puts_large_tensors_on_huge_pages_unless_opted_out():
    assert huge_kib({}) >= 32 << 10  # at least half of the 64 MiB tensor
    if thp_mode() == "madvise":  # ("always" gives huge pages without PyTorch asking)
        assert huge_kib({"THP_MEM_ALLOC_ENABLE": "0"}) < 32 << 10


def _wait_policy(env: dict, code: str) -> str:
    import os

    full = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | env
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full)
    return out.stdout.strip()


def test_importing_bindscale_leaves_the_openmp_wait_policy_alone():
    """bindscale used to set OMP_WAIT_POLICY=PASSIVE, which halved two-thread steps on a quiet machine;
    the busy machine is handled where threads are chosen (choose_threads, ThreadWatch)."""
    read = "import os; print(os.environ.get('OMP_WAIT_POLICY'))"
    assert _wait_policy({}, "import bindscale, bindscale.studies.scaling.trial; " + read) == "None"
    assert _wait_policy({"OMP_WAIT_POLICY": "PASSIVE"}, "import bindscale; " + read) == "PASSIVE"  # the user's
