"""The PCC arm in PyBullet on the elastic soft-arm core, and the paper's PD + feed-forward law.

Body (:class:`PCCBody`). A :class:`~soft_envs.robots.PCCArm` is a chain of sections
(:mod:`soft_envs.sim.soft_arm`) with *tangent* links: segment ``i`` has the smooth coordinates
``u = (ΔL, a, b)`` (planar ``(ΔL, θ)``), relaxed and straight at ``u = 0``; the paper's state is
``q = (ε, κx, κy) = (ΔL/L, a/ℓ, b/ℓ)``, ``ℓ = L + ΔL``. Stiffness: :meth:`PCCArm.stiffness`
(by default calibrated on the chamber-pressure bounds, :mod:`soft_envs.robots.pcc_pressure`);
masses: :meth:`PCCArm.chain` (the paper's 17.3 g per segment; a tip payload as a point mass).
Rayleigh damping ``D = β K`` with ``β = 5e-3 s`` by default (an assumption: the paper took its
damping from its ref. 29 without listing it): damping ratios ``β ω / 2`` of 0.09 on the
two-segment arm's first bending mode (36 rad/s), 0.43 on one segment's (172 rad/s), 0.025 on
the four-segment planar arm's (10 rad/s); critical from 400 rad/s up (the axial modes).

Controller (:class:`PDFeedforward`, paper eq. 10 as in SPEC section 3) on ``q``:
``τ = M (q̈_d − k_v (q̇ − q̇_d) − k_p (q − q_d)) + C + D + K(q_d) + G(q_d)`` with
``q̇_d = q̈_d = 0`` as in the paper; the desired ``q̈`` is mapped to ``ü`` exactly through
``q = h(u)`` (``ü = H⁻¹ (q̈ − Ḣ u̇)``, ``H`` is never singular). Its model is the arm's,
without a payload unless told (``known_payload``): a payload it does not know is a
disturbance its gains must reject. Its ``+D`` term cancels the arm's damping: the modes far
above ``√k_p`` are then damped by ``k_v`` alone (ratio ``k_v / 2ω``, 0.001–0.01) — a large
set-point step can make them ring and, through the arm's nonlinearity, grow; a regulator's
lag (chamber actuation) or ``compensate_damping=False`` keeps the arm's own damping there.
Behind the regulators' dead time (0.1-0.15 s) it is the feedback itself, ``kp`` above all, that
arrives out of phase on the first bending mode (``−kp sin(ωτ)/ω + kv cos(ωτ)`` of damping): the
envs then run the law with gains scaled for any delay and no ``+D`` term
(:func:`~soft_envs.sim.actuators.delay_robust_gains`, ``PCCTrack-v0``'s ``delay_robust_gains``).
"""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_finite, check_nonnegative
from soft_envs.geometry import STANDARD_GRAVITY
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.sim.damping import PCC_RAYLEIGH_STIFFNESS
from soft_envs.sim.sections import SectionMap
from soft_envs.sim.soft_arm import SoftArmBody

DEFAULT_RAYLEIGH_STIFFNESS = PCC_RAYLEIGH_STIFFNESS  # s (assumption, see the module docstring)


