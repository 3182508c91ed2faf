"""The PyBullet body of a PCC arm and its elastic dynamics, generated from :class:`~soft_envs.robots.PCCArm`.

Body. The rigid-link chain comes from the model (:meth:`PCCArm.chain`): per segment a z-revolute (``φ``),
``m`` pairs (y-revolute bend, prismatic extension), a last half bend and a z-revolute (``−φ``).
The body joints are a *linear* image of the configuration, ``q_body = B c``
(:meth:`PCCArm.body_joint_map`), so the PCC assumption "all joints of a segment move
uniformly" is the subspace ``range(B)``.

Dynamics (paper section 2.3). The state is the smooth configuration ``u = (ΔL, a, b)`` per
segment (``a = θ cos φ``, ``b = θ sin φ``; the paper's state is ``(ε, κx, κy) =
(ΔL/L, a/(L+ΔL), b/(L+ΔL))``); unlike ``(θ, φ)`` it is not singular for a straight segment.
PyBullet's multibody algorithms give the exact rigid-link inertia ``M_b``, Coriolis and
gravity terms of the body (``calculateMassMatrix``, ``calculateInverseDynamics``); with
``c = c(u)`` and ``J = ∂c/∂u`` the equations of motion are

    ``M(u) ü + C(u, u̇) u̇ + G(u) + K u + D u̇ = τ``,
    ``M = Jᵀ Bᵀ M_b B J``, ``C u̇ + G = Jᵀ Bᵀ ID(B c, B J u̇, B J̇ u̇)``,

with linear elasticity ``K = diag(k_ΔL, k_θ, k_θ)`` per segment (:meth:`PCCArm.stiffness`;
energy ``½ k_ΔL ΔL² + ½ k_θ θ²``) and Rayleigh damping ``D = α M + β K``. The links carry no
spin inertia about their own axis (the body's link frames spin with ``φ``, the material does
not), which keeps ``M(u)`` finite at ``θ = 0``; below ``θ = 1e-4`` rad the dynamics terms are
evaluated at ``θ = 1e-4`` (``J`` has ``1/θ`` entries). PyBullet's own integrator cannot keep
the body on the PCC subspace nor integrate the stiff elastic terms at a usable step (axial
modes near 4000 rad/s), so :class:`PCCBody` integrates these equations itself — a
semi-implicit Euler step implicit in ``K`` and ``D`` (L-stable), explicit in the rest — and
writes the state into PyBullet (``resetJointState``, positions ``B c``, velocities
``B J u̇``), so rendering and link frames show the simulated arm. The default motors are
disabled (``VELOCITY_CONTROL``, force 0).

Controller (:class:`PDFeedforward`, paper eq. 10 as in SPEC section 3) on ``q = (ε, κx, κy)``:
``τ = M (q̈_d − k_v (q̇ − q̇_d) − k_p (q − q_d)) + C + D + K(q_d) + G(q_d)`` with
``q̇_d = q̈_d = 0`` as in the paper; the desired ``q̈`` is mapped to ``ü`` exactly through
``q = h(u)`` (``ü = H⁻¹ (q̈ − Ḣ u̇)``, ``H`` is never singular).
"""

from __future__ import annotations

import numpy as np
import pybullet

from soft_envs.exceptions import InvalidParameterError, check_nonnegative
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.sim.urdf import load_chain

_MIN_BEND = 1e-4  # rad; dynamics terms are evaluated at least this far from a straight segment


