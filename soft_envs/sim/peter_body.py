"""The PyBullet body of a PETER arm, generated from its :class:`~soft_envs.robots.Peter` model (:meth:`Peter.chain`)."""

from __future__ import annotations

import numpy as np

from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.peter import Peter
from soft_envs.sim import bullet
from soft_envs.sim.bullet import STANDARD_GRAVITY, pybullet
from soft_envs.sim.urdf import load_chain


def configure_physics(client, *, time_step: float, gravity: bool = True, solver_iterations: int = 100) -> None:
    """The physics settings the PETER body is made for (used by the env, the bench and tests).

    PyBullet's default iterative (PGS) solver cannot hold a long chain of position motors
    stiff: the arm sags by solver residual rather than by physics and, with a payload on
    3–4 modules, oscillates or collapses. The direct MLCP (Dantzig) solver holds the motors
    exactly, so the commanded shape is reached whatever the load within the motor limits —
    as on the real arm, which carries 0.5 kg "without changing its kinematic model".
    """
    bullet.configure_physics(client, time_step=time_step, gravity=STANDARD_GRAVITY if gravity else 0.0,
                             solver_iterations=solver_iterations, direct_solver=True)


class PeterBody:
    """A PETER arm in a PyBullet ``client``: each module's PCC arc as rigid links.

    All joints are 1-DOF (see :meth:`Peter.body_joint_positions`) and driven by PyBullet's
    position motors to the shape of the commanded inflation times (:meth:`command`);
    ``max_torque`` [N m] and ``max_force`` [N] bound what the "pneumatics" can hold against
    gravity and a tip ``payload`` [kg]. ``position_gain`` is the fraction of the joint error
    the motors close per physics step (0.2: a ~20 ms time constant at 1/240 s). Use it with
    :func:`configure_physics`.

    Attributes:
        targets: current joint targets (:meth:`Peter.body_joint_positions`) [rad, m].
        forces, position_gains, velocity_gains: the per-joint motor settings [N m or N, -, -].
    """

    def __init__(
        self,
        client,
        model: Peter,
        *,
        payload: float = 0.0,
        base_position: tuple[float, float, float] = (0.0, 0.0, 0.0),
        max_torque: float = 10.0,
        max_force: float = 50.0,
        position_gain: float = 0.2,
        velocity_gain: float = 1.0,
    ) -> None:
        self.client = client
        self.model = model.with_kinematics("pcc")
        chain = self.model.chain(payload=payload)
        self.body = load_chain(client, chain, basePosition=list(base_position), useFixedBase=True,
                               flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        self.n_joints = client.getNumJoints(self.body)
        self.joints = list(range(self.n_joints))
        self.tip_link = self.n_joints - 1
        self.base_position = np.asarray(base_position, dtype=float)
        self.forces = [max_force if kind == "prismatic_z" else max_torque for kind in chain.kinds]
        self.position_gains = [position_gain] * self.n_joints
        self.velocity_gains = [velocity_gain] * self.n_joints
        self.targets = self.model.body_joint_positions(np.zeros(self.model.n_dof))

    def reset(self, t: np.ndarray) -> None:
        """Teleport the joints to the PCC shape of ``t`` (zero velocity) and hold it there."""
        self.targets = self.model.body_joint_positions(t)
        for j, value in zip(self.joints, self.targets):
            self.client.resetJointState(self.body, j, float(value), 0.0)
        self._send()

    def command(self, t: np.ndarray) -> None:
        """Set the motor targets to the PCC shape of inflation times ``t`` [s]."""
        self.targets = self.model.body_joint_positions(t, reference=self.targets)
        self._send()

    def _send(self) -> None:
        self.client.setJointMotorControlArray(
            self.body, self.joints, pybullet.POSITION_CONTROL, targetPositions=self.targets.tolist(),
            forces=self.forces, positionGains=self.position_gains, velocityGains=self.velocity_gains)

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Tip position [m] and linear velocity [m/s] in the arm's base frame."""
        state = self.client.getLinkState(self.body, self.tip_link, computeLinkVelocity=1)
        # Centre-of-mass pose: the generated links have their centre of mass at the link frame.
        return np.asarray(state[0]) - self.base_position, np.asarray(state[6])

    def link_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Simulated frames of every link: positions ``(K, 3)`` [m] (base frame), rotations ``(K, 3, 3)``."""
        states = self.client.getLinkStates(self.body, self.joints, computeForwardKinematics=1)
        pos = np.array([s[0] for s in states]) - self.base_position
        rot = quaternion_to_matrix(np.array([s[1] for s in states]))
        return pos, rot
