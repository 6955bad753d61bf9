"""The speed settings of training, in one place. Nothing here changes what a step computes beyond
what its docs say (denormals flushed; a precision the study asked for); the loops read as optimisation
only and call these by name.

A training loop enters one block, :func:`training_settings`, and asks the :class:`TrainingSettings` it
yields for everything else::

    with speed.training_settings(device, thread_choice=..., precision=..., compile=...) as s:
        opt = AdamW(..., fused=s.fused)
        for step in ...:
            with s.autocast():
                loss = ...
            ...
            s.step_done(step)                 # the thread watch (re-times a multi-thread choice)
            if step % s.sync_every == 0: ...  # host reads of the loss
            with s.untimed(): evaluate()

What is decided where:

- **CPU process settings** (freed memory kept, huge pages, denormals flushed): :func:`cpu_training`,
  entered by :func:`training_settings` and by the job runner around every job
  (:func:`bindscale.run.jobs.run_group`); blocks nest. A helper thread of the loop (a background data
  sampler) takes the block's per-thread settings with :func:`helper_thread_settings`.
- **Intra-op threads.** A sweep's worker, the inline executor, a Ray task and the Python API train with
  :data:`THREADS_PER_WORKER` (:func:`set_worker_threads`, :func:`worker_threads`; the run wing calls
  them, the fork server's workers at their start). A loop that passes ``thread_choice`` to
  :func:`training_settings` trains on the caller's threads only where they are measured to pay
  (:func:`measured_threads`, the rule :func:`~bindscale.train.threads.choose_threads`, timed with
  :func:`step_timer`), and a :class:`~bindscale.train.threads.ThreadWatch` falls back to one thread
  where the machine turns busy; the caller's setting is restored after the block.
- **Precision**: :func:`training_precision` (``auto``: bf16 where the study says it pays and the device
  has bf16 matrix units, :func:`fast_bf16`); the block sets CUDA's TF32 matmul flag for it and hands out
  the autocast context (:meth:`TrainingSettings.autocast`) and ``torch.compile`` (:meth:`TrainingSettings.compiled`).
- **Kernels and host syncs**: the fused AdamW kernel on CPU and CUDA (:func:`fused_optimizer`), the
  loss read on the host every step on the CPU and every :data:`SYNC_EVERY` steps on an accelerator
  (:func:`host_sync_every`).

The thread rule and the watch themselves are :mod:`bindscale.train.threads` (re-exported here).

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
:func:`~bindscale.train.threads.choose_threads` times them clearly faster on the machine,
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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

import torch

from bindscale.train.threads import ThreadWatch, choose_threads

__all__ = [
    "training_settings", "TrainingSettings", "THREADS_PER_WORKER", "set_worker_threads", "worker_threads",
    "measured_threads", "step_timer", "helper_thread_settings", "training_precision", "fast_bf16",
    "fused_optimizer", "host_sync_every", "SYNC_EVERY", "cpu_training", "keep_freed_memory", "use_huge_pages",
    "ThreadWatch", "choose_threads",
]

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


def training_precision(precision: str, device: torch.device | str, bf16_pays: bool) -> str:
    """The precision a trial trains in: ``auto`` → ``bf16`` where ``bf16_pays`` (the study's measured rule,
    e.g. the scaling study's MLPs of width ≥ 64) and the device has bf16 matrix units (:func:`fast_bf16`),
    else ``fp32``; ``fp32``, ``bf16`` and ``tf32`` as asked.

    Raises:
        ValueError: ``tf32`` asked for off CUDA.
    """
    device = torch.device(device)
    if precision == "tf32" and device.type != "cuda":
        raise ValueError("precision tf32 needs a CUDA device; use fp32 or bf16 on CPU")
    if precision == "auto":
        return "bf16" if bf16_pays and fast_bf16(device) else "fp32"
    return precision


#: Steps between host reads of the loss on an accelerator (on the CPU every step is read: it is free).
SYNC_EVERY = 25


def host_sync_every(device: torch.device | str) -> int:
    """Steps between a loop's host reads of its loss: every step on the CPU, :data:`SYNC_EVERY` elsewhere
    (a read waits for the device)."""
    return 1 if torch.device(device).type == "cpu" else SYNC_EVERY


def fused_optimizer(device: torch.device | str) -> bool:
    """Whether AdamW runs PyTorch's fused kernel on ``device``: on CPU and CUDA (elsewhere the single-tensor
    loop). The stacked AdamW's per-trial bits are the fused kernel's (:mod:`bindscale.train.stacked_adamw`)."""
    return torch.device(device).type in ("cpu", "cuda")


# ----------------------------------------------------------------------------------------------- threads

#: Torch threads of a worker (a pool process, a Ray task, the inline executor, the Python API). One, always:
#: a trial's metrics are then the same bits in any stack (the stacked AdamW's contract), whereas with more
#: threads oneDNN and MKL split some matrix products across threads differently for different
#: stack sizes (measured: quick study, width-256 MLPs in bf16, stacks of 6 vs 3 at two threads,
#: held-out R² apart by up to 2.6e-3), and a resumed run, or one with another --workers, would
#: not reproduce. Parallelism comes from workers, one per core.
THREADS_PER_WORKER = 1


def set_worker_threads(process_start: bool = False) -> None:
    """Give this process a sweep worker's torch threads: :data:`THREADS_PER_WORKER` intra-op threads and, at
    a worker process's start (``process_start``: before any parallel work, the only time torch allows it),
    one inter-op thread."""
    torch.set_num_threads(THREADS_PER_WORKER)
    if process_start:
        torch.set_num_interop_threads(1)


@contextmanager
def worker_threads() -> Iterator[None]:
    """A sweep worker's intra-op threads (:func:`set_worker_threads`) for the block: the same bits as a
    sweep; the caller's setting is restored after."""
    before = torch.get_num_threads()
    set_worker_threads()
    try:
        yield
    finally:
        torch.set_num_threads(before)


