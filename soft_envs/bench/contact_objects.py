"""Independent checks of the free boxes on a table (:mod:`soft_envs.sim.rigid_object`): each
returns a row (name, measured, expected, tolerance, passed) against a closed-form or physical
expectation; :func:`object_checks` runs them all (the rows of BENCHMARKS), and
``tests/sim/test_rigid_object.py`` asserts each.
"""

from __future__ import annotations

import math

import numpy as np

from soft_envs.geometry import quaternion_from_rotation_vector, rotation_vector_error
from soft_envs.sim.rigid_object import BatchedBoxes, BoxParameters

STEPS = (0.005, 1.0 / 120.0)  # s, the time steps every check runs at


def _row(name: str, measured: float, expected: float, tolerance: float, passed: bool, unit: str = "") -> dict:
    return {"check": name, "measured": float(measured), "expected": float(expected), "tolerance": float(tolerance),
            "unit": unit, "passed": bool(passed)}


def _resting(params: BoxParameters | None = None) -> BatchedBoxes:
    """A box resting flat at its resting depth (velocities zero)."""
    return BatchedBoxes(1, params)


def sliding(dt: float, v0: float = 0.3) -> list[dict]:
    """c1: a box launched at ``v0`` along x decelerates at ``μ g`` (a line fitted to the velocity
    while 0.1 v0 < v < 0.9 v0) and its centre stops (its largest x) at ``v0² / (2 μ g)``, both 2 %."""
    box = _resting()
    p = box.params
    mu_g = p.friction * p.gravity
    box.velocity[0, 0] = v0
    x0 = box.position[0, 0]
    t, v, x = [], [], []
    for i in range(int(round(2.0 * v0 / mu_g / dt))):
        box.step(dt)
        t.append((i + 1) * dt)
        v.append(box.velocity[0, 0])
        x.append(box.position[0, 0] - x0)
    ta, va = np.array(t), np.array(v)
    phase = (va > 0.1 * v0) & (va < 0.9 * v0)
    decel = -np.polyfit(ta[phase], va[phase], 1)[0]
    stop = max(x)
    expected = v0 * v0 / (2.0 * mu_g)
    return [_row(f"c1 sliding deceleration, dt {dt * 1e3:.2f} ms", decel, mu_g, 0.02 * mu_g,
                 abs(decel - mu_g) <= 0.02 * mu_g, "m/s²"),
            _row(f"c1 sliding stop distance, dt {dt * 1e3:.2f} ms", stop, expected, 0.02 * expected,
                 abs(stop - expected) <= 0.02 * expected, "m")]


def _bottom(box: BatchedBoxes) -> np.ndarray:
    """The centre of the box's lowest face (the mean of its four lowest corners) [m]."""
    corners = box.corners()[0]
    return corners[np.argsort(corners[:, 2])[:4]].mean(axis=0)


def friction_cone(dt: float) -> list[dict]:
    """c2: a horizontal force at the centre, 0.8 μ m g held 2 s: the contact (the lowest face's centre)
    slides < 0.1 mm (the centre moves ~0.2 mm more as the compliant contact tilts the box under
    the force's moment, ``θ = 0.8 μ g h_z (τ ζ)² / h_x²``); 1.2 μ m g:
    acceleration ``(F − μ m g)/m`` within 2 % (a line fitted to the velocity over 0.2–1 s)."""
    box = _resting()
    p = box.params
    cone = p.friction * p.mass * p.gravity
    x0 = _bottom(box)
    for _ in range(int(round(2.0 / dt))):
        box.step(dt, force=[0.8 * cone, 0.0, 0.0])
    moved = float(np.linalg.norm(_bottom(box) - x0))
    box = _resting()
    t, v = [], []
    for i in range(int(round(1.0 / dt))):
        box.step(dt, force=[1.2 * cone, 0.0, 0.0])
        t.append((i + 1) * dt)
        v.append(box.velocity[0, 0])
    ta, va = np.array(t), np.array(v)
    accel = np.polyfit(ta[ta >= 0.2], va[ta >= 0.2], 1)[0]
    expected = 0.2 * cone / p.mass
    return [_row(f"c2 0.8 μmg held 2 s: displacement, dt {dt * 1e3:.2f} ms", moved, 0.0, 1e-4, moved < 1e-4, "m"),
            _row(f"c2 1.2 μmg: acceleration, dt {dt * 1e3:.2f} ms", accel, expected, 0.02 * expected,
                 abs(accel - expected) <= 0.02 * expected, "m/s²")]


