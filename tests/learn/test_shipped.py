"""The shipped learned policies meet their model cards on fresh held-out episodes (a few, in CI)."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.agents.learned import MLPPolicy, shipped_names
from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.shipped import CARD_KEYS, FRESH_SEED, Verdict, error_tolerance, ship, tolerance, verify
from soft_envs.learn.train import EVAL_SEED, EvalResult

#: Fresh episodes a shipped policy is verified on in CI (10, the walk's 10 s episodes 4).
EPISODES = {"quadruped-walk": 4}


@pytest.mark.parametrize("name", shipped_names())
def test_a_shipped_policy_meets_its_card_on_fresh_episodes(name):
    verdict = verify(name, episodes=EPISODES.get(name, 10))
    assert verdict.holds, verdict.line()


def test_fresh_seeds_are_neither_the_cards_nor_trainings():
    assert FRESH_SEED > EVAL_SEED + 1000


def test_tolerance_is_three_binomial_sigmas_and_at_least_five_points():
    assert tolerance(0.5, 100) == pytest.approx(0.15)
    assert tolerance(1.0, 10_000) == 0.05
    assert tolerance(0.9, 10) > tolerance(0.9, 100)


def _rms(values_mm) -> EvalResult:
    values = 1e-3 * np.asarray(values_mm, float)
    return EvalResult(values, rms=values, metric="tracking_error")


def test_a_tracking_policy_is_held_to_its_rms_and_a_residual_one_to_the_law_it_corrects():
    fresh = _rms([3.0, 3.4, 3.2, 3.3])
    card = 3.2e-3
    allowed = error_tolerance(card, fresh.rms)
    assert allowed >= 0.1 * card  # at least 10 % of the card
    assert Verdict("p", "rms_m", card, fresh, allowed, True, law=_rms([7.0, 8.0, 9.0, 7.5])).holds
    worse = _rms([6.0, 6.2, 5.8, 6.1])  # far beyond the card's RMS, though still below the law
    assert not Verdict("p", "rms_m", card, worse, error_tolerance(card, worse.rms), True, law=_rms([8.0] * 4)).holds
    no_better = Verdict("p", "rms_m", 3.5e-3, fresh, allowed, True, law=_rms([3.1, 3.2, 3.2, 3.2]))
    assert not no_better.holds and "FAILS" in no_better.line() and "the law it corrects" in no_better.line()


def test_a_walking_policy_is_held_to_the_distance_it_walks():
    card, no_falls = 2.2, tolerance(0.0, 4)
    fresh = EvalResult(np.array([2.1, 2.3, 2.2, 2.25]), terminated=np.zeros(4, bool), metric="x")
    verdict = Verdict("w", "mean_m", card, fresh, error_tolerance(card, fresh.distances), max_falls=no_falls)
    assert verdict.holds and "2.213 m" in verdict.line()
    shorter = EvalResult(np.array([1.5, 1.6, 1.55, 1.5]), terminated=np.zeros(4, bool), metric="x")
    assert not Verdict("w", "mean_m", card, shorter, error_tolerance(card, shorter.distances), max_falls=no_falls).holds
    fell = EvalResult(np.array([0.4, 2.2, 0.6, 2.1]), terminated=np.array([True, False, True, False]), metric="x")
    assert not Verdict("w", "mean_m", card, fell, error_tolerance(card, fell.distances), max_falls=no_falls).holds


def test_an_sb3_ppo_policy_becomes_the_same_numpy_policy(tmp_path):
    pytest.importorskip("stable_baselines3")
    import gymnasium as gym
    from stable_baselines3 import PPO

    from soft_envs.learn.layers import StandardizedInput
    from soft_envs.learn.shipped import from_sb3

    env = gym.make("Pendulum-v1")
    rng = np.random.default_rng(0)
    mean, std = rng.normal(size=3), rng.uniform(0.5, 2.0, 3)
    model = PPO("MlpPolicy", env, n_steps=64, seed=0, device="cpu", policy_kwargs={
        "net_arch": [16, 16], "features_extractor_class": StandardizedInput,
        "features_extractor_kwargs": {"mean": mean, "std": std}})
    model.save(tmp_path / "ppo.zip")
    policy = from_sb3(tmp_path / "ppo.zip", {"env_id": "Pendulum-v1"})
    for obs in rng.normal(size=(20, 3)).astype(np.float32):
        expected = np.clip(model.predict(obs, deterministic=True)[0], -1.0, 1.0)
        np.testing.assert_allclose(policy.act(obs), expected, atol=1e-5)
    assert policy.card == {"env_id": "Pendulum-v1"}


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
episode = run_episode(Job(TASKS[sys.argv[1]], "learned", sys.argv[2], 7))
print(episode.metric, episode.success)
assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
"""

#: The range one episode of each shipped policy's task measure falls in [m] (its final step): an
#: error below its bound; the walk's distance walked above it.
WITHIN = {"peter-2": (0.0, 5e-3), "peter-2-obstacles": (0.0, 5e-3), "pcc-spiral": (0.0, 20e-3),
          "quadruped-walk": (0.5, float("inf"))}


@pytest.mark.parametrize("name", shipped_names())
def test_the_learned_controller_runs_without_pytorch(name):
    import subprocess
    import sys

    from soft_envs.bench.plausibility import shipped_preset

    done = subprocess.run([sys.executable, "-c", NO_TORCH, name, shipped_preset(name)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    metric, success = done.stdout.split()
    low, high = WITHIN[name]
    assert low <= float(metric) < high and success in ("True", "False")
