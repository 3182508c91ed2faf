"""``action_mode="task"``: the action moves the tip and the nominal model's damped least-squares
Jacobian turns it into the legs' set-points (``soft_envs.envs.closed_loop``). The Jacobian against
finite differences of the model, the first-order tip motion on the ideal kinematic arm, a
task-space feedback that closes the loop on realistic soft arms, and the refusals."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soft_envs  # noqa: F401
from soft_envs.envs.closed_loop import TASK_DAMPING, ClosedLoop, task_command_change
from soft_envs.exceptions import InvalidParameterError

PETER = "soft_envs/PeterReach-v0"
commands = st.lists(st.floats(-0.9, 0.9), min_size=6, max_size=6).map(np.array)


@settings(max_examples=20, deadline=None)
@given(command=commands)
def test_the_command_jacobian_is_the_models_derivative_in_normalised_units(command):
    env = gym.make(PETER, kinematic=True, action_mode="task").unwrapped
    jacobian = env.command_jacobian(command[None])[0]
    step = 1e-6
    numeric = np.stack([(env.model.forward(env.action_to_model(command + step * e))
                         - env.model.forward(env.action_to_model(command - step * e))) / (2 * step)
                        for e in np.eye(6)], axis=1)
    np.testing.assert_allclose(jacobian, numeric, atol=1e-8)
    env.close()


@settings(max_examples=20, deadline=None)
@given(command=commands, direction=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array))
def test_a_task_action_moves_the_ideal_kinematic_tip_by_task_step_times_itself(command, direction):
    """First order: ``Δtip = J Jᵀ (J Jᵀ + λ² I)⁻¹ Δx``; with 0.5 mm steps the rest is the damping and
    the model's curvature, a few percent of the step."""
    env = ClosedLoop(gym.make(PETER, kinematic=True), action_mode="task", task_step=5e-4)
    env.reset(seed=0)
    env.env.step(command.astype(np.float32))  # the inner env holds this set-point (absolute)
    model = env.unwrapped
    before = model.model.forward(model.action_to_model(command))
    env.step(direction.astype(np.float32))
    after = model.previous_action
    moved = model.model.forward(model.action_to_model(after)) - before
    clipped = np.any(np.abs(after) >= 1.0)
    if not clipped:
        assert np.linalg.norm(moved - 5e-4 * direction) <= 0.05 * 5e-4 * np.linalg.norm(direction) + 2e-6
    env.close()


def test_damped_least_squares_inverts_a_well_conditioned_jacobian_and_damps_a_null_direction():
    jacobian = np.array([[[0.02, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.0]]])  # m per unit: a dead axis
    change = task_command_change(jacobian, np.array([[1e-3, 1e-3, 1e-3]]))[0]
    expected_x = 0.02 * 1e-3 / (0.02 ** 2 + TASK_DAMPING ** 2)
    assert change[0] == pytest.approx(expected_x)
    assert change[1] == pytest.approx(0.01 * 1e-3 / (0.01 ** 2 + TASK_DAMPING ** 2))
    assert change[2] == 0.0  # nothing to move it with: no command change, no blow-up


def test_a_task_space_feedback_reaches_within_a_millimetre_on_realistic_soft_arms():
    """A proportional law in the task's coordinates, ``a = 0.25 (goal − measured tip) / task_step``,
    closes the loop on 16 drawn robots (valve delay, sensor latency and noise, leaks, gains): what a
    policy in this action space can learn is within reach of a linear map."""
    envs = gym.make_vec(PETER, num_envs=16, realism="realistic", action_mode="task")
    obs, _ = envs.reset(seed=2_000_000)
    for _ in range(50):
        obs, _, _, _, info = envs.step(np.clip(0.25 * obs[:, 6:9] / 0.002, -1.0, 1.0))
    assert np.mean(info["distance"] < 1e-3) >= 0.8
    envs.close()


def test_task_mode_refusals():
    with pytest.raises(InvalidParameterError, match="command_jacobian"):
        gym.make("soft_envs/PCCTrack-v0", action_mode="task")
    with pytest.raises(InvalidParameterError, match="task_step"):
        gym.make(PETER, kinematic=True, action_mode="task", task_step=0.0)
    with pytest.raises(InvalidParameterError, match="task_step"):
        gym.make_vec(PETER, num_envs=2, kinematic=True, action_mode="task", task_step=1.0)
    env = gym.make(PETER, kinematic=True, action_mode="task")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(6, dtype=np.float32))  # a set-point action in task mode
    env.close()


