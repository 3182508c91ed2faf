"""``realism=`` on the soft arms: PETER's legs, sensor, base and plant; the PCC arm's chambers,
regulators, plant and sensor. Each effect is checked against what it should do analytically."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import soft_envs  # noqa: F401
from soft_envs.agents.reach import TRRReachAgent
from soft_envs.envs.pcc_track import PCC_REALISM
from soft_envs.envs.peter_reach import PETER_REALISM, PHYSICS_ONLY_REALISM
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix

PETER = "soft_envs/PeterReach-v0"
PCC = "soft_envs/PCCTrack-v0"


def rollout(env_id: str, steps: int, seed: int = 3, **kwargs):
    """Observations, rewards and final info of ``steps`` fixed actions."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    action = np.linspace(-0.6, 0.8, env.action_space.shape[0]).astype(np.float32)
    observations, rewards = [obs], []
    for _ in range(steps):
        obs, reward, _, _, info = env.step(action)
        observations.append(obs)
        rewards.append(reward)
    goal = env.unwrapped.goal.copy()
    env.close()
    return np.array(observations), np.array(rewards), info, goal


@pytest.mark.parametrize("env_id, kwargs, table", [
    (PETER, {"kinematic": True}, PETER_REALISM), (PETER, {}, PETER_REALISM), (PCC, {}, PCC_REALISM)])
def test_ideal_values_given_explicitly_are_the_default_env(env_id, kwargs, table):
    names = [p.name for p in table if not (kwargs.get("kinematic") and p.name in PHYSICS_ONLY_REALISM)]
    explicit = {p.name: p.ideal for p in table if p.name in names}
    a = rollout(env_id, 4, **kwargs)
    b = rollout(env_id, 4, realism=explicit, **kwargs)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert a[3].tolist() == b[3].tolist()


@pytest.mark.parametrize("env_id, kwargs", [(PETER, {"kinematic": True}), (PETER, {}), (PCC, {})])
def test_realistic_is_reproducible_per_seed_keeps_the_goals_and_changes_the_robot(env_id, kwargs):
    ideal = rollout(env_id, 3, **kwargs)
    first = rollout(env_id, 3, realism="realistic", **kwargs)
    again = rollout(env_id, 3, realism="realistic", **kwargs)
    other = rollout(env_id, 3, seed=4, realism="realistic", **kwargs)
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert np.array_equal(first[3], ideal[3])  # the task's draws do not depend on the realism
    assert not np.allclose(first[0], ideal[0])
    assert not np.allclose(first[0][1:], other[0][1:])


@pytest.mark.parametrize("env_id, kwargs, table", [
    (PETER, {"kinematic": True}, PETER_REALISM), (PETER, {}, PETER_REALISM), (PCC, {}, PCC_REALISM)])
def test_reset_info_reports_every_perturbation_drawn(env_id, kwargs, table):
    env = gym.make(env_id, realism="realistic", **kwargs)
    _, info = env.reset(seed=0)
    expected = {p.name for p in table} - (set(PHYSICS_ONLY_REALISM) if kwargs.get("kinematic") else set())
    assert set(info["realism"]) == expected
    for p in table:
        if p.name in expected:
            value = np.asarray(info["realism"][p.name])
            assert np.all((value >= p.realistic[0]) & (value <= p.realistic[1])), p.name
    env.close()


@pytest.mark.parametrize("env_id, kwargs, realism, message", [
    (PETER, {}, {"friction": 0.5}, "valid ones: leg_gain"),
    (PETER, {"kinematic": True}, {"payload": 0.1}, "valid ones"),  # no payload without physics
    (PETER, {}, {"leak_rate": -1e-3}, "must lie in"),
    (PETER, {}, {"command_delay": 6.0}, "must lie in"),  # longer than an episode
    (PETER, {}, "noisy", "valid presets"),
    (PETER, {"physics": "stiff"}, "realistic", "physics='soft'"),
    (PCC, {"actuation": "direct"}, {"chamber_gain": 1.1}, "valid ones"),
    (PCC, {}, {"stiffness_error": -1.0}, "must lie in"),
])
def test_bad_realism_is_a_value_error(env_id, kwargs, realism, message):
    with pytest.raises(ValueError, match=message):
        gym.make(env_id, realism=realism, **kwargs)