class PCCBody(SoftArmBody):
    """A :class:`PCCArm` in a PyBullet ``client`` with elastic reduced-coordinate dynamics.

    Args:
        client: a ``BulletClient`` owned by the caller.
        model: the arm (3-D or planar).
        gravity: standard gravity [m/s²] along the world's −z (the arm's base z points up).
        rayleigh_mass, rayleigh_stiffness: ``α`` [1/s] and ``β`` [s] of ``D = α M + β K``.
        payload: tip mass [kg] (part of the simulated body).
        base_position: where the arm's foot is in the world [m].
        base_orientation: the arm's base frame in the world, quaternion ``(x, y, z, w)``
            (default upright; measurements are in the base frame).
        backend: ``"batched"`` (default) or ``"pybullet"`` (:class:`SoftArmBody`).

    State: :attr:`u` (smooth configuration), :attr:`w` (its rate); :attr:`configuration` is
    ``(ΔL, θ, φ)`` per segment (planar ``(ΔL, θ)``), continuous in time.
    """

    def __init__(
        self,
        client,
        model: PCCArm,
        *,
        gravity: float = STANDARD_GRAVITY,
        rayleigh_mass: float = 0.0,
        rayleigh_stiffness: float = DEFAULT_RAYLEIGH_STIFFNESS,
        payload: float = 0.0,
        base_position: tuple[float, float, float] = (0.0, 0.0, 0.0),
        base_orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0),
        backend: str = "batched",
    ) -> None:
        self.model = model
        self.payload = float(payload)
        sections = SectionMap(model.links_per_segment, model.segment_lengths, planar=model.planar)
        k = model.stiffness()
        stiffness = k[:, :2].ravel() if model.planar else np.stack((k[:, 0], k[:, 1], k[:, 1]), axis=-1).ravel()
        super().__init__(client, model.chain(payload), sections, stiffness, gravity=gravity,
                         rayleigh_mass=rayleigh_mass, rayleigh_stiffness=rayleigh_stiffness,
                         base_position=base_position, base_orientation=base_orientation, backend=backend)

    def set_model(self, model: PCCArm, payload: float = 0.0) -> None:
        """Simulate ``model`` with ``payload`` [kg]: this arm with another segment mass (the same
        segments and links), on the same PyBullet body."""
        if (model.n_segments, model.links_per_segment, model.planar) != \
                (self.model.n_segments, self.model.links_per_segment, self.model.planar) or \
                not np.array_equal(model.segment_lengths, self.model.segment_lengths):
            raise InvalidParameterError("set_model takes the same arm with another mass")
        self.model, self.payload = model, float(payload)
        self.set_link_dynamics(model.chain(payload))

    def reset(self, c: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Put the arm in configuration ``c`` at rest (or with smooth-coordinate rate ``velocity``)."""
        c = self.model.check_configuration(c)
        if c.ndim != 1:
            raise InvalidParameterError("reset takes a single configuration")
        if not self.model.planar:  # keep the given (θ, φ) representation
            self.c = np.array(c, dtype=float)
        self.u = self.model.to_smooth(c)
        self.w = np.zeros(self.model.n_dof) if velocity is None else np.array(velocity, dtype=float)
        self.a = np.zeros(self.model.n_dof)
        self.time = 0.0
        self._update()

    @property
    def configuration(self) -> np.ndarray:
        """Current ``(ΔL, θ, φ)`` per segment (``φ`` wrapped into ``[−π, π]``; planar ``(ΔL, θ)``)."""
        if self.model.planar:
            return self.u.copy()
        c = self.c.copy()
        c[2::3] = np.angle(np.exp(1j * c[2::3]))
        return c

    @property
    def state(self) -> np.ndarray:
        """The paper's state ``(ε, κx, κy)`` per segment (planar: ``(ε, κ)``)."""
        return self.model.pcc_state(self.configuration)


class PDFeedforward:
    """The paper's PD + feed-forward law on the state ``(ε, κx, κy)`` per segment (module docstring).

    Args:
        model: the arm.
        kp: proportional gain [1/s²] (the paper: 80).
        kv: derivative gain [1/s] (the paper: 3).
        compensate_damping: include the ``+D u̇`` term (SPEC's form of the law); with a body
            driven directly the body applies it implicitly (``step(..., cancel_damping=True)``,
            which also holds the arm's ``C u̇`` at the step's start, where the law's cancels it).
        stiffness_error: relative error of the controller's stiffness model: the feed-forward
            uses ``(1 + stiffness_error) K`` (0 = exact model), to measure model sensitivity.
        known_payload: the tip payload [kg] the controller's model includes (default none): the
            difference to the body's payload is taken out of its ``M`` and ``G(q_d)`` (a point
            mass at the tip; its velocity-product term is kept).
    """

    def __init__(self, model: PCCArm, kp: float = 80.0, kv: float = 3.0, *, compensate_damping: bool = True,
                 stiffness_error: float = 0.0, known_payload: float = 0.0) -> None:
        if not (check_finite("kp", kp) >= 0 and check_finite("kv", kv) >= 0):
            raise InvalidParameterError(f"kp and kv must be >= 0; got {kp!r}, {kv!r}")
        if check_finite("stiffness_error", stiffness_error) <= -1:
            raise InvalidParameterError(f"stiffness_error must be > -1; got {stiffness_error!r}")
        check_nonnegative(known_payload=known_payload)
        self.model = model
        self.kp, self.kv = float(kp), float(kv)
        self.compensate_damping = bool(compensate_damping)
        self.stiffness_error = float(stiffness_error)
        self.known_payload = float(known_payload)

    def _segments(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``u`` as ``(N, per)`` and the arc lengths ``ℓ = L + ΔL`` ``(N,)``."""
        s = np.asarray(u, dtype=float).reshape(self.model.n_segments, self.model.per_segment)
        return s, self.model.segment_lengths + s[:, 0]

    def state(self, u: np.ndarray) -> np.ndarray:
        """``q = h(u)`` = ``(ΔL/L, a/ℓ, b/ℓ)`` per segment, ``ℓ = L + ΔL``."""
        s, ell = self._segments(u)
        q = s / ell[:, None]
        q[:, 0] = s[:, 0] / self.model.segment_lengths
        return q.ravel()

    def state_jacobian(self, u: np.ndarray) -> np.ndarray:
        """``H = ∂q/∂u`` (block lower-triangular, never singular)."""
        s, ell = self._segments(u)
        per = self.model.per_segment
        n = s.size
        H = np.zeros((n, n))
        for i in range(s.shape[0]):
            H[per * i, per * i] = 1.0 / self.model.segment_lengths[i]
            for k in range(1, per):
                H[per * i + k, per * i] = -s[i, k] / ell[i] ** 2
                H[per * i + k, per * i + k] = 1.0 / ell[i]
        return H

    def state_rate(self, u: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``q̇ = H u̇``."""
        s, ell = self._segments(u)
        v = np.asarray(w, dtype=float).reshape(s.shape)
        rate = (v - s * (v[:, :1] / ell[:, None])) / ell[:, None]
        rate[:, 0] = v[:, 0] / self.model.segment_lengths
        return rate.ravel()

    def smooth_acceleration(self, u: np.ndarray, w: np.ndarray, q_acc: np.ndarray) -> np.ndarray:
        """``ü`` with ``q̈ = q_acc``: ``ü = H⁻¹ (q̈ − Ḣ u̇)`` (``H`` block lower-triangular, solved per segment)."""
        s, ell = self._segments(u)
        v = np.asarray(w, dtype=float).reshape(s.shape)
        qa = np.asarray(q_acc, dtype=float).reshape(s.shape)
        ldot = v[:, :1]
        # Ḣ u̇ for κ = x/ℓ: −2 ẋ ℓ̇/ℓ² + 2 x ℓ̇²/ℓ³ (ε is linear).
        hdot_w = (-2.0 * v * ldot + 2.0 * s * ldot**2 / ell[:, None]) / ell[:, None] ** 2
        out = np.empty_like(s)
        out[:, 0] = self.model.segment_lengths * qa[:, 0]
        out[:, 1:] = ell[:, None] * (qa[:, 1:] - hdot_w[:, 1:]) + s[:, 1:] * (out[:, :1] / ell[:, None])
        return out.ravel()

    def torque(self, body: PCCBody, c_desired: np.ndarray) -> np.ndarray:
        """Generalised actuation ``τ`` (in ``u``) for the set-point configuration ``c_desired``."""
        return self.torque_smooth(body, self.model.to_smooth(c_desired))

    def torque_smooth(self, body: PCCBody, u_d: np.ndarray, *, include_damping: bool = False) -> np.ndarray:
        """Generalised actuation ``τ`` for the set-point in smooth coordinates ``u_d``.

        ``include_damping`` adds the law's ``+D u̇`` explicitly (for actuators that cannot apply
        it implicitly, e.g. chamber pressures); otherwise it is left to
        ``step(..., cancel_damping=compensate_damping)``.
        """
        u, w = body.u, body.w
        q_acc = -self.kv * self.state_rate(u, w) - self.kp * (self.state(u) - self.state(u_d))
        u_acc = self.smooth_acceleration(u, w, q_acc)
        M, G_d = body.mass_matrix(), body.gravity_torque(u_d)
        unknown = getattr(body, "payload", 0.0) - self.known_payload
        if unknown:
            M, G_d = self._without_payload(unknown, u, u_d, M, G_d, body.gravity)
        tau = M @ u_acc + body.coriolis() + (1 + self.stiffness_error) * body.elastic_torque(u_d) + G_d
        if include_damping and self.compensate_damping:
            tau = tau + (body.beta * body.stiffness * w if body.alpha == 0.0 else body.damping_matrix() @ w)
        return tau

    def _without_payload(self, mass: float, u: np.ndarray, u_d: np.ndarray, M: np.ndarray, G_d: np.ndarray,
                         gravity: float) -> tuple[np.ndarray, np.ndarray]:
        """``M`` and ``G(u_d)`` with a tip point mass ``mass`` taken out (``m JᵀJ``, ``m g ∂z/∂u``)."""
        _, J = self.model.smooth_kinematics(u)
        _, J_d = self.model.smooth_kinematics(u_d)
        return M - mass * J.T @ J, G_d - mass * gravity * J_d[2]
