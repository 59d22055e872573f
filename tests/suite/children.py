"""Child processes that die with the test process that started them.

A broker, redis-server or daphne started by a test is stopped by its fixture's teardown. That
teardown does not run when the test process itself dies (a killed or crashed xdist worker,
pytest-timeout's thread method, Ctrl-C twice), and the children would then run on for ever.
``die_with_parent()`` (a ``preexec_fn``) asks Linux to SIGKILL the child when its parent goes
(``prctl(PR_SET_PDEATHSIG)``). The kernel sends that signal when the *thread* that forked the
child exits, so start such children from a thread that lives as long as they should (the main
thread, as fixtures do).
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> Callable[[], None]:
    """``preexec_fn=die_with_parent()``: the child is SIGKILLed when this process ends."""
    parent = os.getpid()

    def preexec() -> None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died between fork and prctl: then no signal would come.
        if os.getppid() != parent:
            os._exit(1)

    return preexec