def resting(dt: float, duration: float = 10.0) -> list[dict]:
    """c3: a resting box with nothing touching it moves < 0.1 mm in ``duration`` (the centre's
    displacement plus the orientation's drift angle times the largest half extent)."""
    box = _resting()
    p0, q0 = box.position[0].copy(), box.orientation[0].copy()
    for _ in range(int(round(duration / dt))):
        box.step(dt)
    angle = float(np.linalg.norm(rotation_vector_error(box.orientation[0], q0)))
    drift = float(np.linalg.norm(box.position[0] - p0)) + angle * max(box.params.half_extents)
    return [_row(f"c3 resting {duration:g} s: drift, dt {dt * 1e3:.2f} ms", drift, 0.0, 1e-4, drift < 1e-4, "m")]


def drop(dt: float, tilted: bool, height: float = 0.05, duration: float = 1.5) -> list[dict]:
    """d1: dropped with its lowest corner ``height`` above the table (flat, or rotated 30° about the
    diagonal (1, 1, 0)/√2): the mechanical energy (:meth:`BatchedBoxes.energy`) never rises above
    its start by more than 1e-12 of it (the rounding of its sums), the box comes to rest
    (``|v| < 1e-6`` m/s, ``|ω| < 1e-4`` rad/s), resting penetration ≤ 1 mm; the impact's deepest
    penetration reported."""
    box = _resting()
    axis = np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0)
    quat = quaternion_from_rotation_vector(axis * math.radians(30.0)) if tilted else np.array([0.0, 0.0, 0.0, 1.0])
    box.reset(0, [0.0, 0.0, 0.0], quat)
    lowest = box.corners()[0, :, 2].min()
    box.reset(0, [0.0, 0.0, height - lowest], quat)
    e0 = float(box.energy()[0])
    rise, impact = -math.inf, 0.0
    for _ in range(int(round(duration / dt))):
        _, depth = box.step(dt)
        rise = max(rise, float(box.energy()[0]) - e0)
        impact = max(impact, float(depth[0]))
    speed, spin = float(np.linalg.norm(box.velocity[0])), float(np.linalg.norm(box.angular_velocity[0]))
    rest_depth = float(depth[0])
    label = f"{'tilted' if tilted else 'flat'}, dt {dt * 1e3:.2f} ms"
    return [_row(f"d1 drop {label}: energy rise", rise, 0.0, 1e-12 * e0, rise <= 1e-12 * e0, "J"),
            _row(f"d1 drop {label}: at rest (|v| after {duration:g} s)", speed, 0.0, 1e-6,
                 speed < 1e-6 and spin < 1e-4, "m/s"),
            _row(f"d1 drop {label}: resting penetration", rest_depth, box.params.resting_penetration, 1e-3,
                 rest_depth <= 1e-3, "m"),
            _row(f"d1 drop {label}: deepest penetration in the impact", impact, math.nan, math.nan, True, "m")]


def _slide_path(dt: float, duration: float = 0.3, sample: float = 0.005) -> np.ndarray:
    """A sliding, spinning episode: the box launched flat at (0.3, 0.1) m/s spinning at 6 rad/s about
    z (friction couples the spin and the slide, rocking on the corners); the centre every ``sample`` s."""
    box = BatchedBoxes(1)
    rest = box.position[0, 2]
    box.reset(0, [0.0, 0.0, rest], velocity=[0.3, 0.1, 0.0], angular_velocity=[0.0, 0.0, 6.0])
    return _centre_path(box, dt, duration, sample)


def _tumble_path(dt: float, duration: float = 0.6, sample: float = 0.005) -> np.ndarray:
    """A tumbling episode: the box dropped from 6 cm, tilted (rotation vector (0.3, 0.5, 0.1) rad),
    thrown at (0.3, 0.1) m/s spinning at 4 rad/s about z; the centre every ``sample`` s."""
    box = BatchedBoxes(1)
    quat = quaternion_from_rotation_vector(np.array([0.3, 0.5, 0.1]))
    box.reset(0, [0.0, 0.0, 0.06], quat, velocity=[0.3, 0.1, 0.0], angular_velocity=[0.0, 0.0, 4.0])
    return _centre_path(box, dt, duration, sample)


