"""The soft arms' contact against independent answers: the scenarios that ``tests/sim/test_contact.py``
asserts and ``soft-envs bench contact`` reports (one definition of each check).

* :func:`statics_check` — a weightless 2-module PETER whose rest shape bends its tip past a rigid wall,
  settled against it without friction: the wall's normal force from the simulation against the
  elastic model's constrained equilibrium (``min ½ (u − r)ᵀ K (u − r)`` with every backbone point kept
  at the simulated contact distance from the wall, scipy's SLSQP, the force from its multipliers).
* :func:`swing` — PETER released from a bent pose into a sphere beside its path: the energy
  (kinetic + elastic + the contact springs') along the episode, the deepest penetration, the tip path
  (and :func:`convergence_check`: the path at the step and at half the step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from soft_envs.collision import PLANE, SHAPE_WIDTH, SPHERE
from soft_envs.robots import Peter
from soft_envs.sim.batched_bodies import BatchedSoftPeter
from soft_envs.sim.contact import DIAG_NORMAL_FORCE, DIAG_PENETRATION, DIAG_SPRING_ENERGY
from soft_envs.sim.damping import PETER_RAYLEIGH_STIFFNESS
from soft_envs.sim.scene import ContactParameters

PETER_STEP = 1.0 / 120.0  # PETER's soft physics step [s]
PRESSING = np.array([0.0, 1.5, 1.5, 0.0, 1.5, 1.5])  # inflation times [s]: the short first legs bend towards +x
CONVERGENCE_SEED = 0  # an episode whose arm touches its obstacles
SWUNG = np.array([0.0, 0.6, 0.6, 0.0, 0.6, 0.6])  # the bent pose the swing starts from [s]


def wall_row(x0: float) -> np.ndarray:
    """A rigid half-space filling ``x > x0`` [m] (outward normal −x), as a packed shape row."""
    row = np.zeros(SHAPE_WIDTH)
    row[0], row[1] = PLANE, x0
    row[4:13] = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]).ravel()
    return row


def sphere_row(centre: np.ndarray, radius: float) -> np.ndarray:
    """A sphere of ``radius`` [m] at ``centre`` [m] as a packed shape row."""
    row = np.zeros(SHAPE_WIDTH)
    row[0], row[1:4], row[4:13], row[13] = SPHERE, centre, np.eye(3).ravel(), radius
    return row


def backbone_at(body: BatchedSoftPeter, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The backbone points ``(p + 1, 3)`` [m] and their Jacobians ``(p + 1, 3, n)`` of ``body``'s arm 0
    put at the smooth configuration ``u`` (its state is overwritten)."""
    body.reset(0, u, reference=body.state.c[0])
    P, PJ = body.backbone()
    return P[0], PJ[0]


def pressed_arm(friction: float = 0.0, depth: float = 0.004, seconds: float = 4.0,
                on_step=None) -> tuple[BatchedSoftPeter, float, np.ndarray]:
    """A weightless 2-module PETER released straight, its rest shape bending the tip ``depth`` [m]
    past a wall at its side, after ``seconds`` [s] against the wall; returns the arm, the wall's
    ``x0`` [m] and the rest configuration. ``on_step(body)`` is called after every step."""
    body = BatchedSoftPeter(Peter(2), 1, gravity=0.0)
    body.reset_inflation(0, PRESSING)
    rest = body.state.u.copy()
    x0 = float(body.backbone()[0][0, -1, 0]) + body.model.chain().body_radius - depth
    body.reset(0, np.zeros(body.n_dof), rest=rest)
    body.add_scene(1, ContactParameters(friction=friction)).set_shapes(0, wall_row(x0)[None])
    zero = np.zeros((1, body.n_dof))
    for _ in range(int(round(seconds / PETER_STEP))):
        body.step(PETER_STEP, zero)
        if on_step is not None:
            on_step(body)
    return body, x0, rest[0]


@dataclass
class StaticsCheck:
    """The wall's normal force [N] from the simulation and from the elastic model, the settled
    configurations' largest difference [rad or m], the penetration [m] and the largest rate left."""

    simulated_force: float
    elastic_force: float
    configuration_difference: float
    penetration: float
    residual_rate: float

    @property
    def relative_error(self) -> float:
        return abs(self.simulated_force - self.elastic_force) / self.elastic_force


