"""A single PyBullet arm seen as a batch of one: what the env logic written row-wise drives
(:class:`~soft_envs.envs.peter_arms.PeterArms`, :class:`~soft_envs.envs.pcc_arms.PCCArms`) when the
arm is not the batched core's.

* :class:`PeterBodyRows` and :class:`PCCBodyRows` — a :class:`~soft_envs.sim.peter_soft.SoftPeterBody`
  or :class:`~soft_envs.sim.pcc_body.PCCBody` with ``backend="pybullet"`` (PyBullet's mass matrix and
  inverse dynamics, the reference the batched core is held to) behind the methods and ``(1, …)``
  arrays of :class:`~soft_envs.sim.batched_bodies.BatchedSoftPeter` / ``BatchedPCCBody``.
* :class:`ServoRows` — the stiff PETER of PyBullet's position servos
  (:class:`~soft_envs.sim.peter_body.PeterBody`): commanded, stepped by PyBullet, read.

Rows are ``slice(None)``, ``[0]``, a one-entry index array or ``None`` (there is one arm); a step
with the arm inactive leaves it where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from soft_envs.sim.batched_bodies import pcc_violation_reason, pcc_violations
from soft_envs.sim.pcc_body import PCCBody
from soft_envs.sim.peter_body import PeterBody
from soft_envs.sim.peter_soft import SoftPeterBody
from soft_envs.sim.soft_arm import SoftArmBody


@dataclass
class RowState:
    """The arm's state as rows of one: ``u``, ``w``, ``c`` ``(1, n)``, ``time`` ``(1,)`` [s]."""

    u: np.ndarray
    w: np.ndarray
    c: np.ndarray
    time: np.ndarray


def _one(x) -> np.ndarray:
    """A row of one as a flat float array."""
    return np.asarray(x, dtype=float).reshape(-1)


class BodyRows:
    """What every soft body of one arm shows as a batch of one (module docstring)."""

    n_arms = 1

    def __init__(self, body: SoftArmBody) -> None:
        self.body = body
        self.n_dof = body.n_dof
        self.gravity = body.gravity
        self.base_orientation = np.array([[0.0, 0.0, 0.0, 1.0]])

    @property
    def state(self) -> RowState:
        b = self.body
        return RowState(b.u[None], b.w[None], b.c[None], np.array([b.time]))

    def step(self, dt: float, torque: np.ndarray, *, torque_end: np.ndarray | None = None,
             rest_end: np.ndarray | None = None, active: np.ndarray | None = None) -> None:
        if active is None or active[0]:
            self.body.step(dt, _one(torque), torque_end=None if torque_end is None else _one(torque_end),
                           rest_end=None if rest_end is None else _one(rest_end))

    def set_base_orientation(self, rows, quaternion: np.ndarray) -> None:
        """Quaternion ``(x, y, z, w)`` of the base in the world."""
        self.base_orientation = np.asarray(quaternion, dtype=float).reshape(1, 4).copy()
        self.body.set_base_orientation(tuple(self.base_orientation[0]))

    def snapshot(self) -> tuple:
        return self.body.snapshot()

    def restore(self, rows, snapshot: tuple, *, at_rest: bool = False) -> None:
        self.body.restore(snapshot, at_rest=at_rest)

    def is_finite(self) -> np.ndarray:
        return np.array([self.body.is_finite()])

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        position, velocity = self.body.tip_state()
        return position[None], velocity[None]


class PeterBodyRows(BodyRows):
    """One :class:`SoftPeterBody` as a batch of one (module docstring)."""

    body: SoftPeterBody

    @property
    def reference_length(self) -> float:
        """The modules' leg length at zero inflation [m] (``u``'s axial origin)."""
        return self.body.reference_length

    @property
    def radius(self) -> np.ndarray:
        """The leg-circle radius of the simulated arm ``(1,)`` [m]."""
        return np.array([self.body.model.radius])

    def reset_inflation(self, rows, t: np.ndarray) -> None:
        self.body.reset(_one(t))

    def arc_of_legs(self, legs: np.ndarray, rows=None) -> np.ndarray:
        return self.body.arc_of_legs(_one(legs))[None]

    def reset(self, rows, u: np.ndarray, *, reference: np.ndarray, rest: np.ndarray) -> None:
        self.body.set_state(_one(u), reference=reference)
        self.body.rest = _one(rest).copy()

    def set_model(self, rows, models: list, payload: np.ndarray) -> None:
        self.body.set_model(models[0], float(_one(payload)[0]))

    def leg_lengths(self) -> np.ndarray:
        """Current (deflected) leg lengths ``(1, 3N)`` [m]."""
        return self.body.leg_lengths()[None]


class PCCBodyRows(BodyRows):
    """One :class:`PCCBody` as a batch of one, with the terms the batched PD + feed-forward law reads
    (module docstring)."""

    body: PCCBody

    @property
    def model(self):
        return self.body.model

    @property
    def payload(self) -> np.ndarray:
        """Tip payload ``(1,)`` [kg]."""
        return np.array([self.body.payload])

    @property
    def configuration(self) -> np.ndarray:
        return self.body.configuration[None]

    def reset_configuration(self, rows, c: np.ndarray) -> None:
        self.body.reset(_one(c))

    def set_model(self, rows, models: list, payload: np.ndarray) -> None:
        self.body.set_model(models[0], float(_one(payload)[0]))

    def set_stiffness(self, rows, stiffness: np.ndarray) -> None:
        self.body.stiffness = _one(stiffness).copy()

    def mass_matrix(self) -> np.ndarray:
        return self.body.mass_matrix()[None]

    def gravity_torque(self, u: np.ndarray | None = None, index=None) -> np.ndarray:
        """``G`` ``(1, n)`` at the state or at ``u`` (``index``: the one arm)."""
        return self.body.gravity_torque(None if u is None else _one(u))[None]

    def coriolis(self) -> np.ndarray:
        return self.body.coriolis()[None]

    def elastic_torque(self, u: np.ndarray | None = None) -> np.ndarray:
        return self.body.elastic_torque(None if u is None else _one(u))[None]

    def damping_torque(self) -> np.ndarray:
        return (self.body.damping_matrix() @ self.body.w)[None]

    def model_violation(self) -> np.ndarray:
        """The reason code ``(1,)`` of :func:`~soft_envs.sim.batched_bodies.pcc_violations`."""
        return pcc_violations(self.body.model, self.body.u[None], self.body.w[None])

    def violation_reason(self, code: int, u: np.ndarray) -> str | None:
        return pcc_violation_reason(self.body.model, code, u)


class ServoRows:
    """The stiff PyBullet PETER as a batch of one (module docstring); ``client`` steps it."""

    n_arms = 1

    def __init__(self, body: PeterBody, client) -> None:
        self.body = body
        self.client = client

    def reset_inflation(self, rows, t: np.ndarray) -> None:
        self.body.reset(_one(t))

    def command(self, t: np.ndarray) -> None:
        """Hold the PCC shape of inflation times ``t`` ``(1, 3N)`` [s]."""
        self.body.command(_one(t))

    def advance(self, n_steps: int) -> None:
        """``n_steps`` PyBullet steps."""
        step = self.client.stepSimulation  # (BulletClient wraps on every attribute access)
        for _ in range(n_steps):
            step()

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        position, velocity = self.body.tip_state()
        return position[None], velocity[None]
