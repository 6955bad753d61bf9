"""First import of the process pool's fork server (:func:`bindscale.executors.pool_context`); nothing else imports it.

Ctrl-C at a terminal reaches the whole process group. The fork server ignores SIGINT only once its imports
are done, so a Ctrl-C in a run's first seconds printed a KeyboardInterrupt traceback from whichever import
(torch, scikit-learn) it was in. The driver answers Ctrl-C and stops the workers itself; the workers,
forked from the fork server, ignore it too.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
