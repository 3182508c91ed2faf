"""``realism=`` on the legged robots: QuadrupedWalk-v0, QuadrupedPose-v0 and HexapodPose-v0.

Ideal is the default and changes nothing; realistic draws reproducibly from the reset seed and
changes the dynamics but not the task; each perturbation does what its table says; bad
settings raise ``ValueError``; the envs pass ``check_env`` and their controllers still run.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import soft_envs  # noqa: F401
from soft_envs.agents.body_pose import BodyPoseController
from soft_envs.agents.gait import TrotController
from soft_envs.agents.hexapod_control import HexapodJacobianAgent
from soft_envs.envs.hexapod_pose import HEXAPOD_REALISM
from soft_envs.envs.quadruped_base import QUADRUPED_REALISM

WALK, POSE, HEXAPOD = "soft_envs/QuadrupedWalk-v0", "soft_envs/QuadrupedPose-v0", "soft_envs/HexapodPose-v0"
TABLES = {WALK: QUADRUPED_REALISM, POSE: QUADRUPED_REALISM, HEXAPOD: HEXAPOD_REALISM}
STEPS = {WALK: 15, POSE: 15, HEXAPOD: 3}


def _rollout(env_id: str, seed: int = 0, n: int | None = None, **kwargs):
    """Observations, rewards and the reset info of ``n`` steps of fixed pseudo-random actions."""
    env = gym.make(env_id, **kwargs)
    actions = np.random.default_rng(99).uniform(-0.3, 0.3, (n or STEPS[env_id], env.action_space.shape[0]))
    obs, info = env.reset(seed=seed)
    observations, rewards = [obs], []
    for action in actions.astype(np.float32):
        obs, reward, *_ = env.step(action)
        observations.append(obs)
        rewards.append(reward)
    env.close()
    return np.array(observations), np.array(rewards), info


@pytest.mark.parametrize("env_id", [WALK, POSE, HEXAPOD])
def test_ideal_is_the_default_bit_for_bit_and_reports_ideal_values(env_id):
    obs, rewards, info = _rollout(env_id)
    for realism in ("ideal", {"preset": "ideal"}, {"payload": 0.0}):
        o, r, i = _rollout(env_id, realism=realism)
        assert np.array_equal(o, obs) and np.array_equal(r, rewards)
    table = TABLES[env_id]
    assert list(info["realism"]) == [p.name for p in table]
    for p in table:
        assert np.all(np.asarray(info["realism"][p.name]) == p.ideal)


@pytest.mark.parametrize("env_id", [WALK, POSE, HEXAPOD])
def test_realistic_is_reproducible_per_seed_and_changes_the_run(env_id):
    obs, rewards, info = _rollout(env_id, seed=1, realism="realistic")
    again, rewards_again, info_again = _rollout(env_id, seed=1, realism="realistic")
    assert np.array_equal(obs, again) and np.array_equal(rewards, rewards_again)
    other, _, info_other = _rollout(env_id, seed=2, realism="realistic")
    ideal, _, _ = _rollout(env_id, seed=1)
    assert not np.allclose(obs, ideal, atol=1e-6) and not np.allclose(obs, other[: len(obs)], atol=1e-6)
    sizes = {"motor_strength": 12, "joint_offset": 12, "servo_band": 12, "servo_time_constant": 12, "guide_gain": 6,
             "guide_offset": 6}
    for p in TABLES[env_id]:
        value = np.asarray(info["realism"][p.name])
        assert value.shape == ((sizes[p.name],) if p.per_element else ())
        assert np.all((value >= p.realistic[0]) & (value <= p.realistic[1]))
        assert np.array_equal(value, info_again["realism"][p.name])
    assert any(not np.array_equal(info["realism"][n], info_other["realism"][n]) for n in info["realism"])


def test_the_task_is_the_same_under_every_preset():
    for env_id, goal in ((POSE, slice(39, 42)), (HEXAPOD, slice(7, 14))):
        for seed in (0, 5):
            envs = [gym.make(env_id, realism=r) for r in ("ideal", "realistic")]
            goals = [env.reset(seed=seed)[0][goal] for env in envs]
            assert np.array_equal(goals[0], goals[1])
            for env in envs:
                env.close()
    # the walk's own draw (reset_noise_scale) is untouched: the servo targets of the reset
    envs = [gym.make(WALK, realism=r) for r in ("ideal", "realistic")]
    for env in envs:
        env.reset(seed=3)
    assert np.array_equal(envs[0].unwrapped.previous_action, envs[1].unwrapped.previous_action)
    for env in envs:
        env.close()


def test_quadruped_plant_perturbations_reach_the_simulation():
    env = gym.make(POSE, realism={"friction_scale": 0.3, "payload": 0.1, "trunk_mass_error": 0.1},
                   ground_friction=0.8)
    env.reset(seed=0)
    u = env.unwrapped
    assert u.client.getDynamicsInfo(u.ground, -1)[1] == pytest.approx(0.24)
    assert u.client.getDynamicsInfo(u.body.id, -1)[0] == pytest.approx(0.24 * 1.1 + 0.1)
    env.close()
    # weak servos cannot hold the robot up; nominal ones can
    heights = []
    for strength in (1.0, 0.05):
        env = gym.make(WALK, realism={"motor_strength": strength})
        obs, _ = env.reset(seed=0)
        hold = env.unwrapped.model_to_action(env.unwrapped.model.standing_configuration())
        for _ in range(50):
            obs, *_ = env.step(hold)
        heights.append(obs[38])
        env.close()
    assert heights[0] > 0.08 and heights[1] < heights[0] - 0.01


def test_quadruped_joint_offsets_are_hidden_from_the_observation():
    env = gym.make(WALK, realism={"joint_offset": 0.05}, reset_noise_scale=0.0)
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    standing = u.model.standing_configuration().ravel()
    np.testing.assert_allclose(obs[10:22], standing, atol=1e-6)  # the servos read their own targets
    np.testing.assert_allclose(u.body.joint_state()[0], standing + 0.05, atol=1e-9)  # the joints are off
    env.close()


def test_quadruped_noise_latency_and_command_delay():
    env = gym.make(WALK, realism={"joint_angle_noise": 0.01, "orientation_noise": 0.02})
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    errors, tilts = [], []
    for _ in range(40):
        obs, *_ = env.step(np.zeros(12, dtype=np.float32))
        errors.append(obs[10:22] - u.body.joint_state()[0])
        q = obs[0:4].astype(float)
        assert abs(np.linalg.norm(q) - 1.0) < 1e-6
        true = u.body.base_pose()[1]
        tilts.append(2.0 * np.arccos(min(1.0, abs(float(q @ true)))))
    assert np.std(errors) == pytest.approx(0.01, rel=0.15)
    assert 0.01 < np.mean(tilts) < 0.06  # three axes of 0.02 rad: a mean angle of ~0.032 rad
    env.close()

    # latency: the observation is the true state of two steps before
    env = gym.make(WALK, realism={"observation_latency": 0.02})
    env.reset(seed=0)
    u, history = env.unwrapped, []
    for k in range(6):
        obs, *_ = env.step(np.full(12, 0.1 * k, dtype=np.float32))
        history.append(u.body.joint_state()[0])
        if k >= 2:
            np.testing.assert_allclose(obs[10:22], history[k - 2], atol=1e-6)
    env.close()

    # command delay: the same run as the ideal one with the actions two steps later (up to the
    # float32 rounding of the held reset command)
    actions = np.random.default_rng(1).uniform(-0.5, 0.5, (10, 12)).astype(np.float32)
    delayed = gym.make(WALK, realism={"command_delay": 0.02})
    ideal = gym.make(WALK)
    delayed.reset(seed=4)
    ideal.reset(seed=4)
    hold = ideal.unwrapped.previous_action.astype(np.float32)
    for k, action in enumerate(actions):
        o_delayed, *_ = delayed.step(action)
        o_ideal, *_ = ideal.step(actions[k - 2] if k >= 2 else hold)
        np.testing.assert_allclose(o_delayed, o_ideal, atol=1e-5)
    delayed.close()
    ideal.close()


def test_hexapod_guides_plant_and_payload():
    env = gym.make(HEXAPOD, realism={"guide_offset": 0.001, "guide_gain": 1.1})
    obs, info = env.reset(seed=0)
    u = env.unwrapped
    np.testing.assert_allclose(info["inputs"], 0.001, atol=1e-12)  # the carriages sit at the offset
    np.testing.assert_allclose(obs[38:44], 0.0, atol=1e-7)  # their counters read zero
    obs, _, _, _, info = env.step(np.full(6, 0.5, dtype=np.float32))
    np.testing.assert_allclose(info["inputs"], 1.1 * 0.5 * u.model.input_limit + 0.001, atol=1e-9)
    np.testing.assert_allclose(obs[38:44], 0.5, atol=1e-6)
    env.close()

    nominal = gym.make(HEXAPOD).unwrapped.model.reference_solution().position
    for realism, dz in (({"rod_length_error": 0.002}, (1.5e-3, 2.5e-3)), ({"payload": 0.2}, (-6e-5, -4e-5))):
        env = gym.make(HEXAPOD, realism=realism)
        obs, _ = env.reset(seed=0)
        u = env.unwrapped
        assert dz[0] < u.solution.position[2] - nominal[2] < dz[1]
        np.testing.assert_allclose(obs[0:3], u.solution.position, atol=1e-7)
        np.testing.assert_array_equal(u.model.reference_solution().position, nominal)  # the plan's model
        env.close()


def test_hexapod_command_delay_and_measured_pose():
    env = gym.make(HEXAPOD, realism={"command_delay": 0.05, "position_noise": 1e-3})
    obs, info = env.reset(seed=0)
    u = env.unwrapped
    first, second = np.full(6, 0.2, dtype=np.float32), np.full(6, -0.2, dtype=np.float32)
    _, _, _, _, info = env.step(first)
    np.testing.assert_allclose(info["inputs"], 0.0, atol=1e-12)  # one period late
    obs, reward, _, _, info = env.step(second)
    np.testing.assert_allclose(info["inputs"], 0.2 * u.model.input_limit, atol=1e-9)
    measured_error = np.linalg.norm(obs[0:3] - u.solution.position)
    assert 1e-4 < measured_error < 1e-2
    assert info["position_error"] == pytest.approx(np.linalg.norm(u.goal[:3] - u.solution.position))
    # the reward comes from the measured pose, the info from the true one
    assert reward == pytest.approx(-u.position_weight * np.linalg.norm(obs[14:17]) + info["reward_orientation"]
                                   + info["reward_action_rate"], abs=1e-5)
    env.close()


@pytest.mark.parametrize("env_id", [POSE, HEXAPOD])
def test_goal_conditioned_reward_matches_the_measured_goals(env_id):
    env = gym.make(env_id, goal_conditioned=True, realism="realistic")
    obs, _ = env.reset(seed=3)
    for _ in range(3):
        obs, reward, _, _, info = env.step(env.action_space.sample() * 0.1)
        assert env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == pytest.approx(
            reward, abs=1e-9)
    env.close()


@pytest.mark.parametrize("env_id", [WALK, HEXAPOD])
def test_bad_realism_raises_value_error_naming_the_valid_choices(env_id):
    names = [p.name for p in TABLES[env_id]]
    with pytest.raises(ValueError, match=names[-1]):
        gym.make(env_id, realism={"not_a_parameter": 1.0})
    with pytest.raises(ValueError, match="realistic"):
        gym.make(env_id, realism="noisy")
    with pytest.raises(ValueError, match="must lie in"):
        gym.make(env_id, realism={names[0]: -1.0})
    with pytest.raises(ValueError, match="low"):
        gym.make(env_id, realism={"payload": (0.1, 0.0)})
    episode = {WALK: 10.0, HEXAPOD: 2.5}[env_id]
    for name in ("command_delay", "observation_latency"):
        with pytest.raises(ValueError, match="one episode"):
            gym.make(env_id, realism={name: episode + 1.0})
    with pytest.raises(ValueError, match="one episode"):
        gym.make(POSE, realism={"command_delay": 3.0})  # a pose episode is 2 s


@pytest.mark.parametrize("env_id", [WALK, POSE, HEXAPOD])
def test_check_env_passes_under_realistic(env_id):
    env = gym.make(env_id, realism="realistic")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    env.close()
    assert [str(w.message) for w in caught if "needs a display" not in str(w.message)] == []


def _control(env_id: str, controller, n_steps: int, seed: int = 0) -> tuple[dict, dict]:
    """Run ``controller`` for ``n_steps`` under realistic; ``(reset info, last info)``, no fall."""
    env = gym.make(env_id, realism="realistic")
    obs, first = env.reset(seed=seed)
    agent = controller(env)
    agent.reset(obs, first)
    for _ in range(n_steps):
        obs, _, terminated, _, info = env.step(agent.act(obs))
        assert not terminated
    env.close()
    return first, info


def test_controllers_still_run_under_realistic():
    assert _control(WALK, TrotController, 200)[1]["x"] > 0.1
    assert _control(POSE, BodyPoseController, 200)[1]["orientation_error"] < np.radians(1.0)
    # the low gain that stays stable under the realistic latency plus command delay (evaluate's
    # hexapod-jacobian-low-gain)
    first, last = _control(HEXAPOD, lambda env: HexapodJacobianAgent(env, gain=0.3), 30, seed=1)
    assert last["solver_converged"] and last["position_error"] < 0.25 * first["position_error"]
