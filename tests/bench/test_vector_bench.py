"""``soft-envs bench vector`` on tiny sizes (no timing is asserted: the figures go to BENCHMARKS.md)."""

from __future__ import annotations

import pytest

from soft_envs import bench
from soft_envs.bench import vector


def test_vector_bench_is_registered_and_its_parts_run():
    assert "vector" in bench.available() and bench.load("vector") is vector
    case = next(c for c in vector.CASES if c.kwargs.get("kinematic"))
    assert vector.single_rate(case, 0.01, seed=0) > 0
    assert vector.vector_rate(case, 4, 0.01, seed=0) > 0
    added, growth = vector.memory(case, 8, 1001, seed=0)
    assert added >= 0 and isinstance(growth, int)
    assert vector.memory(case, 2, 10, seed=0)[1] is None
    with vector.one_core() as pinning:
        assert "core" in pinning or "not pinned" in pinning


def test_the_threads_table_pairs_the_vector_env_with_its_core():
    case = next(c for c in vector.CASES if c.env_id == vector.PCC)
    rate, core = vector.paired_rates(case, 4, seed=0, num_threads=1, rounds=1, steps=2)
    assert rate > 0 and core > 0


@pytest.mark.parametrize("case", vector.CASES, ids=lambda c: c.label)
def test_every_case_is_a_native_vector_env(case):
    import gymnasium as gym

    from soft_envs.envs.vector_base import SoftVectorEnv

    envs = gym.make_vec(case.env_id, num_envs=2, **case.kwargs)
    assert isinstance(envs.unwrapped, SoftVectorEnv)
    envs.close()