_thread_choices: dict[tuple, int] = {}


def measured_threads(key: tuple, threads: int, timer: Callable[[], Callable[[int, int], float]]) -> int:
    """Intra-op threads to train a step of shape ``key`` with where the caller allows ``threads``: ``threads``
    where :func:`~bindscale.train.threads.choose_threads` times them clearly faster than one, else 1.

    Measured once per ``key`` and ``threads`` in this process: ``key`` is what the timed step depends on
    (model and data shapes, batch, stack size; not the number of steps). ``timer()`` builds the
    ``timer(n, k)`` that is timed (e.g. :func:`step_timer`); it is called only where a measurement is made.
    A trial's numbers do not depend on the choice beyond float rounding (more threads may sum some
    products in another order).
    """
    if threads <= 1:
        return 1
    full = (*key, threads)
    if full not in _thread_choices:
        _thread_choices[full] = choose_threads(timer(), threads)
    return _thread_choices[full]


def step_timer(step: Callable[[], None]) -> Callable[[int, int], float]:
    """``timer(n, k)``: seconds of ``k`` calls of ``step`` (one training step) at ``n`` torch threads, here and
    now, in a :func:`cpu_training` block, after one untimed call at ``n`` threads (the first step after a
    change of thread count pays the thread team's start). The process's thread setting is restored after
    each call."""

    def timer(threads: int, k: int) -> float:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            with cpu_training("cpu"):
                step()
                t0 = time.perf_counter()
                for _ in range(k):
                    step()
                return time.perf_counter() - t0
        finally:
            torch.set_num_threads(before)

    return timer


def helper_thread_settings() -> None:
    """The per-thread settings of a training block, in a helper thread of its loop (e.g. a background data
    sampler's ``initializer``): one intra-op thread (OpenMP's and MKL's counts are per thread: the same sums
    as the loop's own thread makes) and denormals flushed (:func:`cpu_training` sets the calling thread only)."""
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)


# ------------------------------------------------------------------------------------- the one entry point


