"""The shipped learned policies meet their model cards on fresh held-out episodes (a few, in CI)."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.agents.learned import MLPPolicy, shipped_names
from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.shipped import CARD_KEYS, FRESH_SEED, ship, tolerance, verify
from soft_envs.learn.train import EVAL_SEED


@pytest.mark.parametrize("name", shipped_names())
def test_a_shipped_policy_meets_its_card_on_fresh_episodes(name):
    verdict = verify(name, episodes=10)
    assert verdict.holds, verdict.line()


def test_fresh_seeds_are_neither_the_cards_nor_trainings():
    assert FRESH_SEED > EVAL_SEED + 1000


def test_tolerance_is_three_binomial_sigmas_and_at_least_five_points():
    assert tolerance(0.5, 100) == pytest.approx(0.15)
    assert tolerance(1.0, 10_000) == 0.05
    assert tolerance(0.9, 10) > tolerance(0.9, 100)


def test_ship_needs_a_card_and_copies_the_policy(tmp_path):
    rng = np.random.default_rng(0)
    bare = MLPPolicy([(rng.normal(size=(18, 6)), np.zeros(6))], np.zeros(18), np.ones(18))
    path = bare.save(tmp_path / "bare.npz")
    with pytest.raises(InvalidParameterError, match="card lacks"):
        ship(path, "peter-2", tmp_path / "pkg")
    card = {key: {} for key in CARD_KEYS} | {"env_id": "soft_envs/PeterReach-v0"}
    MLPPolicy(bare.weights, bare.obs_mean, bare.obs_std, card=card).save(tmp_path / "carded.npz")
    out = ship(tmp_path / "carded.npz", "peter-2", tmp_path / "pkg")
    assert out == tmp_path / "pkg" / "peter-2.npz" and MLPPolicy.load(out).card["task"] == "peter-2"


NO_TORCH = """
import sys
for name in ("torch", "rsl_rl", "tensordict", "stable_baselines3", "sb3_contrib"):
    sys.modules[name] = None  # any import of them fails, as in a fresh install without the learn extra
from soft_envs.evaluate import TASKS, Job, run_episode
episode = run_episode(Job(TASKS["peter-2"], "learned", "ideal", 7))
print(episode.metric, episode.success)
assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
"""


@pytest.mark.skipif("peter-2" not in shipped_names(), reason="no policy shipped for peter-2")
def test_the_learned_controller_runs_without_pytorch():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    metric, success = done.stdout.split()
    assert float(metric) < 5e-3 and success in ("True", "False")
