"""The one damped-Newton routine of the Cosserat solvers, on small systems with known roots."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs import clock
from soft_envs.robots.cosserat.newton import LineSearch, damped_newton, forward_difference_jacobian

HALVING = LineSearch(rounds=((1.0,), (0.5,), (0.25,), (0.125,)), full_step_factor=4.0)
BATCH = LineSearch(rounds=((1.0, 0.5, 0.25, 0.125),), pick="first")


def squares(targets: np.ndarray):
    """``g(x) = x² − a`` per component, one problem per row of ``targets``."""
    def residual(X, idx):
        return X * X - targets[idx], None

    def jacobian(X, idx):
        g, _ = residual(X, idx)
        return g, np.stack([np.diag(2.0 * x) for x in X]), None

    return residual, jacobian


@pytest.mark.parametrize("search", [HALVING, BATCH])
@pytest.mark.parametrize("analytic", [False, True])
def test_batched_roots(search, analytic):
    targets = np.array([[4.0, 9.0], [2.0, 0.25], [100.0, 1.0]])
    residual, jacobian = squares(targets)
    out = damped_newton(np.ones((3, 2)), residual, jacobian=jacobian if analytic else None, line_search=search,
                        tol=1e-12, max_iter=50)
    assert out.converged.all() and np.all(out.residual < 1e-12)
    np.testing.assert_allclose(out.x, np.sqrt(targets), rtol=1e-12)
    assert np.all(out.iterations <= 12) and np.all(out.iterations > 0)  # quadratic convergence: a few steps


def test_forward_difference_jacobian_matches_analytic():
    targets = np.array([[3.0, 5.0]])
    residual, jacobian = squares(targets)
    X = np.array([[1.5, -2.0]])
    g, J, _ = jacobian(X, np.array([0]))
    np.testing.assert_allclose(forward_difference_jacobian(residual, X, np.array([0]), g, 1e-7), J, atol=1e-6)


def test_max_step_limits_each_step():
    residual, _ = squares(np.array([[1e6]]))
    out = damped_newton(np.array([[1.0]]), residual, line_search=HALVING, tol=1e-9, max_iter=3, max_step=2.0)
    assert not out.converged[0] and out.iterations[0] == 3
    assert out.x[0, 0] <= 1.0 + 3 * 2.0 + 1e-12  # at most three steps of length 2


def test_a_nan_trial_never_wins_and_does_not_stop_the_others():
    """NaN residuals are worse than any finite one: a 'best' round picks the finite trial."""
    def residual(X, idx):
        g = X - 1.0
        return np.where(np.abs(X - 1.0) > 1.5, np.nan, g), None  # NaN beyond 1.5 from the root

    search = LineSearch(rounds=((1.0, 0.5, 0.25),), pick="best", decrease=0.0)
    jac = lambda X, idx: (residual(X, idx)[0], np.ones((len(X), 1, 1)) * 0.25, None)  # noqa: E731 (steps 4x too long)
    out = damped_newton(np.array([[0.0], [2.0]]), residual, jacobian=jac, line_search=search, tol=1e-10, max_iter=60)
    assert out.converged.all() and np.all(np.isfinite(out.x))
    np.testing.assert_allclose(out.x, 1.0, atol=1e-9)


def test_non_finite_start_ends_that_problem_only():
    residual, _ = squares(np.array([[4.0], [9.0]]))
    out = damped_newton(np.array([[np.nan], [1.0]]), residual, line_search=HALVING, tol=1e-12, max_iter=30)
    assert not out.converged[0] and out.iterations[0] == 0 and np.isnan(out.residual[0])
    assert out.converged[1] and out.x[1, 0] == pytest.approx(3.0)


def test_no_decrease_stops_or_takes_the_fallback_step():
    """A residual with a local minimum of |g| away from the root (g = x² + 1 at x = 0)."""
    def residual(X, idx):
        return X * X + 1.0, None

    stop = damped_newton(np.array([[0.1]]), residual, line_search=HALVING, tol=1e-9, max_iter=20)
    assert not stop.converged[0] and stop.iterations[0] < 20  # ended early, at its last point
    assert stop.residual[0] == pytest.approx(stop.x[0, 0] ** 2 + 1.0)
    search = LineSearch(rounds=((1.0,),), full_step_factor=1.0, fallback_step=0.5)
    taken = damped_newton(np.array([[0.1]]), residual, line_search=search, tol=1e-9, max_iter=5)
    assert not taken.converged[0] and taken.iterations[0] == 5  # every step taken, none helps


def test_singular_jacobian_stop_or_least_squares():
    def residual(X, idx):
        return np.stack((X[:, 0] + X[:, 1] - 2.0, 2.0 * (X[:, 0] + X[:, 1]) - 4.0), axis=1), None

    stop = damped_newton(np.zeros((1, 2)), residual, line_search=HALVING, tol=1e-9, max_iter=5, singular="stop")
    assert not stop.converged[0] and stop.iterations[0] == 1
    lstsq = damped_newton(np.zeros((1, 2)), residual, line_search=HALVING, tol=1e-9, max_iter=5)
    assert lstsq.converged[0]
    np.testing.assert_allclose(lstsq.x[0], [1.0, 1.0], atol=1e-6)  # the minimum-norm step


def test_final_tolerance_accepts_the_last_iterate():
    residual, _ = squares(np.array([[2.0]]))
    strict = damped_newton(np.array([[1.0]]), residual, line_search=HALVING, tol=1e-30, max_iter=8)
    relaxed = damped_newton(np.array([[1.0]]), residual, line_search=HALVING, tol=1e-30, max_iter=8, final_tol=1e-10)
    assert not strict.converged[0] and relaxed.converged[0]
    np.testing.assert_array_equal(strict.x, relaxed.x)


def test_keep_jacobian_and_aux_are_at_the_final_point():
    targets = np.array([[4.0], [16.0]])

    def residual(X, idx):
        return X * X - targets[idx], 10.0 * X[:, 0]

    out = damped_newton(np.ones((2, 1)), residual, line_search=HALVING, tol=1e-12, max_iter=30, keep_jacobian=True)
    np.testing.assert_allclose(out.jacobian[:, 0, 0], 2.0 * out.x[:, 0], rtol=1e-6)
    np.testing.assert_allclose(out.aux, 10.0 * out.x[:, 0], rtol=1e-15)


@pytest.mark.budget
def test_deadline_and_empty_batch():
    residual, _ = squares(np.array([[4.0]]))
    late = damped_newton(np.ones((1, 1)), residual, line_search=HALVING, tol=1e-12, max_iter=30,
                         deadline=clock.now() - 1.0)
    assert late.timed_out[0] and not late.converged[0] and late.iterations[0] == 0
    empty = damped_newton(np.zeros((0, 3)), residual, line_search=HALVING, tol=1e-12, max_iter=30)
    assert empty.x.shape == (0, 3) and empty.converged.shape == (0,)


@pytest.mark.parametrize("bad", [dict(pick="worst"), dict(rounds=()), dict(rounds=((1.0, 0.0),))])
def test_bad_line_search_raises(bad):
    with pytest.raises(ValueError):
        LineSearch(**{"rounds": ((1.0,),), **bad})


def test_bad_options_raise():
    residual, _ = squares(np.array([[4.0]]))
    with pytest.raises(ValueError):
        damped_newton(np.ones((1, 1)), residual, line_search=HALVING, tol=1e-9, max_iter=-1)
    with pytest.raises(ValueError):
        damped_newton(np.ones((1, 1)), residual, line_search=HALVING, tol=1e-9, max_iter=3, singular="ignore")


def test_final_tolerance_accepts_a_stalled_problem():
    """A residual with a floor (a plateau at 1e-11 around the root, as round-off makes): no step
    decreases it there, so the problem stalls; with final_tol above the floor that counts."""
    def residual(X, idx):
        return np.where(np.abs(X - 2.0) > 1e-11, X - 2.0, 1e-11), None

    strict = damped_newton(np.array([[1.0]]), residual, line_search=BATCH, tol=1e-12, max_iter=40)
    assert not strict.converged[0] and strict.iterations[0] < 40  # stalled, not out of steps
    relaxed = damped_newton(np.array([[1.0]]), residual, line_search=BATCH, tol=1e-12, max_iter=40,
                            final_tol=1e-10)
    assert relaxed.converged[0] and relaxed.residual[0] < 1e-10
