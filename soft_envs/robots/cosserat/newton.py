"""One damped-Newton routine for the Cosserat solvers, batched over independent problems.

Every shooting solve of the package (a clamped rod, rods pinned to points, the hexapod
equilibrium with one or many starts) is a square system ``g(x) = 0`` solved by
:func:`damped_newton`. The callers differ only in how a step is shortened (:class:`LineSearch`),
how far a step may go (``max_step`` with per-variable ``step_weights``) and where the Jacobian
comes from (forward differences of the residual, or an evaluation that returns the residual
and the Jacobian together). Residuals are compared by their max-norm ``r = max |g|``; a
residual that is not finite (NaN or inf) never counts as a decrease and ends that problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from soft_envs import clock
from soft_envs.exceptions import InvalidParameterError

#: ``residual(X, idx) -> (g, aux)``: residuals ``(k, m)`` of the points ``X`` ``(k, n)`` of
#: problems ``idx`` ``(k,)``, and per-point extra data ``(k, ...)`` to carry along (or None).
Residual = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, np.ndarray | None]"]
#: ``jacobian(X, idx) -> (g, J, aux)``: residual, Jacobian ``(k, m, n)`` and extra data together.
Jacobian = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, np.ndarray, np.ndarray | None]"]


@dataclass(frozen=True)
class LineSearch:
    """How a Newton step ``dx`` is shortened.

    Attributes:
        rounds: step fractions ``α`` to try, round by round; the fractions of one round are
            evaluated in one batch, the next round only when none of them was accepted.
        pick: ``"first"`` takes the first accepted fraction of a round (in its order),
            ``"best"`` the accepted one with the smallest residual.
        full_step_factor: the full step (``α = 1``) is accepted when ``r(x + dx) <
            full_step_factor · r(x)`` (above 1: a non-monotone full step); None applies the
            ``decrease`` rule to it too.
        decrease: a fraction ``α`` is accepted when ``r(x + α dx) < (1 − decrease · α) · r(x)``.
        fallback_step: when no fraction is accepted, step by this fraction unchecked; None ends
            the problem (not converged) at its last point.
        jacobian_with_full_step: evaluate a round ``(1.0,)`` with the Jacobian (worth it when the
            Jacobian evaluation gives the residual too and most full steps are accepted).
    """

    rounds: tuple[tuple[float, ...], ...]
    pick: str = "first"
    full_step_factor: float | None = None
    decrease: float = 1e-4
    fallback_step: float | None = None
    jacobian_with_full_step: bool = False

    def __post_init__(self) -> None:
        if self.pick not in ("first", "best"):
            raise InvalidParameterError(f"pick must be 'first' or 'best'; got {self.pick!r}")
        if not self.rounds or any(len(r) == 0 or min(r) <= 0 for r in self.rounds):
            raise InvalidParameterError("rounds must be non-empty tuples of positive step fractions")

    def thresholds(self, fractions: np.ndarray) -> np.ndarray:
        """Acceptance factors ``(k,)`` of the residual for the step fractions ``(k,)``."""
        rule = 1.0 - self.decrease * fractions
        if self.full_step_factor is None:
            return rule
        return np.where(fractions == 1.0, self.full_step_factor, rule)


@dataclass
class NewtonResult:
    """Outcome of :func:`damped_newton`, one entry per problem.

    Attributes:
        x: final points ``(P, n)`` (the last accepted iterate when a problem failed).
        residual: max-norm of the residual at ``x`` ``(P,)``.
        converged: ``(P,)`` whether the residual fell below the tolerance.
        iterations: Newton steps tried ``(P,)`` (a step that found no acceptable point counts).
        jacobian: Jacobian ``(P, m, n)`` at ``x`` when asked for (``keep_jacobian``), else None.
        aux: the extra data of the residual evaluations at ``x`` (None when they give none).
        timed_out: ``(P,)`` whether the problem was stopped by the wall-clock ``deadline``.
    """

    x: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    jacobian: np.ndarray | None = None
    aux: np.ndarray | None = None
    timed_out: np.ndarray | None = None


def forward_difference_jacobian(residual: Residual, X: np.ndarray, idx: np.ndarray, g: np.ndarray,
                                step: float) -> np.ndarray:
    """Jacobian ``(k, m, n)`` by forward differences of ``residual`` (all columns in one batch):
    ``J[:, :, j] = (g(X + step e_j) − g(X)) / step`` with ``g`` the residual ``(k, m)`` at ``X``."""
    k, n = X.shape
    perturbed = np.repeat(X, n, axis=0) + step * np.tile(np.eye(n), (k, 1))
    gp, _ = residual(perturbed, np.repeat(idx, n))
    return np.transpose((gp.reshape(k, n, -1) - g[:, None, :]) / step, (0, 2, 1))


def _max_norm(g: np.ndarray) -> np.ndarray:
    return np.max(np.abs(g), axis=-1)


def _solve(J: np.ndarray, g: np.ndarray, singular: str) -> tuple[np.ndarray, np.ndarray]:
    """Newton directions ``(k, n)`` of ``J dx = −g`` and which of them exist ``(k,)``."""
    try:
        return np.linalg.solve(J, -g[..., None])[..., 0], np.ones(len(g), bool)
    except np.linalg.LinAlgError:
        if singular == "lstsq":
            return np.stack([np.linalg.lstsq(a, -b, rcond=None)[0] for a, b in zip(J, g)]), np.ones(len(g), bool)
        dx, ok = np.zeros(g.shape[:1] + J.shape[2:]), np.ones(len(g), bool)
        for i, (a, b) in enumerate(zip(J, g)):
            try:
                dx[i] = np.linalg.solve(a, -b)
            except np.linalg.LinAlgError:
                ok[i] = False
        return dx, ok


def damped_newton(x0: np.ndarray, residual: Residual, *, line_search: LineSearch, tol: float, max_iter: int,
                  jacobian: Jacobian | None = None, fd_step: float = 1e-7, max_step: float = np.inf,
                  step_weights: np.ndarray | None = None, final_tol: float | None = None,
                  singular: str = "lstsq", keep_jacobian: bool = False,
                  deadline: float | None = None) -> NewtonResult:
    """Damped Newton on ``P`` independent square systems at once.

    Args:
        x0: starting points ``(P, n)``.
        residual: ``residual(X, idx) -> (g, aux)`` (see :data:`Residual`).
        line_search: how steps are shortened (:class:`LineSearch`).
        tol: a problem has converged when ``max |g| < tol``.
        max_iter: at most this many Newton steps per problem (the residual is checked after each).
        jacobian: ``jacobian(X, idx) -> (g, J, aux)``; None: forward differences of ``residual``
            with step ``fd_step``. When given it is also used for the first evaluation.
        max_step: a step with ``max |dx · step_weights| > max_step`` is scaled down to that size.
        final_tol: a problem that can go no further (``max_iter`` steps done, no acceptable step,
            or a singular Jacobian with ``singular="stop"``) has also converged when its residual
            is below ``max(tol, final_tol)`` (a round-off floor above ``tol``).
        singular: a singular Jacobian gives the least-squares step (``"lstsq"``) or ends the
            problem (``"stop"``).
        keep_jacobian: return the Jacobian at every final point.
        deadline: a ``clock.now()`` value after which no new step is started (the
            problems still running end unconverged, ``timed_out``).

    Every active problem is evaluated in one batch per stage (Jacobian, each line-search round),
    so the cost of an iteration hardly depends on ``P`` for the vectorised rod integrator.
    """
    if singular not in ("lstsq", "stop"):
        raise InvalidParameterError(f"singular must be 'lstsq' or 'stop'; got {singular!r}")
    if int(max_iter) != max_iter or max_iter < 0:
        raise InvalidParameterError(f"max_iter must be an integer >= 0; got {max_iter!r}")
    X = np.array(x0, dtype=float, copy=True)
    P, n = X.shape
    if P == 0:
        return NewtonResult(x=X, residual=np.zeros(0), converged=np.zeros(0, bool), iterations=np.zeros(0, int),
                            jacobian=np.zeros((0, 0, n)) if keep_jacobian else None, timed_out=np.zeros(0, bool))
    weights = np.ones(n) if step_weights is None else np.asarray(step_weights, float)
    all_idx = np.arange(P)
    if jacobian is not None:
        g_all, J0, aux0 = jacobian(X, all_idx)
    else:
        (g_all, aux0), J0 = residual(X, all_idx), None
    m = g_all.shape[1]
    g_now = np.array(g_all, dtype=float)  # residual at X, per problem
    has_g = np.ones(P, bool)
    J_now = np.zeros((P, m, n))
    has_J = np.zeros(P, bool)
    if J0 is not None:
        J_now[:], has_J[:] = J0, True
    aux_now = None if aux0 is None else np.array(aux0, copy=True)  # extra data at X, per problem
    res = _max_norm(g_now)
    conv = np.zeros(P, bool)
    timed_out = np.zeros(P, bool)
    iters = np.zeros(P, int)
    active = all_idx

    def keep_aux(rows: np.ndarray, values: np.ndarray | None) -> None:
        if aux_now is not None and values is not None:
            aux_now[rows] = values

    def evaluate(rows: np.ndarray, with_jacobian: bool) -> None:
        """Refresh ``g`` (and ``J``) at ``X[rows]``."""
        if not len(rows):
            return
        if with_jacobian and jacobian is not None:
            g, J, aux = jacobian(X[rows], rows)
            J_now[rows], has_J[rows] = J, True
        else:
            g, aux = residual(X[rows], rows)
        g_now[rows], has_g[rows], res[rows] = g, True, _max_norm(g)
        keep_aux(rows, aux)
        if with_jacobian and jacobian is None:
            J_now[rows], has_J[rows] = forward_difference_jacobian(residual, X[rows], rows, g_now[rows], fd_step), True

    def stall(rows: np.ndarray) -> None:
        """Problems that cannot go on: converged if their residual is below the final tolerance."""
        if final_tol is not None:
            conv[rows] = res[rows] < max(tol, final_tol)

    step = 0
    while len(active):
        evaluate(active[~has_g[active]], with_jacobian=True)
        limit = tol if step < max_iter or final_tol is None else max(tol, final_tol)
        r = res[active]
        done = r < limit
        conv[active[done]] = True
        active = active[~done & np.isfinite(r)]
        if step == max_iter or not len(active):
            break
        if deadline is not None and clock.now() > deadline:
            timed_out[active] = True
            break
        step += 1
        missing = active[~has_J[active]]
        if jacobian is not None:
            evaluate(missing, with_jacobian=True)
        elif len(missing):
            J_now[missing], has_J[missing] = forward_difference_jacobian(residual, X[missing], missing,
                                                                         g_now[missing], fd_step), True
        iters[active] += 1
        dx, solvable = _solve(J_now[active], g_now[active], singular)
        stall(active[~solvable])
        active = active[solvable]
        dx = dx[solvable]
        big = np.max(np.abs(dx) * weights, axis=1)
        dx *= np.minimum(1.0, max_step / np.maximum(big, 1e-300))[:, None]
        pending = np.arange(len(active))
        for fractions in line_search.rounds:
            if not len(pending):
                break
            fr = np.asarray(fractions, dtype=float)
            rows = active[pending]
            trial = (X[rows][:, None, :] + fr[None, :, None] * dx[pending][:, None, :]).reshape(-1, n)
            trial_idx = np.repeat(rows, len(fr))
            with_J = line_search.jacobian_with_full_step and jacobian is not None and fractions == (1.0,)
            if with_J:
                gt, Jt, auxt = jacobian(trial, trial_idx)
            else:
                (gt, auxt), Jt = residual(trial, trial_idx), None
            rt = _max_norm(gt).reshape(len(rows), len(fr))
            ok = rt < line_search.thresholds(fr)[None, :] * res[rows][:, None]
            if line_search.pick == "first":
                choice = np.argmax(ok, axis=1)
            else:
                choice = np.argmin(np.where(ok, rt, np.inf), axis=1)
            hit = np.flatnonzero(ok[np.arange(len(rows)), choice])
            if len(hit):
                chosen = hit * len(fr) + choice[hit]
                acc = rows[hit]
                X[acc] = trial[chosen]
                g_now[acc], res[acc] = gt[chosen], rt[hit, choice[hit]]
                keep_aux(acc, None if auxt is None else np.asarray(auxt)[chosen])
                has_J[acc] = Jt is not None
                if Jt is not None:
                    J_now[acc] = Jt[chosen]
            pending = np.delete(pending, hit)
        if len(pending):
            rows = active[pending]
            if line_search.fallback_step is None:  # no acceptable step: these problems end here
                stall(rows)
                active = np.setdiff1d(active, rows, assume_unique=True)
            else:
                X[rows] += line_search.fallback_step * dx[pending]
                has_g[rows], has_J[rows] = False, False
    if keep_jacobian:
        evaluate(all_idx[~has_g], with_jacobian=True)
        missing = all_idx[~has_J & np.isfinite(res)]
        if jacobian is not None:
            evaluate(missing, with_jacobian=True)
        elif len(missing):
            J_now[missing] = forward_difference_jacobian(residual, X[missing], missing, g_now[missing], fd_step)
    return NewtonResult(x=X, residual=res, converged=conv, iterations=iters,
                        jacobian=J_now if keep_jacobian else None, aux=aux_now, timed_out=timed_out)