def statics_check(depth: float = 0.004) -> StaticsCheck:
    """:func:`pressed_arm` without friction against the elastic model's constrained equilibrium (module docstring)."""
    from scipy.optimize import minimize, nnls

    body, x0, rest = pressed_arm(depth=depth)
    penetration = float(body.scene.diagnostics[0, DIAG_PENETRATION])
    K = body.params.stiffness[0]
    radius = body.model.chain().body_radius
    probe = BatchedSoftPeter(body.model, 1, gravity=0.0)

    def gaps(u):  # each backbone point's distance to the wall beyond the simulated contact distance
        return x0 - backbone_at(probe, u)[0][:, 0] - (radius - penetration)

    def gap_jacobian(u):
        return -backbone_at(probe, u)[1][:, 0, :]

    result = minimize(lambda u: 0.5 * (u - rest) @ (K * (u - rest)), rest, jac=lambda u: K * (u - rest),
                      constraints=[{"type": "ineq", "fun": gaps, "jac": gap_jacobian}], method="SLSQP",
                      options={"ftol": 1e-16, "maxiter": 500})
    u = result.x
    active = gaps(u) < 1e-7
    # stationarity: K (u − r) = Σ λ_i ∂gap_i/∂u, λ ≥ 0 the wall's forces on the touching points [N]
    lam, _ = nnls(gap_jacobian(u)[active].T, K * (u - rest))
    return StaticsCheck(float(body.scene.diagnostics[0, DIAG_NORMAL_FORCE]), float(lam.sum()),
                        float(np.abs(body.state.u[0] - u).max()), penetration, float(np.abs(body.state.w).max()))


@dataclass
class Swing:
    """An arm swinging into a sphere: the tip path ``(T, 3)`` [m], the energies ``(T,)`` [J], the
    deepest penetration [m] and the steps it touched the sphere."""

    path: np.ndarray
    energy: np.ndarray
    deepest: float
    touching_steps: int

    @property
    def largest_gain(self) -> float:
        """The largest rise of the energy between two steps, relative to the start's."""
        return float(np.diff(self.energy).max() / self.energy[0])


def swing(dt: float = PETER_STEP, duration: float = 0.6, damping: float = PETER_RAYLEIGH_STIFFNESS,
          friction: float = 0.6, pose: np.ndarray = SWUNG) -> Swing:
    """A weightless 2-module PETER released from ``pose`` (inflation times [s]; its rest straight) into
    a sphere of 12 mm beside its path, with the arm's Rayleigh damping ``β = damping`` [s] (PeterReach's
    default); steps of ``dt`` [s]. (The release is a snap: the tip passes the sphere at ~0.3 m/s where
    the legs' 10 mm/s fill moves it at a few cm/s.)"""
    body = BatchedSoftPeter(Peter(2), 1, gravity=0.0, rayleigh_stiffness=damping)
    body.reset_inflation(0, pose)
    body.reset(0, body.state.u.copy(), rest=np.zeros(body.n_dof))
    centre = body.tip_state()[0][0] + np.array([-0.025, 0.04, -0.01])
    scene = body.add_scene(1, ContactParameters(friction=friction))
    scene.set_shapes(0, sphere_row(centre, 0.012)[None])
    K = body.params.stiffness[0]
    zero = np.zeros((1, body.n_dof))
    path, energy, deepest, touching = [], [], 0.0, 0
    for _ in range(int(round(duration / dt))):
        body.step(dt, zero)
        w, u = body.state.w[0], body.state.u[0]
        depth = float(scene.diagnostics[0, DIAG_PENETRATION])
        springs = scene.diagnostics[0, DIAG_SPRING_ENERGY]
        energy.append(0.5 * w @ body.mass_matrix()[0] @ w + 0.5 * u @ (K * u) + springs)
        deepest = max(deepest, depth)
        touching += int(scene.touched[0, 0])
        path.append(body.tip_state()[0][0].copy())
    return Swing(np.array(path), np.array(energy), deepest, touching)


def obstacle_episode(time_step: float = PETER_STEP, seed: int = 0, duration: float = 3.0, obstacles: int = 4,
                     **env_kwargs) -> tuple[np.ndarray, int, float]:
    """A ``PeterReach-v0`` episode with ``obstacles`` under uniformly random actions (seeded by ``seed``) at
    physics step ``time_step`` [s] (the control period fixed): the true tip path ``(T, 3)`` [m], the
    collisions and the deepest penetration [m]."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)

    env = gym.make("soft_envs/PeterReach-v0", obstacles=obstacles, time_step=time_step,
                   frame_skip=int(round(0.1 / time_step)), max_episode_steps=10_000, **env_kwargs)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    tips, deepest, info = [], 0.0, {}
    for _ in range(int(round(duration / 0.1))):
        _, _, terminated, _, info = env.step(rng.uniform(-1.0, 1.0, env.action_space.shape).astype(np.float32))
        tips.append(env.unwrapped.tip.copy())
        deepest = max(deepest, info["penetration"])
        if terminated:
            break
    env.close()
    return np.array(tips), int(info["collisions"]), deepest


def convergence_check(seed: int = CONVERGENCE_SEED) -> tuple[float, int]:
    """The largest change of a contact episode's tip path (:func:`obstacle_episode`) when the physics
    step halves (1/120 → 1/240 s), relative to the path's span, and the episode's collisions."""
    coarse, touches, _ = obstacle_episode(PETER_STEP, seed)
    fine, _, _ = obstacle_episode(PETER_STEP / 2, seed)
    return float(np.abs(fine - coarse).max() / np.ptp(fine, axis=0).max()), touches
