"""Fixtures of the simulation tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest


def _run_on_cuda_simulator(script: str) -> dict:
    """Run ``script`` in a fresh process on numba's CUDA simulator; its last stdout line, as JSON."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def on_cuda_simulator():
    """``script -> dict``: a script run on numba's CUDA simulator in its own process (the simulator is
    chosen when numba is imported)."""
    return _run_on_cuda_simulator
