"""PETER, the modular pneumatic soft arm (García-Samartín et al., JA 2025; SPEC section 2).

Frames and units: the base frame has its origin at the centre of the first module's bottom
plate, z up along the unbent arm. Inputs are inflation times ``t`` [s], three per module
(legs at ``α = 0°, 120°, 240°``), ordered module by module. Positions are in metres.

Two kinematics of the same legs, chosen with ``kinematics=``:

* ``"tilted"`` (default) — the paper's simulator (eqs. 2–5): each module's top is the plane
  through the three leg tops ``B_ij = A_ij + l_ij n_i``; the next module starts ``gap`` along
  the top's normal.
* ``"pcc"`` — the piecewise-constant-curvature realisation: each module is a circular arc of
  length ``L = mean(l)``, bent by ``θ`` in the direction ``φ`` given by the leg differences,
  followed by the rigid ``gap``. The PyBullet body realises exactly this (see :meth:`Peter.chain`).

Both come with analytic Jacobians (forward-mode derivatives, batched).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_finite, check_integer, check_nonnegative, check_positive
from soft_envs.geometry import bend_functions, cross, skew
from soft_envs.robots.base import ChainBody, KinematicModel
from soft_envs.robots.chain import (
    BASE_COLOUR,
    PLATE_COLOUR,
    Body,
    Chain,
    ChainLink,
    Cylinder,
    Limits,
    backbone_jacobian,
    backbone_points,
    bend_section,
    bend_section_jacobian,
    cylinder_inertia,
    section_colour,
    section_joint_values,
)
from soft_envs.robots.peter_columns import pcc_tip_columns, tilted_tip_columns
from soft_envs.robots.peter_single import pcc_single, tilted_single

KINEMATICS = ("tilted", "pcc")
DEFAULT_LEG_STIFFNESS = 1300.0  # N/m per leg (assumption, see Peter)
#: The most modules an arm may have (the paper built up to 4).
MAX_MODULES = 4
#: The most rigid links per module arc (a bound on the body's size, checked before it is built).
MAX_LINKS_PER_MODULE = 64

# Constant skew matrices d[w]×/da and d[w]×/db for w = (−b, a, 0).
_DW_DA = skew(np.array([0.0, 1.0, 0.0]))
_DW_DB = skew(np.array([-1.0, 0.0, 0.0]))


class Peter(ChainBody, KinematicModel):
    """Kinematic model of a PETER arm with ``n_modules`` stacked modules.

    Args:
        n_modules: 1 to :data:`MAX_MODULES` (4) modules.
        radius: radius of the circle the three legs stand on [m] (not given in the paper).
        gap: rigid distance between a module's top plate and the next module's bottom [m].
        leg_length_at_rest: leg length at zero inflation time [m] (paper eq. 1: 42.926 mm).
        leg_rate: leg elongation per second of inflation [m/s] (paper eq. 1: 10 mm/s).
        max_inflation_time: upper bound of every input [s] (lower bound 0).
        kinematics: ``"tilted"`` (paper) or ``"pcc"`` (the PyBullet body's kinematics).
        links_per_module: rigid links each module's arc is discretised into in the PyBullet body,
            1 to :data:`MAX_LINKS_PER_MODULE` (64).
        module_mass: mass of one module [kg] (body only).
        leg_stiffness: axial stiffness of one leg [N/m] about its inflated rest length (the
            soft body, :meth:`stiffness`). An assumption — the paper gives none: 1300 N/m makes
            0.5 kg sag a 2-module arm with every leg at 1 s by about 3 mm, as the real arm
            carries 0.5 kg "without changing its kinematic model"; a gas spring of the leg's
            size (``γ p A²/V`` with 2 bar absolute, 10 mm bore, 53 mm long) is about 1.6e3 N/m.
    """

    def __init__(
        self,
        n_modules: int = 2,
        *,
        radius: float = 0.045,
        gap: float = 0.017,
        leg_length_at_rest: float = 0.042926,
        leg_rate: float = 0.010,
        max_inflation_time: float = 2.0,
        kinematics: str = "tilted",
        links_per_module: int = 3,
        module_mass: float = 0.12,
        leg_stiffness: float = DEFAULT_LEG_STIFFNESS,
    ) -> None:
        check_integer("n_modules", n_modules, minimum=1, maximum=MAX_MODULES)
        if kinematics not in KINEMATICS:
            raise InvalidParameterError(f"kinematics must be one of {KINEMATICS}; got {kinematics!r}")
        for name, value in (("radius", radius), ("leg_length_at_rest", leg_length_at_rest),
                            ("leg_rate", leg_rate), ("max_inflation_time", max_inflation_time),
                            ("module_mass", module_mass), ("leg_stiffness", leg_stiffness)):
            check_positive(f"{name} [SI]", value)
        check_nonnegative(**{"gap [m]": gap})
        if radius > 1.0 or leg_length_at_rest > 1.0:
            raise InvalidParameterError("radius and leg lengths are in metres; got values above 1 m (mm given?)")
        check_integer("links_per_module", links_per_module, minimum=1, maximum=MAX_LINKS_PER_MODULE)
        self.n_modules = int(n_modules)
        self.radius = float(radius)
        self.gap = float(gap)
        self.leg_length_at_rest = float(leg_length_at_rest)
        self.leg_rate = float(leg_rate)
        self.max_inflation_time = float(max_inflation_time)
        self.kinematics = kinematics
        self.links_per_module = int(links_per_module)
        self.module_mass = float(module_mass)
        self.leg_stiffness = float(leg_stiffness)
        self.leg_angles = np.deg2rad([0.0, 120.0, 240.0])
        self.lower = np.zeros(3 * self.n_modules)
        self.upper = np.full(3 * self.n_modules, self.max_inflation_time)
        # Leg feet of the first module in the base frame, (3 legs, xyz).
        self._feet = self.radius * np.stack(
            (np.cos(self.leg_angles), np.sin(self.leg_angles), np.zeros(3)), axis=-1
        )
        # (L, a, b) of a module is linear in its three leg lengths: q = _Q_FROM_L @ l.
        k = 2.0 / (3.0 * self.radius)
        self._q_from_l = np.stack(
            (np.full(3, 1.0 / 3.0), -k * np.cos(self.leg_angles), -k * np.sin(self.leg_angles))
        )

    def __repr__(self) -> str:
        return (f"Peter(n_modules={self.n_modules}, radius={self.radius}, gap={self.gap}, "
                f"kinematics={self.kinematics!r}, links_per_module={self.links_per_module})")

    @property
    def reach(self) -> float:
        """Distance from the base to the tip of the fully extended, straight arm [m]."""
        return self.n_modules * (self.leg_length_at_rest + self.leg_rate * self.max_inflation_time) \
            + (self.n_modules - 1) * self.gap

    def with_parameters(self, **changes: Any) -> Peter:
        """The same arm with the constructor parameters named in ``changes`` replaced (e.g. a
        perturbed ``radius`` [m], ``module_mass`` [kg] or ``leg_stiffness`` [N/m])."""
        parameters: dict[str, Any] = dict(n_modules=self.n_modules, radius=self.radius, gap=self.gap,
                          leg_length_at_rest=self.leg_length_at_rest, leg_rate=self.leg_rate,
                          max_inflation_time=self.max_inflation_time, kinematics=self.kinematics,
                          links_per_module=self.links_per_module, module_mass=self.module_mass,
                          leg_stiffness=self.leg_stiffness)
        unknown = set(changes) - set(parameters)
        if unknown:
            raise InvalidParameterError(f"Peter has no parameter(s) {sorted(unknown)}")
        return Peter(**(parameters | changes))

    def with_kinematics(self, kinematics: str) -> Peter:
        """The same arm (same parameters) with the other kinematics."""
        return self.with_parameters(kinematics=kinematics)

    # ------------------------------------------------------------------ physical parameters

    def stiffness(self) -> np.ndarray:
        """Elastic stiffness per module of its arc ``(L, a, b)``: ``(3 k, 3/2 k r², 3/2 k r²)``, ``(N, 3)``.

        Three legs of stiffness ``k`` [N/m] (:attr:`leg_stiffness`) at radius ``r`` about the
        backbone: leg ``j`` of a module bent by ``(a, b)`` is ``l_j = L − r (a cos α_j +
        b sin α_j)`` long (:meth:`legs_from_arc`), so the energy ``½ k Σ (l_j − l_j,rest)²`` is
        ``½ (Δu)ᵀ diag(3k, 3/2 k r², 3/2 k r²) Δu`` exactly (``Σ cos α_j = Σ sin α_j =
        Σ cos α_j sin α_j = 0``, ``Σ cos² α_j = 3/2``): axial [N/m] and bending [N m/rad]
        stiffness. (A leg's ``k = E A / l`` makes the bending one the beam's ``E I / L`` with
        ``I = 3/2 A r²``.)
        """
        k = self.leg_stiffness
        row = np.array([3.0 * k, 1.5 * k * self.radius**2, 1.5 * k * self.radius**2])
        return np.tile(row, (self.n_modules, 1))

    def arc_from_legs(self, legs: np.ndarray) -> np.ndarray:
        """Arc parameters ``(L, a, b)`` per module [m, rad, rad] of leg lengths ``(..., N, 3)`` [m]."""
        return np.asarray(legs, dtype=float) @ self._q_from_l.T

    def legs_from_arc(self, arc: np.ndarray) -> np.ndarray:
        """Leg lengths [m] of arc parameters ``(..., N, 3)``: ``l_j = L − r (a cos α_j + b sin α_j)``."""
        arc = np.asarray(arc, dtype=float)
        return arc[..., :1] - self.radius * (arc[..., 1:2] * np.cos(self.leg_angles)
                                             + arc[..., 2:3] * np.sin(self.leg_angles))

    # ------------------------------------------------------------------ public kinematics

    def leg_lengths(self, t: np.ndarray) -> np.ndarray:
        """Leg lengths [m] (paper eq. 1), ``(..., n_modules, 3)``."""
        t = self.check_configuration(t)
        return (self.leg_length_at_rest + self.leg_rate * t).reshape(*t.shape[:-1], self.n_modules, 3)

    def forward(self, t: np.ndarray) -> np.ndarray:
        """Tip position [m] (centre of the last module's top), ``(3,)`` or ``(B, 3)``.

        One configuration runs the fused float path (:mod:`soft_envs.robots.peter_single`), a
        batch the vectorised numpy path; the two agree to 1e-15 m.
        """
        single = self._single_configuration(t)
        if single is not None:
            return np.array(self._single_kinematics(single, False)[0])
        return self.module_points(t)[..., -1, :]

    def jacobian(self, t: np.ndarray) -> np.ndarray:
        """Analytic ``d tip / d t`` [m/s], ``(3, 3N)`` or ``(B, 3, 3N)`` (single configuration: the
        fused float path, reverse mode; batch: numpy, forward mode)."""
        single = self._single_configuration(t)
        if single is not None:
            return np.array((self.__dict__.get("_single_call") or self._single_call())(single, True)[1])
        return self.module_points_jacobian(t)[1][..., -1, :, :]

    def forward_arms(self, t: np.ndarray, radius: np.ndarray | None = None) -> np.ndarray:
        """Tips ``(B, 3)`` [m] of ``B`` arms of this topology and kinematics for inflation times
        ``t`` ``(B, 3N)`` [s], each arm with its own leg-circle ``radius`` ``(B,)`` [m] (default:
        this model's), in the column form (:mod:`soft_envs.robots.peter_columns`: the single
        path's arithmetic on ``(B,)`` columns; equal to :meth:`forward` of the arm with that
        radius to 1e-15 m). ``t`` is not checked: the vector envs pass their own clipped inputs."""
        t = np.asarray(t, dtype=float)
        if radius is None:
            if t.shape[0] == 1 and (single := self._single_configuration(t[0])) is not None:
                return np.array(self._single_kinematics(single, False)[0])[None]  # (one arm: the float path)
            if self.kinematics == "tilted":
                return tilted_tip_columns(self._feet.tolist(), self.leg_length_at_rest, self.leg_rate, self.gap, t)
            return pcc_tip_columns(self._q_from_l.tolist(), self.leg_length_at_rest, self.leg_rate, self.gap, t)
        radius = np.asarray(radius, dtype=float)
        cos, sin = np.cos(self.leg_angles), np.sin(self.leg_angles)
        if self.kinematics == "tilted":  # as _feet: radius * (cos α, sin α, 0)
            feet = [[radius * cos[j], radius * sin[j], 0.0] for j in range(3)]
            return tilted_tip_columns(feet, self.leg_length_at_rest, self.leg_rate, self.gap, t)
        k = 2.0 / (3.0 * radius)  # as _q_from_l
        q_from_l = [[1.0 / 3.0] * 3, [-k * cos[j] for j in range(3)], [-k * sin[j] for j in range(3)]]
        return pcc_tip_columns(q_from_l, self.leg_length_at_rest, self.leg_rate, self.gap, t)

    def _single_configuration(self, t: np.ndarray) -> list[float] | None:
        """``t`` as a list of floats when it is one finite configuration ``(3N,)``, else ``None``
        (batches, and anything :meth:`check_configuration` must reject, take the checked path)."""
        arr = np.asarray(t, dtype=float)
        if arr.shape != self.lower.shape:
            return None
        values = arr.tolist()
        # A finite sum means every value is finite (an inf or NaN makes the sum inf or NaN; an
        # overflowing sum of finite values just takes the checked path).
        return values if math.isfinite(sum(values)) else None

    def _single_kinematics(self, t: list[float], with_jacobian: bool) -> tuple[list[float], list | None]:
        """Tip and Jacobian (three row lists) of one configuration (plain floats), this arm's kinematics."""
        return (self.__dict__.get("_single_call") or self._single_call())(t, with_jacobian)

    def _single_call(self):
        """This arm's fused kinematics ``f(t, with_jacobian)`` with the model's parameters bound
        as plain floats, made once."""
        if self.kinematics == "tilted":
            call = partial(tilted_single, tuple(map(tuple, self._feet.tolist())))
        else:
            call = partial(pcc_single, tuple(map(tuple, self._q_from_l.tolist())))
        call = partial(call, self.leg_length_at_rest, self.leg_rate, self.gap)
        self.__dict__["_single_call"] = call
        return call

    def module_points(self, t: np.ndarray) -> np.ndarray:
        """Centre of every module's top [m], ``(N, 3)`` or ``(B, N, 3)``."""
        t = self.check_configuration(t)
        points, _ = self._evaluate(np.atleast_2d(t), with_jacobian=False)
        return points[0] if t.ndim == 1 else points

    def module_points_jacobian(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Module top centres and their Jacobians: ``(N, 3)``, ``(N, 3, 3N)`` (batched: leading ``B``)."""
        t = self.check_configuration(t)
        points, jac = self._evaluate(np.atleast_2d(t), with_jacobian=True)
        assert jac is not None  # asked for
        return (points[0], jac[0]) if t.ndim == 1 else (points, jac)

    def _evaluate(self, t: np.ndarray, with_jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
        if self.kinematics == "tilted":
            return self._tilted(t, with_jacobian)
        return self._pcc(t, with_jacobian)

    # ------------------------------------------------------------------ tilted-plane model

    def _tilted(self, t: np.ndarray, with_jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """Paper eqs. 2–5 with forward-mode derivatives; derivative arrays are ``(B, P, ...)``."""
        batch, n_in = t.shape
        lengths = (self.leg_length_at_rest + self.leg_rate * t).reshape(batch, self.n_modules, 3)
        feet = np.broadcast_to(self._feet, (batch, 3, 3))
        normal = np.broadcast_to(np.array([0.0, 0.0, 1.0]), (batch, 3))
        points = np.empty((batch, self.n_modules, 3))
        if with_jacobian:
            d_feet = np.zeros((batch, n_in, 3, 3))
            d_normal = np.zeros((batch, n_in, 3))
            jac = np.empty((batch, self.n_modules, 3, n_in))
        legs = np.arange(3)
        last = self.n_modules - 1
        for i in range(self.n_modules):
            l_i = lengths[:, i, :]
            tops = feet + l_i[:, :, None] * normal[:, None, :]  # (B, leg, xyz)
            points[:, i] = (tops[:, 0] + tops[:, 1] + tops[:, 2]) * (1.0 / 3.0)
            if i == last and not with_jacobian:
                break
            u, v = tops[:, 1] - tops[:, 0], tops[:, 2] - tops[:, 0]
            m_raw = cross(u, v)
            m_norm = np.sqrt((m_raw * m_raw).sum(axis=-1))[:, None]
            m = m_raw / m_norm
            if with_jacobian:
                d_tops = d_feet + l_i[:, None, :, None] * d_normal[:, :, None, :]
                d_tops[:, 3 * i + legs, legs, :] += self.leg_rate * normal[:, None, :]
                jac[:, i] = ((d_tops[:, :, 0] + d_tops[:, :, 1] + d_tops[:, :, 2]) * (1.0 / 3.0)).transpose(0, 2, 1)
                if i == last:
                    break
                du, dv = d_tops[:, :, 1] - d_tops[:, :, 0], d_tops[:, :, 2] - d_tops[:, :, 0]
                dm_raw = cross(du, v[:, None, :]) + cross(u[:, None, :], dv)
                proj = (m[:, None, :] * dm_raw).sum(axis=-1)
                d_normal = (dm_raw - proj[:, :, None] * m[:, None, :]) / m_norm[:, None, :]
                d_feet = d_tops + self.gap * d_normal[:, :, None, :]
            feet = tops + self.gap * m[:, None, :]
            normal = m
        return points, (jac if with_jacobian else None)

    # ------------------------------------------------------------------ PCC realisation

    def arc_parameters(self, t: np.ndarray) -> np.ndarray:
        """Per-module arc parameters ``(L, a, b)`` with ``a = θ cos φ``, ``b = θ sin φ`` [m, rad, rad].

        ``L`` is the mean leg length, ``θ`` the bend angle, ``φ`` the bending direction;
        shape ``(..., N, 3)``. (Linear in the leg lengths, hence in ``t``.)
        """
        return self.leg_lengths(t) @ self._q_from_l.T

    def _pcc(self, t: np.ndarray, with_jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
        batch, n_in = t.shape
        lengths = (self.leg_length_at_rest + self.leg_rate * t).reshape(batch, self.n_modules, 3)
        params = lengths @ self._q_from_l.T  # (B, N, 3)
        rot = np.broadcast_to(np.eye(3), (batch, 3, 3))
        pos = np.zeros((batch, 3))
        points = np.empty((batch, self.n_modules, 3))
        if with_jacobian:
            d_rot = np.zeros((batch, n_in, 3, 3))
            d_pos = np.zeros((batch, n_in, 3))
            jac = np.empty((batch, self.n_modules, 3, n_in))
            dq_dt = self.leg_rate * self._q_from_l  # d(L, a, b) / d(t_1, t_2, t_3)
        for i in range(self.n_modules):
            L, a, b = params[:, i, 0], params[:, i, 1], params[:, i, 2]
            s, ds, c, dc = bend_functions(a * a + b * b)
            arc_p = np.stack((L * c * a, L * c * b, L * s), axis=-1)  # (B, 3) in the module frame
            W = skew(np.stack((-b, a, np.zeros_like(a)), axis=-1))
            W2 = W @ W
            arc_R = np.eye(3) + s[:, None, None] * W + c[:, None, None] * W2
            top = pos + np.einsum("bij,bj->bi", rot, arc_p)
            points[:, i] = top
            new_rot = rot @ arc_R
            if with_jacobian:
                # Derivatives of the arc pose with respect to (L, a, b), (B, 3 params, ...).
                dp = np.empty((batch, 3, 3))
                dp[:, 0] = arc_p / L[:, None]
                dp[:, 1] = L[:, None] * np.stack((c + 2 * a * a * dc, 2 * a * b * dc, 2 * a * ds), axis=-1)
                dp[:, 2] = L[:, None] * np.stack((2 * a * b * dc, c + 2 * b * b * dc, 2 * b * ds), axis=-1)
                dR = np.zeros((batch, 3, 3, 3))
                for k, (x, dW) in enumerate(((a, _DW_DA), (b, _DW_DB)), start=1):
                    dR[:, k] = (2 * x * ds)[:, None, None] * W + s[:, None, None] * dW \
                        + (2 * x * dc)[:, None, None] * W2 + c[:, None, None] * (dW @ W + W @ dW)
                # Chain into the inputs of this module: (B, 3 inputs, ...).
                dp_dt = np.einsum("qj,bqi->bji", dq_dt, dp)
                dR_dt = np.einsum("qj,bqik->bjik", dq_dt, dR)
                sl = slice(3 * i, 3 * i + 3)
                d_top = d_pos + np.einsum("bpij,bj->bpi", d_rot, arc_p)
                d_top[:, sl] += np.einsum("bij,bpj->bpi", rot, dp_dt)
                jac[:, i] = d_top.transpose(0, 2, 1)
                d_new_rot = d_rot @ arc_R[:, None]
                d_new_rot[:, sl] += rot[:, None] @ dR_dt
                d_rot = d_new_rot
                d_pos = d_top + self.gap * d_rot[:, :, :, 2]
            rot = new_rot
            pos = top + self.gap * rot[:, :, 2]
        return points, (jac if with_jacobian else None)

    # ------------------------------------------------------------------ PyBullet body

    def _nominal_link_length(self) -> float:
        return self.leg_length_at_rest / self.links_per_module

    def body_joint_positions(self, t: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """Joint positions that put the body (:meth:`chain`) in the PCC shape of inflation times ``t``.

        Per module, in joint order: the bending-plane angle ``φ`` (revolute z), then
        ``links_per_module`` pairs (revolute y bend, prismatic extension), the last half bend
        (revolute y) and ``−φ`` (revolute z) to the top plate. Bends are θ/2m, θ/m, …, θ/m,
        θ/2m; each chord spans ``2 sin(θ/2m)/κ`` so every joint lies exactly on the arc and
        module ends match the PCC model for any link count. ``(φ, θ)`` and ``(φ ± π, −θ)`` are
        the same shape: the one nearest ``reference`` (previous joint positions) is returned,
        otherwise ``φ ∈ (−π/2, π/2]``. Angles [rad], extensions [m], shape ``(n_joints,)``.
        """
        t = self.check_configuration(t)
        if t.ndim != 1:
            raise InvalidParameterError("body_joint_positions takes a single configuration")
        # Scalar math per module (at most 4): this runs every control step of the env.
        params = ((self.leg_length_at_rest + self.leg_rate * t).reshape(self.n_modules, 3)
                  @ self._q_from_l.T).tolist()
        m = self.links_per_module
        per_module = 2 * m + 3
        nominal = self._nominal_link_length()
        out = np.empty((self.n_modules, per_module))
        for i, (L, a, b) in enumerate(params):
            theta = math.hypot(a, b)
            phi = math.atan2(b, a) if theta > 0 else 0.0
            if reference is not None:
                k = round((reference[i * per_module] - phi) / math.pi)
            else:
                k = -int(math.copysign(1.0, phi)) if (phi > math.pi / 2 or phi <= -math.pi / 2) else 0
            phi, theta = phi + k * math.pi, (theta if k % 2 == 0 else -theta)
            half = theta / (2 * m)
            chord = (L / m) * (math.sin(half) / half if abs(half) > 1e-4 else 1.0 - half * half / 6.0)
            section_joint_values(phi, theta, chord - nominal, m, out=out[i])
        return out.ravel()

    def chain(self, payload: float = 0.0) -> Chain:
        """The PyBullet body of the PCC kinematics as a rigid-link chain (plain data, base frame).

        Per module ``m{i}_``: :func:`~soft_envs.robots.chain.bend_section` with
        ``links_per_module`` bend/slice pairs and the top plate, the next module's first joint
        ``gap`` above it (joint values: :meth:`body_joint_positions`). Every link has its centre
        of mass at its frame origin (PyBullet reports that pose exactly; its link-frame output
        loses ~1e-8 m through the inertial-frame inverse), and the module's mass is shared
        evenly by its ``2m + 3`` links (a bellows module's mass is spread along it; even masses
        also keep PyBullet's motor solver stable under payloads). ``payload`` [kg] is added to
        the last plate (the real arm carries up to 0.5 kg). Motor limits are set by the simulation.
        """
        if check_finite("payload [kg]", payload) < 0:
            raise InvalidParameterError(f"payload must be >= 0 kg; got {payload!r}")
        m = self.links_per_module
        nominal = self._nominal_link_length()
        link_mass = self.module_mass / (2 * m + 3)
        hinge = Body(link_mass, cylinder_inertia(link_mass, 0.7 * self.radius, nominal))  # legs' bundle: 0.7 r
        revolute = Limits(-4 * np.pi, 4 * np.pi, effort=100.0, velocity=10.0)
        prismatic = Limits(-0.5 * nominal, nominal, effort=100.0, velocity=1.0)
        plate_length = max(self.gap, 0.004)
        links: list[ChainLink] = []
        for i in range(self.n_modules):
            bend = Body(hinge.mass, hinge.inertia, visuals=(
                Cylinder(0.7 * self.radius, 0.8 * nominal, nominal / 2, section_colour(i)),))
            mass = link_mass + (payload if i == self.n_modules - 1 else 0.0)
            plate = Body(mass, cylinder_inertia(mass, self.radius, plate_length),
                         visuals=(Cylinder(self.radius, plate_length, self.gap / 2, PLATE_COLOUR),))
            links += bend_section(f"m{i}", m, nominal, entry_offset=self.gap if i else 0.0, plane=hinge, bend=bend,
                                  extension=hinge, tilt=hinge, end=plate, extension_name="slice",
                                  end_name="plate", revolute=revolute, prismatic=prismatic)
        base = Body(visuals=(Cylinder(self.radius * 1.15, 0.006, -0.003, BASE_COLOUR),))
        return Chain(f"peter_{self.n_modules}", base, tuple(links), body_radius=0.7 * self.radius)

    def link_frames(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Analytic frames of every body link (order of ``chain().names``) in the base frame.

        Returns positions ``(K, 3)`` [m] and rotation matrices ``(K, 3, 3)`` for one ``t``.
        """
        t = self.check_configuration(t)
        if t.ndim != 1:
            raise InvalidParameterError("link_frames takes a single configuration")
        return self.chain().frames(self.body_joint_positions(t))[:2]

    # ------------------------------------------------------------------ the body's backbone

    def backbone(self, t: np.ndarray) -> np.ndarray:
        """The body's backbone points ``(P, 3)`` [m, base frame] for one ``t``: the base origin, then the
        frame origins of ``chain().backbone_links()`` (capsules of :attr:`body_radius` on the segments
        between consecutive points)."""
        t = self.check_configuration(t)
        if t.ndim != 1:
            raise InvalidParameterError("backbone takes a single configuration")
        return backbone_points(self._body_chain(), self.body_joint_positions(t))

    def backbone_jacobian(self, t: np.ndarray) -> np.ndarray:
        """``∂ backbone / ∂ t`` ``(P, 3, 3N)`` [m/s] for one ``t`` (:meth:`backbone_kinematics`)."""
        return self.backbone_kinematics(t)[1]

    def backbone_kinematics(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The backbone points ``(P, 3)`` [m] and their Jacobian ``(P, 3, 3N)`` [m/s] for one ``t``.

        Analytic: the chain's joint axes give ``∂points/∂(joint values)``
        (:func:`~soft_envs.robots.chain.backbone_jacobian`), and per module the joint values
        :meth:`body_joint_positions` are those of ``(φ, θ, e)`` with the chord extension
        ``e = (L/m) sin(θ/2m)/(θ/2m) − L₀/m``, through the smooth ``(L, a, b)`` (linear in ``t``;
        :func:`~soft_envs.robots.chain.bend_section_jacobian`, which also takes the straight
        module's limit, where ``(θ, φ)`` is singular).
        """
        t = self.check_configuration(t)
        if t.ndim != 1:
            raise InvalidParameterError("backbone_kinematics takes a single configuration")
        chain = self._body_chain()
        values = self.body_joint_positions(t)
        points, jac_v, positions, rotations = backbone_jacobian(chain, values)
        point_links = np.array([-1, *chain.backbone_links()])
        m = self.links_per_module
        per_module = 2 * m + 3
        params = ((self.leg_length_at_rest + self.leg_rate * t).reshape(self.n_modules, 3) @ self._q_from_l.T)
        d_params = self.leg_rate * self._q_from_l  # d(L, a, b)/d(t1, t2, t3)
        jac = np.empty((points.shape[0], 3, 3 * self.n_modules))
        for i in range(self.n_modules):
            first = i * per_module
            L = float(params[i, 0])
            h = float(values[first + 1])  # θ/2m, signed as the joint values have it
            if abs(h) > 1e-4:
                sinc, d_sinc = math.sin(h) / h, (h * math.cos(h) - math.sin(h)) / (h * h)
            else:
                sinc, d_sinc = 1.0 - h * h / 6.0, -h / 3.0 + h**3 / 30.0
            d_extension = (sinc / m, (L / m) * d_sinc / (2 * m))  # ∂e/∂L, ∂e/∂θ
            columns = bend_section_jacobian(jac_v, points, point_links, positions, rotations, values, first, m,
                                            d_extension)
            jac[:, :, 3 * i:3 * i + 3] = columns @ d_params
        return points, jac

    def urdf(self, payload: float = 0.0) -> str:
        """URDF text of the PyBullet body (:meth:`chain` with ``payload`` [kg] on the last plate)."""
        return self.chain(payload).urdf()
