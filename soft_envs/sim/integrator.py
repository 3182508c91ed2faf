"""One step of the soft arms' time integrator: the generalised-α method for a configuration-dependent
mass matrix and bias, on arrays with an optional leading batch axis.

The equations of motion in the smooth coordinates ``u`` (:mod:`soft_envs.sim.soft_arm`),

    ``M(u) ü + h(u, u̇) + K (u − r(t)) + D u̇ = τ(t)``,  ``D = α_R M + β_R K``,

(``h = C u̇ + G`` the bias, ``K`` diagonal, ``r`` the rest configuration, ``τ`` the generalised
actuation) are integrated with the generalised-α method in the form of Arnold & Brüls (2007,
"Convergence of the generalized-α scheme for constrained mechanical systems", Multibody Syst.
Dyn. 18): the equations hold at the grid points, ``ü_k = M(u_k)⁻¹ F(u_k, u̇_k, t_k)``, and the
auxiliary acceleration ``a`` obeys

    ``(1 − α_m) a_{n+1} + α_m a_n = (1 − α_f) ü_{n+1} + α_f ü_n``,
    ``u_{n+1} = u_n + dt u̇_n + dt² ((½ − β) a_n + β a_{n+1})``,
    ``u̇_{n+1} = u̇_n + dt ((1 − γ) a_n + γ a_{n+1})``,

with Chung & Hulbert's (1993) parameters of the spectral radius ``ρ∞``
(:meth:`AlphaParameters.from_spectral_radius`). It is second order for any smooth ``M``, ``h``,
``τ``, ``r`` (Arnold & Brüls, Theorem 1) and, for constant ``M``, the Chung–Hulbert scheme the
core used before (forces at ``t_{n+1−α_f}``, inertia at ``t_{n+1−α_m}``): multiplying the
relation above by ``M`` gives exactly that scheme. ``K`` and ``D`` (linear) are implicit; the
state-dependent ``M(u)`` and ``h(u, u̇)`` at the step's end are found by corrector passes: the
predictor takes them at the step's start (the scheme of the core before this module, first order
in practice), every pass re-evaluates them at the latest end state ``(u, u̇)`` and solves again
(a modified Newton iteration whose matrix keeps ``K`` and ``D`` exact and leaves out
``∂h/∂u``, ``∂h/∂u̇``, ``∂M/∂u ü``). One pass makes the step second order (the end terms' error
is then ``O(dt²)``); more passes converge to the implicit solution where the velocity product's
derivative is small, ``dt ‖M⁻¹ ∂(C u̇)/∂u̇‖ < 1`` (rates far below ``1/dt``; the passes are a
fixed-point iteration on it). A controller that feedback-linearises the arm at every step
(``cancel_damping``: its ``+D u̇`` and ``+C u̇`` cancel the arm's) evaluates ``C u̇`` at the step's
start; the arm's is then held there too, so that the two cancel exactly, as they do in continuous
time (at the end, against the controller's at the start, the residue drove such an arm — its
damping cancelled — unstable at 5 ms).

:func:`generalized_alpha_step` is pure (no state of its own, no Python loop over elements or
batch members) and the readable reference of the scheme: the bodies step through its compiled
transcription for one arm (:mod:`soft_envs.sim.batched_integrator`: ``predict`` and
``solve_pass``, shared by the single PyBullet bodies and the batched core, where numpy's call
overhead on ``n ≈ 6`` was ~40 µs of a ~160 µs PCC step), checked against it to 1e-12 in
``tests/sim/test_batched_integrator.py``. A torch/JAX port of it is a matter of replacing ``numpy``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from soft_envs.exceptions import InvalidParameterError

DEFAULT_SPECTRAL_RADIUS = 0.9  # ρ∞ (soft_arm's module docstring says why)
DEFAULT_CORRECTOR_PASSES = 1  # the step's order is two from one pass on
#: The most corrector passes a soft-arm body takes (each costs a solve; two reach the scheme's accuracy).
MAX_CORRECTOR_PASSES = 10

#: ``terms(u, u̇) -> (M, h, G)``: the mass matrix ``(..., n, n)``, the bias ``h = C(u, u̇) u̇ + G(u)``
#: and the gravity torque ``G`` ``(..., n)`` at a state (configuration and rate ``(..., n)``).
Terms = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


class AlphaParameters(NamedTuple):
    """The generalised-α parameters ``α_m``, ``α_f``, ``γ``, ``β``."""

    alpha_m: float
    alpha_f: float
    gamma: float
    beta: float

    @classmethod
    def from_spectral_radius(cls, rho: float = DEFAULT_SPECTRAL_RADIUS) -> AlphaParameters:
        """Chung & Hulbert's optimal parameters for the high-frequency spectral radius ``ρ∞``
        (``ρ∞ = 1``: the trapezoidal rule, no numerical dissipation)."""
        if not (isinstance(rho, (int, float)) and 0.0 <= rho <= 1.0):
            raise InvalidParameterError(f"spectral_radius must be in [0, 1]; got {rho!r}")
        am, af = (2.0 * rho - 1.0) / (rho + 1.0), rho / (rho + 1.0)
        return cls(am, af, 0.5 - am + af, 0.25 * (1.0 - am + af) ** 2)


class AlphaStep(NamedTuple):
    """The state after a step and the ``(M, h)`` its last solve used (evaluated at the state the
    last corrector pass started from; the start terms after no pass)."""

    u: np.ndarray
    w: np.ndarray
    a: np.ndarray
    end_terms: tuple[np.ndarray, np.ndarray]


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A⁻¹ b`` for ``A (..., n, n)``, ``b (..., n)``."""
    return np.linalg.solve(A, b[..., None])[..., 0]


