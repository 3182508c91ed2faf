"""The benchmark harness (``soft_envs.bench``) on small sizes, and micro-benchmarks of the hot paths.

The micro-benchmarks (pytest-benchmark) run once as ordinary tests in the suite
(``--benchmark-disable`` in pyproject); time them with
``pytest tests/bench/test_benchmarks.py --benchmark-enable``. No timing is asserted here: the
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


# ------------------------------------------------------------------------------ the harness
def test_chain_ik_comparison_table_shape():
    from soft_envs.bench.chain_ik import comparison

    table, success = comparison(n_targets=3, n_transpose=1, seed=0)
    lines = table.splitlines()
    assert len(lines) == 2 + 2 * 6  # header, rule, 6 rows per robot
    assert all(line.count("|") == 13 for line in lines)
    assert success[("KUKA iiwa", "dls")] == 1.0 and success[("Franka Panda", "dls")] == 1.0
    assert set(success) >= {("KUKA iiwa", "pybullet, one call"), ("Franka Panda", "pybullet looped")}


def test_quadruped_table2_error_probability_falls_with_the_initial_distance():
    from soft_envs.bench.quadruped import table2_probabilities

    probabilities = table2_probabilities(n_targets=40, seed=1)
    near, far = probabilities[0.6], probabilities[5.0]
    assert near[0] == 1.0 and near[4] == 1.0  # error < 1e-10 and < 1e-14 cm at 0.6 cm: always
    assert far[0] < near[0] and far[4] < 0.5  # 5 cm without splitting: rarely
    for row in probabilities.values():  # stricter thresholds are never more probable
        assert all(a >= b for a, b in zip(row, row[1:]))


def test_the_shipped_ablation_networks_are_found():
    from soft_envs.bench.neural import ABLATIONS, ablation_network

    assert all(ablation_network(2, name) is not None for name in ABLATIONS)
