"""Free boxes on a table (soft_envs.sim.rigid_object): the independent checks of
soft_envs.bench.contact_objects at the default 5 ms step, plus the API's validation and geometry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.bench import contact_objects as checks
from soft_envs.collision import BOX, SHAPE_WIDTH, segment_shape_distance
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix
from soft_envs.sim.rigid_object import BatchedBoxes, BoxParameters

DT = 0.005


def _assert_rows(rows):
    for row in rows:
        assert row["passed"], row


def test_c1_sliding_decelerates_at_mu_g_and_stops_at_v0_squared_over_2_mu_g():
    _assert_rows(checks.sliding(DT))


def test_c2_inside_the_friction_cone_sticks_outside_slides_at_the_net_force():
    _assert_rows(checks.friction_cone(DT))


def test_c3_a_resting_box_stays_put():
    _assert_rows(checks.resting(DT, duration=10.0))


@pytest.mark.parametrize("tilted", [False, True])
def test_d1_drop_never_gains_energy_and_comes_to_rest(tilted):
    _assert_rows(checks.drop(DT, tilted))


def test_e_halving_the_step_moves_the_path_by_under_one_percent():
    _assert_rows(checks.convergence(DT))


@pytest.mark.parametrize("dt", checks.STEPS)
def test_a_stiff_external_spring_is_stable_with_its_stiffness(dt):
    _assert_rows(checks.stiff_push(dt))


def test_without_its_stiffness_the_stiff_spring_blows_up():
    assert not checks.stiff_push(DT, implicit=False, duration=0.3)[0]["passed"]


def test_free_tumbling_conserves_angular_momentum_and_spins_about_the_intermediate_axis_unstably():
    params = BoxParameters(mass=0.1, half_extents=(0.03, 0.02, 0.01), table_height=-10.0, gravity=0.0)
    boxes = BatchedBoxes(1, params)
    boxes.reset(0, [0.0, 0.0, 0.0], velocity=[0.1, 0.0, 0.0], angular_velocity=[0.01, 8.0, 0.01])
    inertia = np.diag(params.inertia)

    def momentum():
        R = boxes.rotation()[0]
        return R @ inertia @ R.T @ boxes.angular_velocity[0]

    L0 = momentum()
    for _ in range(400):
        boxes.step(DT)
    assert np.allclose(momentum(), L0, rtol=0, atol=1e-12)
    body = boxes.rotation()[0].T @ boxes.angular_velocity[0]
    assert abs(body[1]) < 7.9  # the intermediate axis' spin is unstable: it has tumbled away
    assert np.allclose(boxes.velocity[0], [0.1, 0.0, 0.0])


def test_external_force_at_a_point_makes_the_torque_about_the_centre():
    params = BoxParameters(table_height=-10.0, gravity=0.0)
    boxes = BatchedBoxes(2, params)
    boxes.reset([0, 1], [0.0, 0.0, 0.0])
    force = np.array([[0.0, 0.1, 0.0], [0.0, 0.1, 0.0]])
    boxes.step(1e-3, force=force, point=[[0.02, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert boxes.angular_velocity[0, 2] > 0 and abs(boxes.angular_velocity[1, 2]) < 1e-15
    assert np.allclose(boxes.velocity[:, 1], boxes.velocity[0, 1])


def test_shape_rows_follow_the_collision_layout():
    boxes = BatchedBoxes(3)
    q = quaternion_from_rotation_vector(np.array([0.1, 0.2, 0.3]))
    boxes.reset(1, [0.1, 0.2, 0.3], q)
    rows = boxes.shape_rows()
    assert rows.shape == (3, SHAPE_WIDTH) and np.all(rows[:, 0] == BOX)
    assert np.allclose(rows[1, 1:4], [0.1, 0.2, 0.3])
    assert np.allclose(rows[1, 4:13].reshape(3, 3), quaternion_to_matrix(q))
    assert np.allclose(rows[:, 13:16], 0.02)
    # the collision module reads the row as the box: a short segment 1 cm off a face's centre
    R = quaternion_to_matrix(q)
    a = np.array([0.1, 0.2, 0.3]) + R @ np.array([0.0, 0.0, 0.03])
    out = np.empty(8)
    segment_shape_distance(a, a + R @ np.array([0.0, 0.0, 0.01]), rows[1], out)
    assert abs(out[0] - 0.01) < 1e-12 and np.allclose(out[5:8], R[:, 2])


def test_batched_boxes_are_independent_and_have_their_own_tables():
    boxes = BatchedBoxes(2, table_height=[0.0, 0.5])
    boxes.reset(1, [0.0, 0.0, 0.52 - boxes.params.resting_penetration])
    normal, depth = boxes.step(DT)
    assert np.allclose(normal, boxes.params.mass * boxes.params.gravity, rtol=1e-3)
    assert np.allclose(depth, boxes.params.resting_penetration, rtol=1e-3)


finite = st.floats(-1e3, 1e3)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["mass", "friction", "time_constant", "damping_ratio", "stiction_speed"]),
       st.one_of(st.floats(max_value=0.0), st.just(float("nan")), st.just(float("inf")), st.just("x")))
def test_bad_parameters_raise_value_errors(name, value):
    if name == "friction" and isinstance(value, float) and value == 0.0:
        return  # μ = 0 (frictionless) is valid
    with pytest.raises(ValueError):
        BoxParameters(**{name: value})


@settings(max_examples=30, deadline=None)
@given(st.lists(finite, min_size=4, max_size=4))
def test_reset_rejects_non_unit_quaternions(quat):
    norm = float(np.linalg.norm(quat))
    boxes = BatchedBoxes(1)
    if abs(norm - 1.0) > 1e-6:
        with pytest.raises(ValueError):
            boxes.reset(0, [0.0, 0.0, 0.1], quat)
    else:
        boxes.reset(0, [0.0, 0.0, 0.1], quat)


@pytest.mark.parametrize("kwargs", [{"force": [[np.nan, 0, 0]]}, {"force": np.zeros((2, 2))},
                                    {"stiffness": np.zeros(4)}, {"point": ["a", "b", "c"]}])
def test_bad_step_inputs_raise_value_errors(kwargs):
    with pytest.raises(ValueError):
        BatchedBoxes(1).step(DT, **kwargs)
    with pytest.raises(ValueError):
        BatchedBoxes(1).step(0.0)
    with pytest.raises(ValueError):
        BoxParameters(half_extents=(0.1, 0.1))


@settings(max_examples=6, deadline=None)
@given(st.floats(0.02, 0.2), st.floats(0.01, 0.03), st.floats(0.5, 1.0), st.sampled_from(checks.STEPS),
       st.floats(-1.0, 1.0), st.floats(-1.0, 1.0))
def test_any_box_in_the_range_never_gains_energy_and_rests_flat(mass, half, aspect, dt, ax, ay):
    """20–200 g, 2–6 cm, thrown tilted (not spinning) from 5 cm at both steps: energy never above
    its start (1e-12 relative), at rest after 1.5 s at the resting depth."""
    params = BoxParameters(mass=mass, half_extents=(half, aspect * half, half))
    boxes = BatchedBoxes(1, params)
    quat = quaternion_from_rotation_vector(np.array([ax, ay, 0.2]))
    boxes.reset(0, [0.0, 0.0, 0.05 + 2.0 * half], quat, velocity=[0.3, 0.0, 0.0])
    e0 = boxes.energy()[0]
    for _ in range(int(round(1.5 / dt))):
        _, depth = boxes.step(dt)
        assert boxes.energy()[0] <= e0 * (1.0 + 1e-12)
    assert np.abs(boxes.velocity).max() < 1e-6
    assert depth[0] <= 1e-3


def test_a_batch_steps_each_box_as_a_batch_of_one():
    rng = np.random.default_rng(0)
    n = 4
    starts = [(rng.uniform(-0.1, 0.1, 3) + [0, 0, 0.05], quaternion_from_rotation_vector(rng.normal(size=3) * 0.5),
               rng.normal(size=3) * 0.2, rng.normal(size=3)) for _ in range(n)]
    force = rng.normal(size=(n, 3)) * 0.1
    batch = BatchedBoxes(n)
    for i, (p, q, v, w) in enumerate(starts):
        batch.reset(i, p, q, v, w)
    for _ in range(100):
        batch.step(DT, force=force)
    for i, (p, q, v, w) in enumerate(starts):
        one = BatchedBoxes(1)
        one.reset(0, p, q, v, w)
        for _ in range(100):
            one.step(DT, force=force[i:i + 1])
        assert np.array_equal(one.state[0], batch.state[i])