def test_a_task_action_keeps_the_commands_in_their_box_and_moves_the_free_ones_instead():
    """One command at its upper bound, the displacement asking for more of it: the bound one is held
    and the other two take its share (clipping the unbounded solution would lose it)."""
    jacobian = np.array([[[0.02, 0.01, 0.0], [0.0, 0.0, 0.02]]])  # m per unit; commands 0 and 1 both move x
    command = np.array([[1.0, 0.0, 0.0]])
    displacement = np.array([[1e-3, 0.0]])
    change = task_command_change(jacobian, displacement, command, -np.ones(3), np.ones(3))[0]
    assert change[0] == 0.0 and change[2] == pytest.approx(0.0, abs=1e-12)
    assert jacobian[0] @ change == pytest.approx(displacement[0], abs=1e-5)  # the damping's share only
    clipped = (np.clip(command + task_command_change(jacobian, displacement), -1.0, 1.0) - command)[0]
    assert np.linalg.norm(jacobian[0] @ clipped - displacement[0]) > 10 * np.linalg.norm(
        jacobian[0] @ change - displacement[0])


@settings(max_examples=40, deadline=None)
@given(command=st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6).map(np.array),
       direction=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array))
def test_a_bounded_task_change_stays_in_the_box_and_equals_the_plain_one_inside_it(command, direction):
    env = gym.make(PETER, kinematic=True, action_mode="task").unwrapped
    jacobian = env.command_jacobian(command[None])
    plain = task_command_change(jacobian, 2e-3 * direction[None])
    bounded = task_command_change(jacobian, 2e-3 * direction[None], command[None], -np.ones(6), np.ones(6))
    assert np.all(np.abs(command + bounded) <= 1.0 + 1e-12)
    if np.all(np.abs(command + plain) <= 1.0):
        np.testing.assert_array_equal(bounded, plain)
    env.close()


def test_task_feedback_makes_the_action_a_residual_on_the_proportional_law():
    """A zero action with ``task_feedback=k`` commands what the law ``clip(k e / task_step)`` commands
    as the action itself, single and vector env alike (the error ``e`` measured, realistic arms)."""
    law = gym.make(PETER, realism="realistic", action_mode="task")
    residual = gym.make(PETER, realism="realistic", action_mode="task", task_feedback=0.2)
    law.reset(seed=3)
    residual.reset(seed=3)
    for _ in range(5):  # (the error in float64: the observation's float32 rounds it by ~1e-9 m)
        law.step(np.clip(0.2 * law.unwrapped.task_error()[0] / 0.002, -1.0, 1.0))
        residual.step(np.zeros(3, dtype=np.float32))
        np.testing.assert_allclose(residual.unwrapped.previous_action, law.unwrapped.previous_action, atol=1e-12)
    law.close()
    residual.close()
    envs = gym.make_vec(PETER, num_envs=4, realism="realistic", action_mode="task", task_feedback=0.2)
    envs.reset(seed=3)
    commands = envs.unwrapped.previous_action.copy()
    error = envs.unwrapped.task_error().copy()
    envs.step(np.zeros((4, 3), dtype=np.float32))
    jacobian = envs.unwrapped.command_jacobian(commands)
    expected = commands + task_command_change(jacobian, 0.002 * np.clip(0.2 * error / 0.002, -1, 1), commands,
                                              -np.ones(6), np.ones(6))
    np.testing.assert_allclose(envs.unwrapped.previous_action, expected, atol=1e-12)
    envs.close()


@pytest.mark.parametrize("kwargs", [{"task_feedback": 0.2}, {"action_mode": "task", "task_feedback": -0.1},
                                    {"action_mode": "task", "task_feedback": 1.5},
                                    {"action_mode": "task", "task_feedback": "0.2"}])
def test_task_feedback_refusals(kwargs):
    with pytest.raises(InvalidParameterError, match="task_feedback"):
        gym.make(PETER, kinematic=True, **kwargs)
    with pytest.raises(InvalidParameterError, match="task_feedback"):
        gym.make_vec(PETER, num_envs=2, kinematic=True, **kwargs)


@settings(max_examples=30, deadline=None)
@given(action=st.lists(st.floats(-1, 1), min_size=3, max_size=3).map(np.array),
       error=st.lists(st.floats(-3e-3, 3e-3), min_size=3, max_size=3).map(np.array))
def test_the_residual_acts_in_proportion_to_the_error_within_its_radius(action, error):
    """``next_commands`` with the authority ``min(1, |e| / r)``: all of the residual from ``r`` out, a
    share ``|e| / r`` within, nothing at the goal (the law's equilibrium stays one)."""
    from soft_envs.envs.closed_loop import next_commands

    box = gym.spaces.Box(-1.0, 1.0, (3,))
    jacobian = lambda c: np.broadcast_to(np.eye(3) * 0.01, (c.shape[0], 3, 3))  # noqa: E731
    previous, feedback, radius = np.zeros((1, 3)), 0.2 * error[None] / 0.002, 1e-3
    share = min(1.0, float(np.linalg.norm(error)) / radius)
    scaled = next_commands(action[None], previous, box, "task", 0.1, 0.002, jacobian, feedback, np.array([[share]]))
    direct = next_commands(share * action[None], previous, box, "task", 0.1, 0.002, jacobian, feedback)
    np.testing.assert_allclose(scaled, direct, atol=1e-15)
    at_goal = next_commands(action[None], previous, box, "task", 0.1, 0.002, jacobian, 0 * feedback, np.zeros((1, 1)))
    np.testing.assert_array_equal(at_goal, previous)


