"""First import of the process pool's fork server (:func:`bindscale.run.executors.pool_context`); nothing else imports it.

Ctrl-C at a terminal reaches the whole process group. The fork server ignores SIGINT only once its imports
are done, so a Ctrl-C in a run's first seconds printed a KeyboardInterrupt traceback from whichever import
(torch, scikit-learn) it was in. The driver answers Ctrl-C and stops the workers itself; the workers,
forked from the fork server, ignore it too.

A fork server started by the driver's main thread dies with the driver, and every worker it forks dies
with it from the moment it exists (Linux's PR_SET_PDEATHSIG, set in the child by an at-fork hook, before
any of the worker's own code runs; see :func:`bindscale.run.executors._ensure_fork_server`).
"""

import os
import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when ``parent`` exits; die now if it already has (Linux; else nothing)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent exited before the prctl: nothing would signal us
        os.kill(os.getpid(), signal.SIGKILL)


_driver = os.environ.pop("BINDSCALE_FORK_SERVER_DIE_WITH", None)  # not inherited by the workers
if _driver is not None:
    _die_with_parent(int(_driver))
    _server = os.getpid()
    os.register_at_fork(after_in_child=lambda: _die_with_parent(_server))