def _centre_path(box: BatchedBoxes, dt: float, duration: float, sample: float) -> np.ndarray:
    """Box 0's centre ``(T, 3)`` [m] every ``sample`` s over ``duration`` s of steps of ``dt`` s."""
    every = int(round(sample / dt))
    path = [box.position[0].copy()]
    for i in range(int(round(duration / dt))):
        box.step(dt)
        if (i + 1) % every == 0:
            path.append(box.position[0].copy())
    return np.array(path)


def convergence(dt: float = 0.005, tumbling: bool = False) -> list[dict]:
    """e: halving ``dt`` moves the episode's centre path (sampled every ``dt``) by ≤ 1 % of its span
    (the largest distance of the finer path from its start): the sliding, spinning episode, or with
    ``tumbling`` the tumbling drop (first order through its impacts: reported, not held)."""
    path = _tumble_path if tumbling else _slide_path
    coarse, fine = path(dt, sample=dt), path(dt / 2.0, sample=dt)
    span = float(np.max(np.linalg.norm(fine - fine[0], axis=1)))
    moved = float(np.max(np.linalg.norm(coarse - fine, axis=1))) / span
    kind = "tumbling drop" if tumbling else "sliding, spinning"
    return [_row(f"e {kind}: halving dt {dt * 1e3:.2f} ms, path change / span", moved, 0.0, 0.01, moved <= 0.01)]


def stiff_push(dt: float, k: float = 1e4, implicit: bool = True, duration: float = 1.0) -> list[dict]:
    """The implicit external stiffness: a spring ``k`` [N/m] from an anchor 1 cm ahead pulls the box
    at the centre of its −x face (passing ``stiffness = k I`` to :meth:`BatchedBoxes.step`); the box
    must settle where the spring's force is inside the friction cone, ``|x − x_a| ≤ μ m g / k``
    (+ 1 µm), without blowing up. ``implicit=False`` (the force alone) shows the explicit step."""
    box = _resting()
    p = box.params
    offset = np.array([-p.half_extents[0], 0.0, 0.0])
    anchor = box.position[0] + offset + np.array([0.01, 0.0, 0.0])
    K = k * np.eye(3)
    peak = 0.0
    for _ in range(int(round(duration / dt))):
        point = box.position[0] + box.rotation()[0] @ offset
        force = -k * (point - anchor)
        force[2] = 0.0
        Kxy = K.copy()
        Kxy[2, 2] = 0.0
        box.step(dt, force=force, point=point, stiffness=Kxy if implicit else None)
        peak = max(peak, float(np.abs(box.velocity[0]).max()))
        if not np.all(np.isfinite(box.state)) or peak > 1e3:
            break
    point = box.position[0] + box.rotation()[0] @ offset
    gap = float(np.linalg.norm((point - anchor)[:2])) if np.all(np.isfinite(point)) else math.inf
    bound = p.friction * p.mass * p.gravity / k + 1e-6
    name = f"stiff spring k={k:g} N/m, {'implicit' if implicit else 'explicit'}, dt {dt * 1e3:.2f} ms: final gap"
    return [_row(name, gap, 0.0, bound, gap <= bound, "m")]


def object_checks() -> list[dict]:
    """Every check at both time steps (:data:`STEPS`): rows of ``check``, ``measured``,
    ``expected``, ``tolerance``, ``unit``, ``passed`` (NaN expected/tolerance: a reported figure; the
    tumbling drop's convergence row is reported against the 1 % and fails it: module docstring of
    :mod:`soft_envs.sim.rigid_object`)."""
    rows: list[dict] = []
    for dt in STEPS:
        rows += sliding(dt) + friction_cone(dt) + resting(dt) + drop(dt, False) + drop(dt, True) + stiff_push(dt)
    rows += convergence(STEPS[0]) + convergence(STEPS[1]) + convergence(STEPS[0], tumbling=True)
    return rows