@settings(max_examples=40, deadline=None)
@given(error=st.lists(st.floats(-1e-2, 1e-2), min_size=3, max_size=3).map(np.array),
       radius=st.sampled_from([0.0, 1e-3, 5e-3]), deadband=st.sampled_from([0.0, 1e-3, 2e-3]))
def test_the_residual_has_no_authority_within_its_deadband(error, radius, deadband):
    """``residual_terms``' share ``clip((|e| − d) / r, 0, 1)``: none within the deadband ``d``, all of it from
    ``d + r`` out (``r = 0``: all of it beyond ``d``), ``None`` (all of it) without either; the law's action
    ``k e / task_step`` whatever they are."""
    from soft_envs.envs.closed_loop import residual_terms

    class Arm:
        def task_error(self):
            return error[None]

    law, share = residual_terms(Arm(), 0.2, 0.002, radius, deadband)
    np.testing.assert_allclose(law, 0.2 * error[None] / 0.002, rtol=1e-15)
    distance = float(np.linalg.norm(error))
    if radius == 0.0 and deadband == 0.0:
        assert share is None
        return
    assert share is not None and share.shape == (1, 1)
    expected = float(distance > deadband) if radius == 0.0 else min(1.0, max(0.0, (distance - deadband) / radius))
    np.testing.assert_allclose(share[0, 0], expected, atol=1e-12)
    if distance <= deadband:
        assert share[0, 0] == 0.0


def test_within_the_deadband_the_law_acts_alone():
    """A residual env with ``task_residual_deadband`` commands what the law alone commands (a zero action)
    while the measured tip is within the deadband, whatever the action; single and vector env alike."""
    kwargs = dict(realism="realistic", action_mode="task", task_feedback=0.2, task_residual_radius=5e-3)
    acting = gym.make(PETER, task_residual_deadband=0.1, **kwargs)  # (the whole reach lies within 0.1 m)
    law = gym.make(PETER, **kwargs)
    acting.reset(seed=5)
    law.reset(seed=5)
    rng = np.random.default_rng(1)
    for _ in range(6):
        acting.step(rng.uniform(-1, 1, 3))
        law.step(np.zeros(3))
        np.testing.assert_allclose(acting.unwrapped.previous_action, law.unwrapped.previous_action, atol=1e-12)
    assert acting.unwrapped.task_residual_deadband == 0.1
    acting.close()
    law.close()
    kwargs |= dict(history=2, task_residual_deadband=2e-3)
    single = gym.make(PETER, **kwargs)
    envs = gym.make_vec(PETER, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    single.reset(seed=7)
    envs.reset(seed=7)
    for _ in range(8):
        action = rng.uniform(-1, 1, (2, 3))
        obs_vector, *_ = envs.step(action)
        obs_single, *_ = single.step(action[0])
        np.testing.assert_array_equal(obs_vector[0], obs_single)
    single.close()
    envs.close()


def test_task_residual_radius_single_and_vector_env_alike():
    kwargs = dict(realism="realistic", action_mode="task", history=2, task_feedback=0.2, task_residual_radius=1e-3)
    single = gym.make(PETER, **kwargs)
    envs = gym.make_vec(PETER, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    obs_single, _ = single.reset(seed=7)
    obs_vector, _ = envs.reset(seed=7)
    rng = np.random.default_rng(0)
    for _ in range(8):
        action = rng.uniform(-1, 1, (2, 3))
        obs_vector, *_ = envs.step(action)
        obs_single, *_ = single.step(action[0])
        np.testing.assert_array_equal(obs_vector[0], obs_single)
    assert single.unwrapped.task_residual_radius == 1e-3
    single.close()
    envs.close()


@pytest.mark.parametrize("name", ["task_residual_radius", "task_residual_deadband"])
@pytest.mark.parametrize("kwargs", [{"action_mode": "task"},  # no law to be a residual on
                                    {"action_mode": "task", "task_feedback": 0.2, "value": -1e-3},
                                    {"action_mode": "task", "task_feedback": 0.2, "value": 0.5},
                                    {"action_mode": "task", "task_feedback": 0.2, "value": True}])
def test_task_residual_distance_refusals(name, kwargs):
    kwargs = dict(kwargs)
    kwargs[name] = kwargs.pop("value", 1e-3)
    with pytest.raises(InvalidParameterError, match=name):
        gym.make(PETER, kinematic=True, **kwargs)
    with pytest.raises(InvalidParameterError, match=name):
        gym.make_vec(PETER, num_envs=2, kinematic=True, **kwargs)