def kinematic_env(realism, **kwargs):
    env = gym.make(PETER, kinematic=True, realism=realism, **kwargs)
    env.reset(seed=1)
    return env


def test_leg_gain_and_offset_move_the_legs_as_eq1_with_the_scatter():
    gain = np.linspace(0.8, 1.2, 6)
    env = kinematic_env({"leg_gain": [gain.min(), gain.min()], "leg_offset": [1e-3, 1e-3]})
    _, info = env.reset(seed=1)
    assert np.allclose(info["leg_inflation"], 0.1)  # 1 mm at 10 mm/s
    t = np.array([0.5, 1.0, 1.5, 2.0, 0.0, 0.25])
    _, _, _, _, info = env.step(env.unwrapped.model_to_action(t))
    assert np.allclose(info["leg_inflation"], 0.8 * t + 0.1)
    plant_tip = env.unwrapped.model.forward(0.8 * t + 0.1)
    assert np.allclose(env.unwrapped.tip, plant_tip, atol=1e-12)
    env.close()


def test_a_leak_shortens_a_held_leg_at_its_rate_and_stops_at_empty():
    env = kinematic_env({"leak_rate": 1e-3})  # 0.1 s of inflation lost per second
    dt = env.unwrapped.dt
    t = np.full(6, 0.2)
    action = env.unwrapped.model_to_action(t)
    _, _, _, _, info = env.step(action)
    assert np.allclose(info["leg_inflation"], 0.2 - 0.1 * dt)
    for _ in range(9):
        _, _, _, _, info = env.step(action)  # the same command does not refill
    assert np.allclose(info["leg_inflation"], 0.2 - 0.1 * 10 * dt)
    for _ in range(60):
        _, _, _, _, info = env.step(action)
    assert np.allclose(info["leg_inflation"], 0.0)  # never below the empty leg
    env.close()


def test_command_delay_holds_the_previous_command_for_whole_periods():
    env = kinematic_env({"command_delay": 0.1})  # two control periods of 0.05 s
    t = np.full(6, 1.0)
    infos = [env.step(env.unwrapped.model_to_action(t))[4]["leg_inflation"] for _ in range(3)]
    assert np.allclose(infos[0], 0.0) and np.allclose(infos[1], 0.0) and np.allclose(infos[2], 1.0)
    env.close()


def test_base_tilt_rotates_the_arm_in_the_goals_frame():
    env = kinematic_env({"base_tilt": 0.03})  # 0.03 rad about x and about y
    t = np.array([0.5, 1.0, 1.5, 2.0, 0.0, 0.25])
    env.step(env.unwrapped.model_to_action(t))
    R = quaternion_to_matrix(quaternion_from_rotation_vector(np.array([0.03, 0.03, 0.0])))
    assert np.allclose(env.unwrapped.tip, R @ env.unwrapped.model.forward(t), atol=1e-12)
    env.close()


def test_observation_latency_and_noise_act_on_the_measured_tip_only():
    env = kinematic_env({"observation_latency": 0.1})  # two control periods
    tips, observed = [], []
    for k in range(4):
        obs, _, _, _, info = env.step(env.unwrapped.model_to_action(np.full(6, 0.4 * (k + 1))))
        tips.append(env.unwrapped.tip.copy())
        observed.append(obs[:3])
        assert info["distance"] == pytest.approx(np.linalg.norm(env.unwrapped.goal - env.unwrapped.tip), abs=1e-6)
    assert np.allclose(observed[2], tips[0], atol=1e-6) and np.allclose(observed[3], tips[1], atol=1e-6)
    env.close()
    env = kinematic_env({"observation_noise": 1e-3})
    misses = []
    for _ in range(200):
        obs, reward, _, _, info = env.step(env.unwrapped.model_to_action(np.full(6, 1.0)))
        misses.append(obs[:3] - env.unwrapped.tip)
        assert reward == pytest.approx(-env.unwrapped.distance_weight * np.linalg.norm(obs[6:9]), rel=1e-5)
    assert 0.8e-3 < np.std(misses) < 1.2e-3
    env.close()


