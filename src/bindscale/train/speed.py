"""The speed settings of training, in one place: process settings that make CPU loops fast
(:func:`cpu_training`) and whether a device has bf16 matrix units (:func:`fast_bf16`); the thread
choice is :mod:`bindscale.train.threads`.

Three costs that have nothing to do with the model dominate long CPU runs unless
they are switched off (figures: width-512 MLP stacks, one thread, this
project's 2-core machine; ``benchmarks/training.py``):

- **Page faults.** A training step allocates and frees the same large
  activation and gradient tensors every step. Under glibc's defaults a freed
  block above the mmap threshold goes back to the kernel and the next step
  faults it in again (the threshold adapts only to blocks already freed, and
  the top of the heap is trimmed as soon as it is free). Measured: 73 000 to
  178 000 minor faults per 50 steps, ~20% of the step time; with freed memory
  kept in the heap, under 1 500. The price: a worker keeps the heap of its
  largest stack until it exits.
- **Denormal numbers.** AdamW's first moment of a weight whose gradient is
  zero (a dead ReLU unit) decays by β₁ = 0.9 per step and reaches the
  subnormal range (< 1.2e-38) after ~800 steps; arithmetic on subnormals is
  microcoded and ~10× slower. Measured: 45% of width-512 weight moments were
  subnormal at step 900, and a step slowed from 32 ms to 55 ms. Flushing
  them to zero (FTZ/DAZ) keeps the step at 32 ms. The numerical effect is a
  change below 1.2e-38 in moments that are already decaying to zero.
  ``torch.set_flush_denormal`` sets the calling thread only, so it covers all
  the work of single-threaded workers (the process pool's and Ray's default
  on a machine with as many workers as cores); with more intra-op threads,
  only the main thread's share.
- **TLB misses.** A width-512 stack's activations are megabytes each, spread
  over thousands of 4 KiB pages. PyTorch puts a tensor of 2 MiB or more on
  transparent huge pages when ``THP_MEM_ALLOC_ENABLE=1`` (it aligns the block
  and calls ``madvise(MADV_HUGEPAGE)``; Linux's default THP mode, ``madvise``,
  needs that call). Measured: MLP stacks of widths 128, 256 and 512 trained
  5-12% faster per step (two workers, 2000 steps, two rounds each way).
  PyTorch reads the variable once, at its first allocation of that size, so it
  is set before a worker's first training allocation; a process that already
  made one keeps 4 KiB pages (harmless). ``THP_MEM_ALLOC_ENABLE=0`` in the
  environment opts out.

One cost belongs to more than one intra-op thread, which only a caller of
a stacked trainer who allows more gets (every worker, the inline
executor and the Python API train with one thread): **waiting OpenMP threads.**
PyTorch's CPU build runs its intra-op threads on GNU OpenMP, whose idle threads
spin for a while, then sleep. On a busy machine the thread a parallel region waits
for is often descheduled: a width-64 MLP step with two threads fell from 225-280
steps/s (one thread) to 2.7 with spinning waiters, ~98 with sleeping ones
(``OMP_WAIT_POLICY=PASSIVE``), on the 2-core Xeon at load ~5.5. On a quiet machine
sleeping waiters pay a wake-up per region: on the 2-core EPYC the same MLP with two
threads made 201-238 steps/s with them against 395-529 with the runtime's default
(benchmarks/jax_peer.py's bindscale side with two threads forced, three alternated
rounds of fresh processes), and with one busy process beside it 339 against 91. bindscale used to set ``OMP_WAIT_POLICY=PASSIVE`` at import;
it now leaves the runtime's default, because two threads are only used where
:func:`~bindscale.train.result.choose_threads` times them clearly faster on the machine,
and :class:`~bindscale.train.threads.ThreadWatch` falls back to one thread within a
window where the machine turns busy afterwards (a 256 × 4 MLP with a busy process
started 3 s in: fell back at step 82, 31.7 steps/s against 27.6 on sleeping
waiters). A user's own ``OMP_WAIT_POLICY`` applies as set. Denormal flushing (above)
covers only the calling thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import torch

# mallopt parameters, from glibc's <malloc.h>.
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
#: Largest mmap threshold glibc accepts on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX): 32 MiB.
MMAP_THRESHOLD = 32 << 20
#: Free heap kept at the top before it is returned to the kernel.
TRIM_THRESHOLD = 1 << 30

_done = False
_depth = 0  # nesting of cpu_training blocks


def keep_freed_memory() -> bool:
    """Tune glibc malloc for repeated large allocations (idempotent; once per process).

    Returns:
        Whether the settings are in place (False off glibc, or if ``mallopt`` refused).
    """
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = all(libc.mallopt(k, v) == 1 for k, v in (
            (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, 64 << 20)))
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return False
    _done = ok
    return ok


def use_huge_pages() -> None:
    """Ask PyTorch to put CPU tensors of 2 MiB or more on transparent huge pages (see the module doc).

    Takes effect only in a process that has not yet allocated such a tensor; an
    explicit ``THP_MEM_ALLOC_ENABLE`` in the environment is left as it is.
    """
    if sys.platform.startswith("linux"):
        os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")


@contextmanager
def cpu_training(device: torch.device | str = "cpu") -> Iterator[None]:
    """Train on the CPU without page faults per step, denormal arithmetic or needless TLB misses (module doc).

    Keeps freed memory in the heap and large tensors on huge pages (for the
    rest of the process) and flushes denormals to zero while the outermost such
    block runs, then turns flushing off again. Blocks nest. Does nothing on
    other devices.
    """
    global _depth
    if torch.device(device).type != "cpu":
        yield
        return
    keep_freed_memory()
    use_huge_pages()
    if _depth == 0:
        torch.set_flush_denormal(True)  # returns False (and does nothing) where the CPU has no FTZ/DAZ
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            torch.set_flush_denormal(False)


def fast_bf16(device: torch.device) -> bool:
    """Whether ``device`` has bf16 matrix units: AMX-BF16 on an x86 CPU, or a bf16-capable CUDA GPU."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        with open("/proc/cpuinfo") as f:
            return "amx_bf16" in f.read()
    except OSError:
        return False
