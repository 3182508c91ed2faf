"""PCCTrack-v0's physics: the paper's controller on the Figure 5 run, converged integration,
bounded chamber pressures, the regulators' delay, a payload, the stiff option and PyBullet's
joint limit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.pcc_control import PCCTrackingAgent, track


def figure5_normed_error(**kwargs) -> np.ndarray:
    """Paper Fig. 5D: ‖x_d − x‖ / ‖x_d‖ over one period of the 30°-tip-angle circle on the
    four-segment planar arm, from the zero state (the straight, relaxed arm)."""
    env = gym.make("soft_envs/PCCTrack-v0", n_segments=4, trajectory="planar_circle", start_straight=True,
                   random_start=False, max_episode_steps=10_000, **kwargs)
    unwrapped = env.unwrapped
    out = track(env, PCCTrackingAgent(env), int(round(unwrapped.trajectory.period / unwrapped.dt)))
    env.close()
    desired, tracked = out["desired"], out["tracked"]
    return np.linalg.norm(desired - tracked, axis=1) / np.linalg.norm(desired, axis=1)


def test_papers_controller_tracks_figure5_and_its_gains_matter():
    paper = figure5_normed_error()  # kp = 80, kv = 3
    no_gains = figure5_normed_error(kp=0.0, kv=0.0)
    assert len(paper) == len(no_gains) == 126  # one period, nothing stopped
    assert paper.mean() < 0.12  # the paper: "less than 12 %"
    assert paper[-20:].mean() < 0.02  # and it settles on the path
    assert no_gains.mean() > 3 * paper.mean()  # feed-forward alone: the start's swing never decays
    assert no_gains[-20:].mean() > 5 * paper[-20:].mean()


def tip_path(time_step: float, **kwargs) -> np.ndarray:
    env = gym.make("soft_envs/PCCTrack-v0", time_step=time_step, frame_skip=int(round(0.05 / time_step)),
                   controller_period=5e-3, max_episode_steps=10_000, **kwargs)
    out = track(env, PCCTrackingAgent(env), 40, seed=3)  # 2 s
    env.close()
    return out["tracked"]


def test_halving_the_step_changes_a_tracking_run_by_less_than_one_percent():
    coarse, fine = tip_path(5e-3), tip_path(2.5e-3)
    span = np.linalg.norm(fine - fine[0], axis=1).max()
    assert span > 0.02
    assert np.linalg.norm(coarse - fine, axis=1).max() < 0.01 * span


def test_pressures_stay_within_their_bound_and_saturation_is_reported():
    # Without the command ramp, set-points jumping between the corners of the workspace ask the
    # PD law for more than the chambers give.
    env = gym.make("soft_envs/PCCTrack-v0", command_ramp_time=0.0)
    env.reset(seed=0)
    bound = env.unwrapped.model.pressure.max_pressure
    saturated = False
    corner = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 0.0], dtype=np.float32)  # both segments bent 140°
    for k in range(10):
        _, _, terminated, _, info = env.step((-1.0) ** k * corner)
        assert np.abs(info["pressures"]).max() <= bound * (1 + 1e-12)
        saturated |= info["pressure_saturated"]
        if terminated:
            break
    assert saturated
    env.close()


def test_regulator_delay_degrades_tracking():
    errors = {}
    for delay in (0.0, 0.125):  # the paper's regulators: 100–150 ms
        env = gym.make("soft_envs/PCCTrack-v0", regulator_delay=delay)
        errors[delay] = np.sqrt(np.mean(track(env, PCCTrackingAgent(env), 30, seed=1)["errors"] ** 2))
        env.close()
    assert errors[0.125] > 2 * errors[0.0]


def test_a_payload_unknown_to_the_controller_sags_the_tip():
    finals = {}
    for payload in (0.0, 0.01):
        env = gym.make("soft_envs/PCCTrack-v0", payload=payload, random_start=False)
        env.reset(seed=0)
        model, setpoint = env.unwrapped.model, env.unwrapped.setpoint
        hold = env.unwrapped.model_to_action(setpoint)
        for _ in range(20):
            obs, _, _, _, info = env.step(hold)
        finals[payload] = np.linalg.norm(obs[0:3] - model.forward(setpoint))
        env.close()
    assert finals[0.0] < 1e-5 and finals[0.01] > 1e-3  # 10 g: millimetres on a 35 g soft arm


def test_stiff_option_is_the_earlier_arm():
    soft = gym.make("soft_envs/PCCTrack-v0")
    stiff = gym.make("soft_envs/PCCTrack-v0", physics="stiff")
    k_soft, k_stiff = soft.unwrapped.body.params.stiffness[0], stiff.unwrapped.body.params.stiffness[0]
    assert np.all(k_stiff > 40 * k_soft)  # E = 80 MPa on the solid section
    assert stiff.unwrapped.actuation == "direct" and stiff.unwrapped.time_step == 2e-3
    assert soft.unwrapped.actuation == "pressure" and soft.unwrapped.time_step == 5e-3
    soft.close()
    stiff.close()


@pytest.mark.parametrize("kwargs", [dict(n_segments=9), dict(n_segments=4, links_per_segment=15)])
def test_bodies_over_pybullets_joint_limit_raise_at_construction(kwargs):
    with pytest.raises(ValueError, match="at most 128 links"):
        gym.make("soft_envs/PCCTrack-v0", **kwargs)