class PCCBody:
    """A :class:`PCCArm` in a PyBullet ``client`` with elastic reduced-coordinate dynamics.

    Args:
        client: a ``BulletClient`` owned by the caller.
        model: the arm (3-D or planar).
        gravity: standard gravity [m/s²] along the world's −z (the arm's base z points up).
        rayleigh_mass, rayleigh_stiffness: Rayleigh coefficients ``α`` [1/s] and ``β`` [s]
            of ``D = α M + β K``; the default ``β = 8e-4 s`` gives the first bending mode of a
            65 mm segment (≈ 490 rad/s) a damping ratio of about 0.2 (the paper takes its
            values from its ref. 29 without listing them).
        base_position: where the arm's foot is in the world [m].

    State: :attr:`u` (smooth configuration) and :attr:`w` (its rate); :attr:`configuration`
    is ``(ΔL, θ, φ)`` per segment, continuous in time.
    """

    def __init__(
        self,
        client,
        model: PCCArm,
        *,
        gravity: float = 9.81,
        rayleigh_mass: float = 0.0,
        rayleigh_stiffness: float = 8e-4,
        base_position: tuple[float, float, float] = (0.0, 0.0, 0.0),
    ) -> None:
        check_nonnegative(gravity=gravity, rayleigh_mass=rayleigh_mass, rayleigh_stiffness=rayleigh_stiffness)
        self.client = client
        self.model = model
        self.gravity = float(gravity)
        self.alpha, self.beta = float(rayleigh_mass), float(rayleigh_stiffness)
        self.base_position = np.asarray(base_position, dtype=float)
        client.setGravity(0.0, 0.0, -self.gravity)
        self.body = load_chain(client, model.chain(), basePosition=list(base_position), useFixedBase=True,
                               flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        self.n_joints = client.getNumJoints(self.body)
        self.joints = list(range(self.n_joints))
        self.tip_link = self.n_joints - 1
        client.setJointMotorControlArray(self.body, self.joints, pybullet.VELOCITY_CONTROL,
                                         forces=[0.0] * self.n_joints)
        self.B = model.body_joint_map()
        k = model.stiffness()  # (N, 3) or (N, 2): k_ΔL, k_θ[, 0]
        if model.planar:
            self.stiffness = k.ravel()
        else:
            self.stiffness = np.stack((k[:, 0], k[:, 1], k[:, 1]), axis=-1).ravel()  # K in u
        n = model.n_dof
        self.u, self.w = np.zeros(n), np.zeros(n)
        self.c = np.zeros(n)
        self.time = 0.0
        self._cache: dict[str, np.ndarray] = {}
        self._bullet_stale = True
        self.reset(np.zeros(n))

    # ------------------------------------------------------------------ state

    def reset(self, c: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Put the arm in configuration ``c`` at rest (or with smooth-coordinate rate ``velocity``)."""
        c = self.model.check_configuration(c)
        if c.ndim != 1:
            raise InvalidParameterError("reset takes a single configuration")
        self.c = np.array(c, dtype=float)
        self.u = self.model.to_smooth(self.c)
        self.w = np.zeros(self.model.n_dof) if velocity is None else np.array(velocity, dtype=float)
        self.time = 0.0
        self._sync()

    def _config(self, u: np.ndarray, reference: np.ndarray) -> np.ndarray:
        return self.model.from_smooth(u, reference=reference)

    def _eval_point(self) -> np.ndarray:
        """``u`` moved to at least ``_MIN_BEND`` bend per segment (3-D arm), for the dynamics terms."""
        u = self.u
        if self.model.planar:
            return u
        s = u.reshape(-1, 3).copy()
        r = np.hypot(s[:, 1], s[:, 2])
        small = r < _MIN_BEND
        if small.any():
            ref = self.c.reshape(-1, 3)
            phi = np.where(r > 0, np.arctan2(s[:, 2], s[:, 1]), ref[:, 2])
            s[small, 1] = _MIN_BEND * np.cos(phi[small])
            s[small, 2] = _MIN_BEND * np.sin(phi[small])
        return s.ravel()

    def _jacobian_cu(self, u: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``∂c/∂u`` (block diagonal); ``c`` gives the representation (sign of ``θ``)."""
        n = self.model.n_dof
        if self.model.planar:
            return np.eye(n)
        J = np.zeros((n, n))
        s, cs = u.reshape(-1, 3), c.reshape(-1, 3)
        for i in range(s.shape[0]):
            _, a, b = s[i]
            th = cs[i, 1]
            r2 = a * a + b * b
            J[3 * i, 3 * i] = 1.0
            J[3 * i + 1, 3 * i + 1:3 * i + 3] = (a / th, b / th)
            J[3 * i + 2, 3 * i + 1:3 * i + 3] = (-b / r2, a / r2)
        return J

    def _sync(self) -> None:
        self.c = self._config(self.u, self.c)
        ue = self._eval_point()
        ce = self._config(ue, self.c)
        J = self._jacobian_cu(ue, ce)
        self._cache = {"ue": ue, "ce": ce, "J": J}
        self._bullet_stale = True

    def sync_bullet(self) -> None:
        """Write the state into PyBullet (done lazily before any query of the PyBullet body)."""
        if not self._bullet_stale:
            return
        qb, vb = self.B @ self.c, self.B @ (self._cache["J"] @ self.w)
        self.client.resetJointStatesMultiDof(self.body, self.joints, [[float(x)] for x in qb],
                                             targetVelocities=[[float(x)] for x in vb])
        self._bullet_stale = False

    @property
    def configuration(self) -> np.ndarray:
        """Current ``(ΔL, θ, φ)`` per segment (``φ`` wrapped into ``[−π, π]``)."""
        return self.model.from_smooth(self.u, reference=self.c)

    @property
    def state(self) -> np.ndarray:
        """The paper's state ``(ε, κx, κy)`` per segment (planar: ``(ε, κ)``)."""
        return self.model.pcc_state(self.configuration)

    # ------------------------------------------------------------------ dynamics terms (in u)

    def mass_matrix(self) -> np.ndarray:
        """``M(u)`` at the current state."""
        if "M" not in self._cache:
            J, qb = self._cache["J"], self.B @ self._cache["ce"]
            Mb = np.asarray(self.client.calculateMassMatrix(self.body, qb.tolist()))
            BJ = self.B @ J
            self._cache["M"] = BJ.T @ Mb @ BJ
        return self._cache["M"]

    def _inverse_dynamics(self, c: np.ndarray, c_dot: np.ndarray, c_acc: np.ndarray) -> np.ndarray:
        tau = self.client.calculateInverseDynamics(self.body, (self.B @ c).tolist(), (self.B @ c_dot).tolist(),
                                                   (self.B @ c_acc).tolist())
        return self.B.T @ np.asarray(tau)

    def bias(self) -> np.ndarray:
        """``C(u, u̇) u̇ + G(u)`` at the current state."""
        if "h" not in self._cache:
            ue, ce, J = self._cache["ue"], self._cache["ce"], self._cache["J"]
            w = self.w
            speed = float(np.linalg.norm(w))
            if speed > 0 and not self.model.planar:  # J̇ u̇: second difference of c(u) along u̇
                d = 1e-4 / speed
                acc = (self._config(ue + d * w, ce) - 2 * ce + self._config(ue - d * w, ce)) / d**2
            else:
                acc = np.zeros_like(w)
            self._cache["h"] = J.T @ self._inverse_dynamics(ce, J @ w, acc)
        return self._cache["h"]

    def gravity_torque(self, u: np.ndarray | None = None) -> np.ndarray:
        """``G(u)`` (the current state, or smooth configuration ``u``)."""
        if u is None:
            if "G" not in self._cache:
                ce, J = self._cache["ce"], self._cache["J"]
                zero = np.zeros(self.model.n_dof)
                self._cache["G"] = J.T @ self._inverse_dynamics(ce, zero, zero)
            return self._cache["G"]
        u = np.asarray(u, dtype=float)
        if not self.model.planar:
            s = u.reshape(-1, 3).copy()
            r = np.hypot(s[:, 1], s[:, 2])
            small = r < _MIN_BEND
            s[small, 1], s[small, 2] = _MIN_BEND, 0.0
            u = s.ravel()
        c = self.model.from_smooth(u)
        zero = np.zeros(self.model.n_dof)
        return self._jacobian_cu(u, c).T @ self._inverse_dynamics(c, zero, zero)

    def coriolis(self) -> np.ndarray:
        """``C(u, u̇) u̇`` at the current state."""
        return self.bias() - self.gravity_torque()

    def elastic_torque(self, u: np.ndarray | None = None) -> np.ndarray:
        """``K u``: axial force [N] and bending moments [N m]."""
        return self.stiffness * (self.u if u is None else np.asarray(u, dtype=float))

    def damping_matrix(self) -> np.ndarray:
        """Rayleigh ``D = α M + β K`` at the current state."""
        return self.alpha * self.mass_matrix() + self.beta * np.diag(self.stiffness)

    # ------------------------------------------------------------------ integration

    def step(self, dt: float, torque: np.ndarray, *, cancel_damping: bool = False) -> None:
        """Advance by ``dt`` [s] under the generalised actuation ``torque`` in ``u`` (held over the step).

        Semi-implicit Euler, implicit in the elastic and damping forces:
        ``(M + dt D + dt² K) u̇⁺ = M u̇ + dt (τ − C u̇ − G − K u)``, ``u⁺ = u + dt u̇⁺``. It is
        L-stable: modes far above ``1/dt`` (the axial ones, which Rayleigh damping over-damps
        anyway) are damped numerically instead of ringing. ``cancel_damping`` applies a
        controller's ``+D u̇`` term at the same (implicit) velocity as the damping it cancels.
        """
        M = self.mass_matrix()
        K = np.diag(self.stiffness)
        D = np.zeros_like(M) if cancel_damping else self.damping_matrix()
        rhs = M @ self.w + dt * (np.asarray(torque, dtype=float) - self.bias() - K @ self.u)
        self.w = np.linalg.solve(M + dt * D + dt * dt * K, rhs)
        self.u = self.u + dt * self.w
        self.time += dt
        self._sync()

    # ------------------------------------------------------------------ measurements

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Tip position [m] and linear velocity [m/s] of the simulated body, in the arm's base frame."""
        self.sync_bullet()
        state = self.client.getLinkState(self.body, self.tip_link, computeLinkVelocity=1,
                                         computeForwardKinematics=1)
        return np.asarray(state[0]) - self.base_position, np.asarray(state[6])

    def link_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Simulated centre-of-mass positions ``(K, 3)`` [m] (base frame) and link rotations ``(K, 3, 3)``.

        Compare with the third and second outputs of :meth:`PCCArm.link_frames`.
        """
        self.sync_bullet()
        states = self.client.getLinkStates(self.body, self.joints, computeForwardKinematics=1)
        pos = np.array([s[0] for s in states]) - self.base_position
        rot = quaternion_to_matrix(np.array([s[1] for s in states]))
        return pos, rot


class PDFeedforward:
    """The paper's PD + feed-forward law on the state ``(ε, κx, κy)`` per segment (module docstring).

    Args:
        model: the arm.
        kp: proportional gain [1/s²] (the paper: 80).
        kv: derivative gain [1/s] (the paper: 3).
        compensate_damping: include the ``+D u̇`` term (SPEC's form of the law); the body then
            applies it implicitly (``PCCBody.step(..., cancel_damping=True)``).
        stiffness_error: relative error of the controller's stiffness model: the feed-forward
            uses ``(1 + stiffness_error) K`` (0 = exact model), to measure model sensitivity.
    """

    def __init__(self, model: PCCArm, kp: float = 80.0, kv: float = 3.0, *, compensate_damping: bool = True,
                 stiffness_error: float = 0.0) -> None:
        if not (np.isfinite(kp) and np.isfinite(kv) and kp >= 0 and kv >= 0):
            raise InvalidParameterError(f"kp and kv must be >= 0; got {kp!r}, {kv!r}")
        if not np.isfinite(stiffness_error) or stiffness_error <= -1:
            raise InvalidParameterError(f"stiffness_error must be > -1; got {stiffness_error!r}")
        self.model = model
        self.kp, self.kv = float(kp), float(kv)
        self.compensate_damping = bool(compensate_damping)
        self.stiffness_error = float(stiffness_error)

    def _lengths(self, u: np.ndarray) -> tuple[np.ndarray, int]:
        per = 2 if self.model.planar else 3
        return self.model.segment_lengths + u[0::per], per

    def state(self, u: np.ndarray) -> np.ndarray:
        """``q = h(u)`` = ``(ΔL/L, a/ℓ, b/ℓ)`` per segment, ``ℓ = L + ΔL``."""
        ell, per = self._lengths(u)
        q = np.array(u, dtype=float)
        q[0::per] = u[0::per] / self.model.segment_lengths
        for k in range(1, per):
            q[k::per] = u[k::per] / ell
        return q

    def state_jacobian(self, u: np.ndarray) -> np.ndarray:
        """``H = ∂q/∂u`` (block lower-triangular, never singular)."""
        ell, per = self._lengths(u)
        n = u.shape[0]
        H = np.zeros((n, n))
        for i in range(n // per):
            H[per * i, per * i] = 1.0 / self.model.segment_lengths[i]
            for k in range(1, per):
                H[per * i + k, per * i] = -u[per * i + k] / ell[i] ** 2
                H[per * i + k, per * i + k] = 1.0 / ell[i]
        return H

    def torque(self, body: PCCBody, c_desired: np.ndarray) -> np.ndarray:
        """Generalised actuation ``τ`` (in ``u``) for the set-point configuration ``c_desired``."""
        return self.torque_smooth(body, self.model.to_smooth(c_desired))

    def torque_smooth(self, body: PCCBody, u_d: np.ndarray) -> np.ndarray:
        """Generalised actuation ``τ`` for the set-point in smooth coordinates ``u_d``."""
        u, w = body.u, body.w
        q, q_d = self.state(u), self.state(u_d)
        H = self.state_jacobian(u)
        ell, per = self._lengths(u)
        # Ḣ u̇ for κ = x/ℓ: −2 ẋ ℓ̇/ℓ² + 2 x ℓ̇²/ℓ³ (ε is linear).
        hdot_w = np.zeros_like(u)
        ldot = w[0::per]
        for k in range(1, per):
            hdot_w[k::per] = -2 * w[k::per] * ldot / ell**2 + 2 * u[k::per] * ldot**2 / ell**3
        q_acc = -self.kv * (H @ w) - self.kp * (q - q_d)
        u_acc = np.linalg.solve(H, q_acc - hdot_w)
        return body.mass_matrix() @ u_acc + body.coriolis() + (1 + self.stiffness_error) * body.elastic_torque(u_d) \
            + body.gravity_torque(u_d)
