"""PETER calibrated on a robot's own samples: the nominal model's physical parameters, fitted.

:func:`calibrate` (``calibrate(model, times, tips)``)
fits, by least squares on ``(inflation times, measured tip)`` samples, the parameters through
which a real arm differs from its model, and returns a :class:`CalibratedPeter` that any IK
solver plans on (it is a :class:`~soft_envs.robots.base.KinematicModel` with an analytic
Jacobian up to one finite-difference Hessian, below). The parameters, per group (``fit=``):

* ``"gain"`` — each leg's fill gain ``g_j`` and ``"offset"`` its length at zero inflation
  minus eq. 1's ``o_j`` [m]; ``"leak"`` — the length ``λ_j`` [m] each leg has lost to leaks by
  the time its tip is read (a leg cannot leak below its deflated length): leg ``j`` is
  ``l_j = l₀ + o_j + max(g_j v t_j − λ_j, 0)`` (eq. 1 per leg, less its leak);
* ``"radius"`` — the leg circle's radius [m] (the paper does not give it);
* ``"loads"`` — the effective mass [kg] hanging at each module's top (the arm's own weight,
  lumped, plus any payload at the tip), which sags the compliant legs: the arm is at rest where
  the legs' springs balance gravity, ``k v² (t_eff − s) + g Σ_i M_i ∂(e·p_i)/∂t = 0`` (leg
  stiffness ``k``, ``v`` eq. 1's rate, ``s`` the unloaded legs' times ``(l − l₀)/v``, ``p_i`` the
  module tops, ``e`` the world's up in the base frame), solved by fixed-point iteration. Checked
  against the soft PyBullet arm at rest (``tests/robots/test_peter_calibration.py``): a 0.5 kg
  payload's 3–4 mm sag to 3 µm with light modules, 34 µm with the 0.12 kg modules lumped;
* ``"tilt"`` — the base's rotation about the x and y axes of the frame the tips are measured
  in [rad] (a rotation vector ``(θx, θy, 0)``; tips are ``R p``).

What tip positions can and cannot tell (identifiability): a static tip depends on the loads and
the leg stiffness only through their ratio ``M / k`` (twice the mass on twice as stiff legs sags
the same), so the loads are fitted at the model's nominal stiffness — an *effective* mass, not
the payload; the fill gain of every leg and a supply pressure common to all are one product per
leg; a leg that leaks at a constant rate, read a fixed time ``T`` after its command, has lost
``λ = rate · (T − valve delay)`` — identifiable from the short inflations it empties (below
``λ / (g v)``, a few tenths of a second), and valid for tips read at that same time only (a leak
read at another time than it was calibrated at is not a parameter: it drifts); the radius is told
from the common gain of a module's legs only by bending (the radius scales bends, not lengths)
and the tilt from the first module's offsets only by the lever arm (the tilt turns the arm about
its foot, a bend about the module's arc) — both are identifiable with samples spread over the
workspace, correlated with the others (:attr:`CalibratedPeter.calibration` lists each
parameter's standard error and the largest correlation). Dynamic effects (a payload still
swinging, valve delays) and measurement noise are not parameters: they stay in the residual.

The fit is a maximum a-posteriori estimate: the residuals are the tip errors divided by the
sensor noise ``noise`` [m], plus each parameter's distance from its nominal value divided by its
prior width (:data:`PRIOR_WIDTHS`, assumptions about how far a real arm strays from the model,
as wide as the ranges of ``PeterReach-v0``'s ``realism="realistic"`` and more), which keeps
poorly identified combinations near the model with few samples.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import STANDARD_GRAVITY, quaternion_from_rotation_vector, quaternion_to_matrix
from soft_envs.robots.base import KinematicModel, check_target
from soft_envs.robots.peter import Peter

GROUPS = ("gain", "offset", "leak", "radius", "loads", "tilt")
#: Prior widths (one standard deviation) of the calibrated parameters about the nominal model
#: [assumed: at least the realistic preset's ranges]: gain [1], offset [m], leak [m], radius
#: (relative), loads [kg], tilt [rad].
PRIOR_WIDTHS = {"gain": 0.3, "offset": 3e-3, "leak": 1.5e-3, "radius": 0.1, "loads": 0.5, "tilt": 0.05}
LEAK_START = 5e-4  # m, the leaks' (and offsets') starting value in the fit (see calibrate)
SAG_TOLERANCE = 1e-7  # s (1 nm of leg), fixed-point tolerance of the sag's effective times
SAG_ITERATIONS = 30
HESSIAN_STEP = 1e-6  # s, forward-difference step of the sag's Hessian


def nominal_loads(arm: Peter) -> np.ndarray:
    """The arm's own weight lumped at the module tops [kg]: half of each module's mass at its top,
    half at its foot (the previous module's top; the first module's foot is the base)."""
    loads = np.full(arm.n_modules, 0.5 * arm.module_mass)
    loads[:-1] += 0.5 * arm.module_mass
    return loads


class CalibratedPeter(KinematicModel):
    """A PETER arm with per-leg gains and offsets, lumped loads and a tilted base (module docstring).

    Args:
        arm: the nominal model with the calibrated radius (its kinematics, ``"pcc"`` or
            ``"tilted"``, is kept; its ``leg_stiffness`` turns loads into sag).
        leg_gain: fill gain per leg ``(3N,)`` [1].
        leg_offset: length at zero inflation minus eq. 1's ``l₀``, per leg ``(3N,)`` [m].
        leak_loss: length lost to leaks by the time the tip is read, per leg ``(3N,)`` [m] (>= 0).
        loads: effective mass at each module's top ``(N,)`` [kg] (0: no sag).
        base_tilt: base rotation about x and y ``(2,)`` [rad].
        gravity: [m/s²].
    """

    def __init__(self, arm: Peter, *, leg_gain: Any = 1.0, leg_offset: Any = 0.0, leak_loss: Any = 0.0,
                 loads: Any = 0.0, base_tilt: Any = (0.0, 0.0), gravity: float = STANDARD_GRAVITY) -> None:
        if not isinstance(arm, Peter):
            raise InvalidParameterError(f"CalibratedPeter calibrates a Peter; got {type(arm).__name__}")
        n_legs = arm.n_dof
        self.arm = arm
        self.leg_gain = self._vector("leg_gain", leg_gain, n_legs)
        self.leg_offset = self._vector("leg_offset", leg_offset, n_legs)
        self.leak_loss = self._vector("leak_loss", leak_loss, n_legs)
        self.loads = self._vector("loads", loads, arm.n_modules)
        self.base_tilt = self._vector("base_tilt", base_tilt, 2)
        if np.any(self.leg_gain <= 0) or np.any(np.abs(self.leg_offset) > 0.02):
            raise InvalidParameterError("leg gains must be > 0 and offsets within ±0.02 m (metres)")
        if np.any(self.leak_loss < 0) or np.any(self.leak_loss > 0.05):
            raise InvalidParameterError("leak losses must be within [0, 0.05] m (metres)")
        if np.any(self.loads < 0) or np.any(np.abs(self.base_tilt) > 0.5):
            raise InvalidParameterError("loads must be >= 0 kg and the tilt within ±0.5 rad")
        self.gravity = float(gravity)
        self.n_modules = arm.n_modules
        self.lower, self.upper = arm.lower.copy(), arm.upper.copy()
        self.rotation = quaternion_to_matrix(quaternion_from_rotation_vector(np.r_[self.base_tilt, 0.0]))
        self._up = self.rotation.T @ np.array([0.0, 0.0, 1.0])  # the world's up in the base frame
        # t_eff − s = −c Σ M_i e·∂p_i/∂t with c = g / (k v²)   [s per (kg m/s)]
        self._compliance = self.gravity / (arm.leg_stiffness * arm.leg_rate**2)
        self._sag = bool(np.any(self.loads > 0) and self.gravity > 0)
        self.calibration: dict[str, Any] = {}  # the fit's report (calibrate)

    @property
    def reach(self) -> float:
        """The arm's straight length [m] (targets beyond 100 of them are a unit mistake)."""
        return self.arm.reach

    @staticmethod
    def _vector(name: str, value: Any, size: int) -> np.ndarray:
        arr = np.broadcast_to(np.asarray(value, dtype=float), (size,)).copy() if np.ndim(value) == 0 \
            else np.asarray(value, dtype=float).reshape(-1)
        if arr.shape != (size,) or not np.all(np.isfinite(arr)):
            raise InvalidParameterError(f"{name} must be {size} finite numbers; got {value!r}")
        return arr

    def __repr__(self) -> str:
        return (f"CalibratedPeter(n_modules={self.n_modules}, radius={self.arm.radius:.5f}, "
                f"leg_gain={np.round(self.leg_gain, 3).tolist()}, leg_offset={np.round(self.leg_offset, 5).tolist()}, "
                f"leak_loss={np.round(self.leak_loss, 5).tolist()}, "
                f"loads={np.round(self.loads, 3).tolist()}, base_tilt={np.round(self.base_tilt, 4).tolist()})")

    def parameters(self) -> dict[str, Any]:
        """The calibrated values: ``radius`` [m], ``leg_gain``, ``leg_offset`` [m], ``leak_loss`` [m],
        ``loads`` [kg], ``base_tilt`` [rad]."""
        return {"radius": self.arm.radius, "leg_gain": self.leg_gain.copy(), "leg_offset": self.leg_offset.copy(),
                "leak_loss": self.leak_loss.copy(),
                "loads": self.loads.copy(), "base_tilt": self.base_tilt.copy()}

    # ------------------------------------------------------------------ kinematics
    def unloaded_times(self, t: np.ndarray) -> np.ndarray:
        """The nominal arm's inflation times [s] of the same leg lengths, before sag:
        ``(o + max(g v t − λ, 0)) / v``."""
        t = self.check_configuration(t)
        v = self.arm.leg_rate
        return self.leg_offset / v + np.maximum(self.leg_gain * t - self.leak_loss / v, 0.0)

    def _filling(self, t: np.ndarray) -> np.ndarray:
        """Whether each leg's inflation outlasts its leak (its length then follows ``t``), ``(…, 3N)``."""
        return self.leg_gain * t >= self.leak_loss / self.arm.leg_rate

    def _gravity_gradient(self, t: np.ndarray) -> np.ndarray:
        """``w(t) = Σ_i M_i e·∂p_i/∂t`` ``(B, 3N)`` [kg m/s] of times ``(B, 3N)``."""
        _, jac = self.arm.module_points_jacobian(t)  # (B, N, 3, 3N)
        return np.einsum("i,bijk,j->bk", self.loads, jac, self._up)

    def effective_times(self, t: np.ndarray) -> np.ndarray:
        """The nominal arm's inflation times [s] of the loaded legs' lengths (sag included)."""
        t = self.check_configuration(t)
        s = np.atleast_2d(self.unloaded_times(t))
        out = s
        if self._sag:
            for _ in range(SAG_ITERATIONS):
                new = s - self._compliance * self._gravity_gradient(out)
                change = float(np.max(np.abs(new - out)))
                out = new
                if change < SAG_TOLERANCE:
                    break
        return out[0] if t.ndim == 1 else out

    def forward(self, t: np.ndarray) -> np.ndarray:
        """Tip position [m] in the measuring frame, ``(3,)`` or ``(B, 3)``."""
        tip = self.arm.forward(self.effective_times(t))
        return tip @ self.rotation.T

    def jacobian(self, t: np.ndarray) -> np.ndarray:
        """``d tip / d t`` [m/s], ``(3, 3N)`` or ``(B, 3, 3N)``: the arm's analytic Jacobian at the
        effective times, through the sag's implicit derivative ``(I + c ∂w/∂t)⁻¹ diag(g)`` (a leg a
        leak has emptied contributes nothing)
        (``∂w/∂t``, a Hessian of the arm's potential energy, by forward differences of the arm's
        analytic Jacobian)."""
        t = self.check_configuration(t)
        eff = np.atleast_2d(self.effective_times(t))
        jac = np.atleast_3d(self.arm.jacobian(eff)) if eff.shape[0] > 1 else self.arm.jacobian(eff[0])[None]
        gain = self.leg_gain * np.atleast_2d(self._filling(t))  # (B, 3N): 0 where a leak emptied the leg
        d_eff = gain[:, :, None] * np.eye(self.n_dof)
        if self._sag:
            n, batch = self.n_dof, eff.shape[0]
            probes = eff[:, None, :] + HESSIAN_STEP * np.eye(n)[None]  # (B, n, n)
            w0 = self._gravity_gradient(eff)  # (B, n)
            w = self._gravity_gradient(probes.reshape(-1, n)).reshape(batch, n, n)
            hessian = (w - w0[:, None, :]) / HESSIAN_STEP  # [b, k, :] = ∂w/∂t_k
            hessian = 0.5 * (hessian + hessian.transpose(0, 2, 1))
            d_eff = np.linalg.solve(np.eye(n) + self._compliance * hessian, d_eff)
        out = self.rotation @ jac @ d_eff
        return out[0] if t.ndim == 1 else out


