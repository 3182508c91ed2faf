"""Micro-benchmarks of the hot paths (pytest-benchmark).

They run once as ordinary tests in the suite (``--benchmark-disable`` in pyproject); time them
with ``pytest tests/test_benchmarks.py --benchmark-enable``. No timing is asserted here: the
figures go to BENCHMARKS.md through ``soft-envs bench``.
"""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.agents.ik import trr, trr_batch
from soft_envs.robots import Peter

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("kinematics", ["tilted", "pcc"])
def test_forward_and_jacobian_single(benchmark, kinematics):
    arm = Peter(3, kinematics=kinematics)
    t = arm.sample(RNG)
    J = benchmark(arm.jacobian, t)
    assert J.shape == (3, 9)


@pytest.mark.parametrize("kinematics", ["tilted", "pcc"])
def test_forward_batch_of_10000(benchmark, kinematics):
    arm = Peter(3, kinematics=kinematics)
    t = arm.sample(RNG, 10_000)
    tips = benchmark(arm.forward, t)
    assert tips.shape == (10_000, 3)


def test_trr_single_target(benchmark):
    arm = Peter(2)
    target = arm.forward(arm.sample(RNG))
    res = benchmark(trr, arm, target)
    assert res.success


def test_trr_batch_of_1000(benchmark):
    arm = Peter(2)
    targets = arm.forward(arm.sample(RNG, 1000))
    res = benchmark(trr_batch, arm, targets)
    assert res.success.all()