def _matvec(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (A @ x[..., None])[..., 0]


def generalized_alpha_step(
    u: np.ndarray,
    w: np.ndarray,
    a: np.ndarray,
    dt: float,
    stiffness: np.ndarray,
    terms: Terms,
    *,
    start_terms: tuple[np.ndarray, np.ndarray, np.ndarray],
    torque_start: np.ndarray,
    torque_end: np.ndarray | None = None,
    rest_start: np.ndarray,
    rest_end: np.ndarray | None = None,
    rayleigh_mass: float | np.ndarray = 0.0,
    rayleigh_stiffness: float | np.ndarray = 0.0,
    cancel_damping: bool | np.ndarray = False,
    parameters: AlphaParameters | None = None,
    corrector_passes: int = DEFAULT_CORRECTOR_PASSES,
    consistent_start: bool | np.ndarray = False,
) -> AlphaStep:
    """Advance ``(u, u̇ = w, a)`` by ``dt`` [s] (module docstring).

    Every array has the shape of ``u``: ``(n,)``, or ``(B, n)`` for ``B`` arms at once (``M``
    then ``(B, n, n)``); parameters broadcast against that leading axis.

    Args:
        u, w, a: smooth configuration, its rate and the method's auxiliary acceleration.
        dt: time step [s].
        stiffness: the diagonal of ``K`` (``(n,)`` or ``(B, n)``).
        terms: ``(M, h, G)`` at a state ``(u, u̇)``, called once per corrector pass.
        start_terms: ``(M, h, G)`` at ``(u, w)``.
        torque_start, torque_end: the generalised actuation at the step's start and end (default: held).
        rest_start, rest_end: the rest configuration at the step's start and end (default: held).
        rayleigh_mass, rayleigh_stiffness: ``α_R`` [1/s] and ``β_R`` [s] of ``D`` (scalars or ``(B,)``).
        cancel_damping: a feedback-linearising controller acts at every step (a bool or ``(B,)``):
            its ``+D u̇`` cancels the damping at the same implicit velocity (``D u̇`` left out) and
            its ``+C u̇``, evaluated at the step's start, the velocity product held there (``h``
            at the end is ``G_e + (h − G)_start``; the discrete cancellation is then exact, as the
            continuous one is).
        parameters: the generalised-α parameters (default ``ρ∞ = 0.9``).
        corrector_passes: evaluations of ``(M, h)`` at the step's end (0: at its start, the scheme
            before this module; first order).
        consistent_start: replace ``a`` by the true acceleration ``ü_n`` (a bool or ``(B,)``): the
            first step after a state was set (``a`` = 0 there is an ``O(1)`` error that makes the
            rate's error ``O(dt)`` unless the arm starts in equilibrium).
    """
    am, af, gamma, beta = AlphaParameters.from_spectral_radius() if parameters is None else parameters
    if not (isinstance(corrector_passes, (int, np.integer)) and corrector_passes >= 0):
        raise InvalidParameterError(f"corrector_passes must be a whole number >= 0; got {corrector_passes!r}")
    k = np.asarray(stiffness, dtype=float)
    tau_s = np.asarray(torque_start, dtype=float)
    tau_e = tau_s if torque_end is None else np.asarray(torque_end, dtype=float)
    rest_s = np.asarray(rest_start, dtype=float)
    rest_e = rest_s if rest_end is None else np.asarray(rest_end, dtype=float)
    keep = 1.0 - np.asarray(cancel_damping, dtype=float)  # 0 where the damping is cancelled
    ray_m = np.asarray(rayleigh_mass, dtype=float) * keep
    mass_damped = bool(np.any(ray_m != 0.0))
    ray_m_vec = ray_m[..., None]
    damping_diagonal = (np.asarray(rayleigh_stiffness, dtype=float) * keep)[..., None] * k  # β_R K

    def force(uk, wk, tau, rest, M, h):  # F = τ − h − K (u − r) − D u̇, h = C u̇ + G
        f = tau - h - k * (uk - rest) - damping_diagonal * wk
        return f - ray_m_vec * _matvec(M, wk) if mass_damped else f

    M_s, h_s, G_s = start_terms
    held = np.asarray(cancel_damping, dtype=bool)[..., None]  # where C u̇ stays at the step's start
    force_s = force(u, w, tau_s, rest_s, M_s, h_s)
    fresh = np.asarray(consistent_start, dtype=bool)
    acc_s = _solve(M_s, force_s) if corrector_passes or np.any(fresh) else None  # ü_n
    if np.any(fresh):
        a = np.where(fresh[..., None], acc_s, a)
    # the end state without a_{n+1}'s share
    u_hat = u + dt * w + ((0.5 - beta) * dt * dt) * a
    w_hat = w + ((1.0 - gamma) * dt) * a
    identity = np.eye(u.shape[-1])
    implicit_diagonal = (1.0 - af) * (beta * dt * dt * k + gamma * dt * damping_diagonal)  # (..., n)
    mass_factor = ((1.0 - am) + (1.0 - af) * gamma * dt * ray_m)[..., None, None]
    M_e, h_e = M_s, h_s
    u_e = w_e = a_next = None
    for p in range(corrector_passes + 1):
        if p:
            M_e, h_e, G_e = terms(u_e, w_e)
            h_e = np.where(held, G_e + (h_s - G_s), h_e)
        # (1 − α_m) M_e a_{n+1} + α_m M_e a_n − α_f M_e ü_n = (1 − α_f) F_e(u_{n+1}, u̇_{n+1}), with
        # M_e ü_n = F_s + (M_e − M_s) ü_n: exactly the predictor's scheme while M_e is M_s.
        rhs = (1.0 - af) * force(u_hat, w_hat, tau_e, rest_e, M_e, h_e) + af * force_s - am * _matvec(M_e, a)
        if p:
            rhs = rhs + af * _matvec(M_e - M_s, acc_s)
        a_next = _solve(mass_factor * M_e + identity * implicit_diagonal[..., None, :], rhs)
        u_e = u_hat + (beta * dt * dt) * a_next
        w_e = w_hat + (gamma * dt) * a_next
    return AlphaStep(u_e, w_e, a_next, (M_e, h_e))