# ---------------------------------------------------------------------------- fitting

def _layout(arm: Peter, fit: tuple[str, ...]) -> dict[str, slice]:
    sizes = {"gain": arm.n_dof, "offset": arm.n_dof, "leak": arm.n_dof, "radius": 1, "loads": arm.n_modules,
             "tilt": 2}
    out, start = {}, 0
    for group in GROUPS:
        if group in fit:
            out[group] = slice(start, start + sizes[group])
            start += sizes[group]
    return out


def _nominal_vector(arm: Peter, layout: dict[str, slice]) -> np.ndarray:
    size = max((s.stop for s in layout.values()), default=0)
    x = np.zeros(size)
    if "gain" in layout:
        x[layout["gain"]] = 1.0
    if "loads" in layout:
        x[layout["loads"]] = nominal_loads(arm)
    return x  # offsets, relative radius error and tilt are 0


def _model_of(arm: Peter, layout: dict[str, slice], x: np.ndarray, fixed_loads: np.ndarray) -> CalibratedPeter:
    radius = arm.radius * (1.0 + x[layout["radius"]][0]) if "radius" in layout else arm.radius
    base = arm.with_parameters(radius=radius) if radius != arm.radius else arm
    return CalibratedPeter(
        base, leg_gain=x[layout["gain"]] if "gain" in layout else 1.0,
        leg_offset=x[layout["offset"]] if "offset" in layout else 0.0,
        leak_loss=np.maximum(x[layout["leak"]], 0.0) if "leak" in layout else 0.0,
        loads=np.maximum(x[layout["loads"]], 0.0) if "loads" in layout else fixed_loads,
        base_tilt=x[layout["tilt"]] if "tilt" in layout else (0.0, 0.0))