def test_a_realistic_payload_and_softer_legs_sag_the_soft_arm():
    env = gym.make(PETER, realism={"payload": 0.5, "leg_stiffness_error": -0.5}, actuation="instant")
    plain = gym.make(PETER, actuation="instant")
    for e in (env, plain):
        e.reset(seed=0)
        for _ in range(20):
            e.step(e.unwrapped.model_to_action(np.full(6, 1.0)))
    sag = plain.unwrapped.tip[2] - env.unwrapped.tip[2]
    # 0.5 kg on legs half as stiff: about twice the 2.5 mm of the calibration, plus the arm's weight
    assert 4e-3 < sag < 7e-3
    assert env.unwrapped.plant.leg_stiffness == pytest.approx(0.5 * env.unwrapped.model.leg_stiffness)
    env.close()
    plain.close()


def test_closed_loop_feedback_corrects_the_realistic_arm():
    env = gym.make(PETER, realism="realistic")
    agent = TRRReachAgent(env, feedback=True)
    open_loop = TRRReachAgent(env, env.unwrapped.model.with_kinematics("tilted"))
    finals = []
    for controller in (agent, open_loop):
        obs, info = env.reset(seed=0)
        controller.reset(obs, info)
        for _ in range(50):
            obs, _, _, _, info = env.step(controller.act(obs))
        finals.append(info["distance"])
    assert finals[0] < 1e-3 < 5e-3 < finals[1]
    env.close()


@pytest.mark.parametrize("env_id, kwargs", [(PETER, {"kinematic": True}), (PETER, {}), (PCC, {}),
                                            (PETER, {"goal_conditioned": True})])
def test_check_env_passes_under_realistic(env_id, kwargs):
    env = gym.make(env_id, realism="realistic", **kwargs)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_pcc_realism_scales_the_chambers_regulators_and_plant():
    env = gym.make(PCC, realism={"chamber_gain": (1.05, 1.05), "pressure_droop": 0.02, "regulator_delay": 0.1,
                                 "stiffness_error": 0.1})
    u = env.unwrapped
    _, info = env.reset(seed=0)
    assert np.allclose(u.plant_pressure_map, u.pressure_map * 1.05 * 0.98)
    assert u.regulator.delay[0] == pytest.approx(0.1)
    assert np.allclose(u.body.params.stiffness[0], 1.1 * u.nominal_stiffness)
    assert np.allclose(info["realism"]["chamber_gain"], 1.05)
    env.close()


def test_pcc_mass_and_payload_change_the_simulated_arm_only():
    env = gym.make(PCC, realism={"payload": 0.004, "mass_error": 0.1})
    u = env.unwrapped
    env.reset(seed=0)
    assert u.plant.segment_mass == pytest.approx(1.1 * u.model.segment_mass)
    assert u.body.payload[0] == pytest.approx(0.004)
    mass, _ = u.body.topology.link_dynamics(u.plant.chain(0.004))  # the simulated links
    np.testing.assert_allclose(u.body.params.mass[0], mass)
    env.close()


def test_vector_envs_draw_one_robot_per_sub_env():
    envs = gym.make_vec(PETER, num_envs=2, vectorization_mode="sync", kinematic=True, realism="realistic")
    _, info = envs.reset(seed=0)
    gains = info["realism"]["leg_gain"]
    assert gains.shape == (2, 6) and not np.allclose(gains[0], gains[1])
    obs, *_ = envs.step(envs.action_space.sample())
    assert obs.shape == (2, 18)
    envs.close()
