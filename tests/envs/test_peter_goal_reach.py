"""Goals the episode's arm can reach (soft_envs.envs.peter_goal_reach)."""
import numpy as np
import pytest

from soft_envs.envs.peter_goal_reach import GOAL_REDRAWS, ReachCheck
from soft_envs.envs.peter_reach import PeterReachEnv


@pytest.fixture(scope="module")
def env():
    e = PeterReachEnv(n_modules=2, kinematic=True, realism="realistic")
    yield e
    e.close()


def test_peter_goal_reach_bounds_and_verdicts(env):
    check = ReachCheck(env)
    weak = {"leg_gain": np.full(6, 0.7), "supply_gain": 1.0, "leg_offset": np.zeros(6), "leak_rate": np.zeros(6)}
    low, high = check.bounds(weak)
    assert np.allclose(low, 0.0) and np.allclose(high, 0.7 * 2.0 - 0.05)
    assert not check.reachable(np.full(6, 2.0), weak)  # the straight arm at full stroke: too long for 70 % legs
    assert check.reachable(np.full(6, 1.0), weak)
    assert check.reachable(np.full(6, 1.9), {})  # the nominal arm within its margin
    assert not check.reachable(np.full(6, 2.0), {})  # the full stroke is kept in reserve (REACH_MARGIN)


def test_peter_goal_reach_redraws_from_the_same_stream(env):
    weak = {"leg_gain": np.full(6, 0.7), "supply_gain": 1.0}
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    task = env.draw_episode_task(a, weak)
    draws = [env.draw_task(b) for _ in range(GOAL_REDRAWS + 1)]
    assert any(np.array_equal(task, d) for d in draws)
    assert ReachCheck(env).reachable(task[:6], weak)


def test_peter_goal_reach_ideal_draw_is_draw_task():
    e = PeterReachEnv(n_modules=2, kinematic=True, realism="ideal")
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    assert np.array_equal(e.draw_episode_task(a, {}), e.draw_task(b))
    assert a.random() == b.random()  # nothing more drawn
    e.close()