def _prior_widths(arm: Peter, layout: dict[str, slice]) -> np.ndarray:
    size = max((s.stop for s in layout.values()), default=0)
    widths = np.ones(size)
    for group, sl in layout.items():
        widths[sl] = PRIOR_WIDTHS[group]
    return widths


def _fit_jacobian(arm: Peter, layout: dict[str, slice], x: np.ndarray,
                  times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tips ``(n, 3)`` of the model of parameters ``x`` and their derivatives ``(n, 3, P)``.

    Analytic through the sag's implicit function (``(I + c W) dt_eff = ds − c Σ dM_i J_iᵀ e −
    c Σ M_i J_iᵀ de``) for gains, offsets, leaks, loads and tilt; the radius by a forward difference.
    """
    model = _model_of(arm, layout, x, np.zeros(arm.n_modules))
    base, n = model.arm, times.shape[0]
    eff = model.effective_times(times)
    points, jac = base.module_points_jacobian(eff)  # (n, N, 3), (n, N, 3, 3N)
    R = model.rotation
    tips = points[:, -1] @ R.T
    out = np.zeros((n, 3, x.size))
    c = model._compliance
    n_dof = base.n_dof
    filling = model._filling(times)  # (n, 3N)
    ds = {}  # parameter index -> d(rhs)/dx, (n, 3N)
    if "gain" in layout:
        for j, k in enumerate(range(layout["gain"].start, layout["gain"].stop)):
            ds[k] = np.zeros((n, n_dof))
            ds[k][:, j] = times[:, j] * filling[:, j]
    if "offset" in layout:
        for j, k in enumerate(range(layout["offset"].start, layout["offset"].stop)):
            ds[k] = np.zeros((n, n_dof))
            ds[k][:, j] = 1.0 / base.leg_rate
    if "leak" in layout:
        for j, k in enumerate(range(layout["leak"].start, layout["leak"].stop)):
            ds[k] = np.zeros((n, n_dof))
            ds[k][:, j] = np.where(filling[:, j], -1.0 / base.leg_rate, 0.0)
    if "loads" in layout:
        for i, k in enumerate(range(layout["loads"].start, layout["loads"].stop)):
            ds[k] = -c * np.einsum("bjk,j->bk", jac[:, i], model._up)
    tilt_rotation = {}
    if "tilt" in layout:
        h = 1e-7
        for axis, k in enumerate(range(layout["tilt"].start, layout["tilt"].stop)):
            tilt = model.base_tilt.copy()
            tilt[axis] += h
            dR = (quaternion_to_matrix(quaternion_from_rotation_vector(np.r_[tilt, 0.0])) - R) / h
            de = dR.T @ np.array([0.0, 0.0, 1.0])
            ds[k] = -c * np.einsum("i,bijk,j->bk", model.loads, jac, de)
            tilt_rotation[k] = dR
    if ds:
        keys = sorted(ds)
        rhs = np.stack([ds[k] for k in keys], axis=-1)  # (n, 3N, K)
        if model._sag:
            probes = eff[:, None, :] + HESSIAN_STEP * np.eye(n_dof)[None]
            w0 = model._gravity_gradient(eff)
            w = model._gravity_gradient(probes.reshape(-1, n_dof)).reshape(n, n_dof, n_dof)
            hessian = (w - w0[:, None, :]) / HESSIAN_STEP
            hessian = 0.5 * (hessian + hessian.transpose(0, 2, 1))
            rhs = np.linalg.solve(np.eye(n_dof) + c * hessian, rhs)
        d_tip = np.einsum("ij,bjk,bkp->bip", R, jac[:, -1], rhs)
        for col, k in enumerate(keys):
            out[:, :, k] = d_tip[:, :, col]
            if k in tilt_rotation:
                out[:, :, k] += points[:, -1] @ tilt_rotation[k].T
    if "radius" in layout:
        k = layout["radius"].start
        h = 1e-7
        shifted = x.copy()
        shifted[k] += h
        out[:, :, k] = (_model_of(arm, layout, shifted, np.zeros(arm.n_modules)).forward(times) - tips) / h
    return tips, out


def calibrate(arm: Peter, times: np.ndarray, tips: np.ndarray, *, fit: tuple[str, ...] = GROUPS,
              noise: float = 3e-4, max_evaluations: int = 100) -> CalibratedPeter:
    """Fit ``arm``'s physical parameters to a robot's samples (module docstring).

    Args:
        arm: the nominal model (its kinematics is the calibrated one's).
        times: commanded inflation times ``(n, 3N)`` [s].
        tips: measured tips ``(n, 3)`` [m], in the frame the robot is measured (and tasked) in.
        fit: the parameter groups to fit, from :data:`GROUPS`; the others keep their nominal
            values (without ``"loads"``: no sag, the kinematic model's rigid legs).
        noise: the tip measurement's standard deviation [m] (weighs the data against the prior).
        max_evaluations: function evaluations of the least-squares solver (scipy's TRF).

    Returns:
        the :class:`CalibratedPeter`, with :attr:`~CalibratedPeter.calibration`: the RMS and
        mean tip residual [m], the number of samples, per parameter group its values and
        posterior standard errors, and the largest parameter correlation.
    """
    if not isinstance(arm, Peter):
        raise InvalidParameterError(f"calibrate takes a Peter; got {type(arm).__name__}")
    fit = tuple(fit)
    unknown = sorted(set(fit) - set(GROUPS))
    if unknown or not fit:
        raise InvalidParameterError(f"calibration groups must be some of {GROUPS}; got {fit!r}")
    times = arm.check_configuration(times)
    if times.ndim != 2:
        raise InvalidParameterError("times must be a batch (n, 3N) of samples")
    tips = check_target(tips, reach=arm.reach)
    if tips.shape != (times.shape[0], 3):
        raise InvalidParameterError(f"tips must have shape ({times.shape[0]}, 3) [m] to match the times; "
                                    f"got {tips.shape}")
    if not (math.isfinite(noise) and noise > 0):
        raise InvalidParameterError(f"noise must be a positive standard deviation [m]; got {noise!r}")
    layout = _layout(arm, fit)
    x0 = _nominal_vector(arm, layout)
    widths = _prior_widths(arm, layout)

    def residuals(x: np.ndarray) -> np.ndarray:
        model = _model_of(arm, layout, x, np.zeros(arm.n_modules))
        return np.concatenate(((model.forward(times) - tips).ravel() / noise, (x - x0) / widths))

    def jacobian(x: np.ndarray) -> np.ndarray:
        _, d_tips = _fit_jacobian(arm, layout, x, times)
        return np.concatenate((d_tips.reshape(-1, x.size) / noise, np.diag(1.0 / widths)))

    lower = np.full_like(x0, -np.inf)
    for group, low in (("gain", 0.05), ("leak", 0.0), ("loads", 0.0), ("radius", -0.5)):
        if group in layout:
            lower[layout[group]] = low
    start = x0.copy()
    if "leak" in layout:  # start inside the kink's reach: at λ = 0 no sample has emptied a leg, and the data
        # cannot tell a leak from an offset (the same tips for every inflation that outlasts the leak)
        start[layout["leak"]] = LEAK_START
        if "offset" in layout:
            start[layout["offset"]] += LEAK_START
    x, r, J, evaluations, converged = _levenberg_marquardt(residuals, jacobian, start, lower, max_evaluations)
    model = _model_of(arm, layout, x, np.zeros(arm.n_modules))
    model.calibration = _report(x, J, layout, times.shape[0], noise, tips, model.forward(times), evaluations,
                                converged)
    return model


def _levenberg_marquardt(residuals, jacobian, x: np.ndarray, lower: np.ndarray, max_evaluations: int):
    """Bounded Levenberg–Marquardt (Marquardt's diagonal scaling; a parameter on its lower bound
    that the gradient pushes out is held, the others' steps are clipped into ``x >= lower``).

    The normal equations of the few parameters are formed with ``einsum`` (no multithreaded
    BLAS call on the tall Jacobian: those stall on a busy machine). Returns the parameters, the
    residuals and Jacobian there, the evaluations spent and whether it converged.
    """
    r = residuals(x)
    J = jacobian(x)
    cost, mu, evaluations, converged = float(r @ r), 1e-3, 1, False
    while evaluations < max_evaluations:
        A = np.einsum("ni,nj->ij", J, J)
        g = np.einsum("ni,n->i", J, r)
        free = ~((x <= lower) & (g > 0))  # a parameter on its bound that descent would push out stays
        step = np.zeros_like(x)
        Af = A[np.ix_(free, free)]
        step[free] = np.linalg.solve(Af + mu * np.diag(np.diag(Af) + 1e-12), -g[free])
        x_new = np.maximum(x + step, lower)
        r_new = residuals(x_new)
        evaluations += 1
        cost_new = float(r_new @ r_new)
        if cost_new < cost:
            done = cost - cost_new < 1e-8 * cost or np.max(np.abs(x_new - x)) < 1e-12
            x, r, cost, mu = x_new, r_new, cost_new, max(mu / 3.0, 1e-9)
            if done:
                converged = True
                break
            J = jacobian(x)
        else:
            mu *= 4.0
            if mu > 1e8:
                converged = True  # no descent direction left: a minimum
                break
    return x, r, J, evaluations, converged


def _report(x: np.ndarray, J: np.ndarray, layout: dict[str, slice], n: int, noise: float, tips: np.ndarray,
            fitted: np.ndarray, evaluations: int, converged: bool) -> dict[str, Any]:
    """RMS and mean residual, parameter values and posterior standard errors (Gauss–Newton)."""
    errors = np.linalg.norm(fitted - tips, axis=1)
    try:
        covariance = np.linalg.inv(np.einsum("ni,nj->ij", J, J))
    except np.linalg.LinAlgError:
        covariance = np.full((x.size, x.size), np.nan)
    std = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    correlation = covariance / np.outer(std, std)
    np.fill_diagonal(correlation, 0.0)
    parameters = {group: {"value": x[sl].tolist(), "std": std[sl].tolist()} for group, sl in layout.items()}
    return {"samples": int(n), "rms_m": float(np.sqrt(np.mean(errors**2))), "mean_m": float(errors.mean()),
            "max_correlation": float(np.nanmax(np.abs(correlation))) if x.size > 1 else 0.0,
            "parameters": parameters, "evaluations": int(evaluations), "noise_m": float(noise),
            "converged": bool(converged)}


__all__ = ["GROUPS", "PRIOR_WIDTHS", "CalibratedPeter", "calibrate", "nominal_loads"]
