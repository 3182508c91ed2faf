"""Console hygiene: PyBullet's C-level banners kept out of the user's output; progress bars.

Progress bars (:func:`progress`, the one place the package makes a tqdm bar) go to ``stderr``
and show only when ``stderr`` is a terminal, so piped or logged output stays clean.

PyBullet's C++ code prints with ``printf`` straight to file descriptor 1: its build banner on
import, ``argv[0]=`` on connect, ``PyBullet: Constraint Solver: MLCP + Dantzig`` and
``switched solver`` when the solver changes. Python's ``sys.stdout`` never sees these, so
``contextlib.redirect_stdout`` cannot catch them; :func:`quiet_native_output` redirects the
descriptors themselves around such a call, restores it afterwards and re-prints on ``stderr``
every captured line that is not one of the known banners — warnings and errors (``b3Warning``,
``URDF file ... not found``) stay visible.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def progress(iterable: Any = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm progress bar over ``iterable`` (or a manual one with ``total=``) on ``stderr``.

    Shown only when ``enabled`` and ``stderr`` is a terminal (tqdm's ``disable=None``): a pipe, a
    log file or a test run gets no bar. ``kwargs`` go to ``tqdm`` (``desc``, ``total``, ``leave``…).
    """
    from tqdm import tqdm

    kwargs.setdefault("file", sys.stderr)
    return tqdm(iterable, disable=None if enabled else True, **kwargs)


#: Lines PyBullet prints that carry no information for a user.
NOISE = re.compile(r"^(pybullet build time:.*|argv\[\d+\]=.*|PyBullet: Constraint Solver:.*|switched solver)\s*$")

_LIBC: ctypes.CDLL | None
_LOCK = threading.RLock()  # the descriptor is process-wide: one redirection at a time
try:
    _LIBC = ctypes.CDLL(None)
    _LIBC.fflush.argtypes = [ctypes.c_void_p]
except (OSError, AttributeError):  # pragma: no cover - platforms without a C library handle
    _LIBC = None


def _flush_c_stdio() -> None:
    if _LIBC is not None:
        _LIBC.fflush(None)


@contextmanager
def quiet_native_output() -> Iterator[None]:
    """Run the body with descriptors 1 and 2 captured; drop PyBullet's banners, re-emit the rest on stderr.

    (The build banner goes to stderr, the solver lines to stdout.) Thread-safe (a process-wide
    lock) and re-entrant; if the descriptors cannot be redirected (e.g. they are closed) the
    body runs unchanged.
    """
    with _LOCK:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            _flush_c_stdio()
            saved = (os.dup(1), os.dup(2))
        except (OSError, ValueError):
            yield
            return
        with tempfile.TemporaryFile() as capture:
            os.dup2(capture.fileno(), 1)
            os.dup2(capture.fileno(), 2)
            try:
                yield
            finally:
                _flush_c_stdio()
                for fd, copy in zip((1, 2), saved):
                    os.dup2(copy, fd)
                    os.close(copy)
                capture.seek(0)
                text = capture.read().decode(errors="replace")
                kept = [line for line in text.splitlines() if line.strip() and not NOISE.match(line)]
                if kept:
                    sys.stderr.write("\n".join(kept) + "\n")
                    sys.stderr.flush()