class TrainingSettings:
    """The speed settings of one training block (:func:`training_settings`) and the calls its loop makes.

    Attributes:
        device: where the block trains.
        threads: the intra-op threads the step starts on (CPU; None elsewhere): the caller's, or the
            measured choice.
        precision: ``fp32``, ``bf16`` (autocast) or ``tf32`` (CUDA); None: the process's matmul settings as
            they are.
        fused: whether AdamW uses the fused kernel (:func:`fused_optimizer`).
        sync_every: steps between host reads of the loss (:func:`host_sync_every`).
        watch: the :class:`~bindscale.train.threads.ThreadWatch` of a multi-thread choice, or None.
    """

    def __init__(self, device: torch.device, threads: int | None, caller_threads: int, precision: str | None,
                 compile: bool, watch: ThreadWatch | None):
        self.device, self.threads, self.precision, self.watch = device, threads, precision, watch
        self.fused = fused_optimizer(device)
        self.sync_every = host_sync_every(device)
        self._compile = compile
        # The step runs on one thread where the caller allowed more: a core is free (e.g. to sample data).
        self._spare = device.type == "cpu" and threads == 1 < caller_threads

    def autocast(self):
        """The forward pass's autocast context: bf16 where :attr:`precision` is ``bf16``, else none."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return nullcontext()

    def compiled(self, model: torch.nn.Module) -> torch.nn.Module:
        """``model`` under ``torch.compile`` where the block was asked to compile, else ``model`` itself."""
        return torch.compile(model) if self._compile else model

    def step_done(self, step: int) -> None:
        """Call after each optimizer step (``step`` counts from 1): the thread watch times the real steps."""
        if self.watch is not None:
            self.watch.step_done(step)

    @contextmanager
    def untimed(self) -> Iterator[None]:
        """Work between steps that is not a step (an evaluation): the thread watch starts a new window after it."""
        yield
        if self.watch is not None:
            self.watch.restart()

    @property
    def fell_back_at(self) -> int | None:
        """The step from which the block trained on one thread instead of :attr:`threads` (the watch fell
        back: the machine turned busy), or None."""
        return self.watch.fell_back_at if self.watch is not None else None

    def spare_core(self) -> bool:
        """Whether the step runs on one thread where the caller allowed more (chosen so, or fallen back to),
        leaving a core free for a helper thread (:func:`helper_thread_settings`). May turn True mid-training."""
        return self._spare or self.fell_back_at is not None


@contextmanager
def training_settings(device: torch.device | str = "cpu", *, thread_choice: Callable[[int], int] | None = None,
                      precision: str | None = None, compile: bool = False) -> Iterator[TrainingSettings]:
    """The speed settings of a training loop, for the block: the loop's one entry point to this module.

    On the CPU: :func:`cpu_training` (freed memory kept, huge pages, denormals flushed; blocks nest). Intra-op
    threads: the caller's, unless ``thread_choice`` is given and the caller allows more than one; then
    ``thread_choice(caller's threads)`` (e.g. :func:`measured_threads` for the loop's step) and, where that is
    more than one, a :class:`~bindscale.train.threads.ThreadWatch` that falls back to one thread where the
    machine turns busy (the loop calls :meth:`TrainingSettings.step_done` and wraps evaluations in
    :meth:`TrainingSettings.untimed`). The caller's threads are restored after the block. On CUDA, a
    ``precision`` sets the TF32 matmul flag (on for ``tf32`` only) for the block. ``precision`` is a resolved
    one (:func:`training_precision`); ``compile``: :meth:`TrainingSettings.compiled` compiles.

    Yields:
        The :class:`TrainingSettings`: what was decided, and the calls the loop makes.
    """
    device = torch.device(device)
    caller = torch.get_num_threads()
    cuda_tf32 = torch.backends.cuda.matmul.allow_tf32 if device.type == "cuda" else None
    with cpu_training(device):
        try:
            threads, watch = caller, None
            if device.type == "cpu" and caller > 1 and thread_choice is not None:
                threads = thread_choice(caller)
                if threads != caller:
                    torch.set_num_threads(threads)
                if threads > 1:
                    watch = ThreadWatch(threads, torch.set_num_threads)
            if device.type == "cuda" and precision is not None:
                torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            yield TrainingSettings(device, threads if device.type == "cpu" else None, caller, precision, compile,
                                   watch)
        finally:
            if torch.get_num_threads() != caller:  # (also where the watch fell back to one thread)
                torch.set_num_threads(caller)
            if cuda_tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = cuda_tf32
