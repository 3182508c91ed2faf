"""The soft arms' physics step compiled: :func:`soft_envs.sim.integrator.generalized_alpha_step`
transcribed for one arm (:func:`predict`, :func:`solve_pass`) and, for the batched core, fused
with the rigid-body kernels of :mod:`soft_envs.sim.batched_kernels` into one call per physics step
for the whole batch (:func:`batch_step`: per arm the terms at the step's start, the predictor,
the terms ``M``, ``C u̇ + G`` at the predicted end, the corrector, the new ``c̃``). The single PyBullet
bodies (:class:`~soft_envs.sim.soft_arm.SoftArmBody`) run the same transcription around
PyBullet's terms (:func:`single_predict`, :func:`single_correct`), so a sub-env and a single env
share the arithmetic of the step and differ only in who computes ``M``, ``C u̇ + G``.

:func:`~soft_envs.sim.integrator.generalized_alpha_step` (numpy, any batch shape) stays the
readable reference; ``tests/sim/test_batched_integrator.py`` checks the transcription against it
to ~1e-12 on the same terms (batched and single). The arithmetic is the
reference's, in its order, except for the linear solves: ``M`` and ``(1 − α_m) M + ... + diag``
are symmetric positive definite, so they are solved by Cholesky (LAPACK's LU with pivoting in
the reference; the two agree to the matrices' condition number times the rounding error).

The end terms are ``M`` and ``h = C u̇ + G`` at the predicted end state (for an arm whose
controller cancels the damping, ``G`` there and ``C u̇`` held from the start, as the reference's),
and the sines of the joint angles are shared between a section's half bend and its full bends
(double-angle formulas), as in :func:`~soft_envs.sim.batched_kernels.rigid_terms`.

Measured (``soft-envs bench batched``, what mattered): the loops over arms are compiled without
numba's reference counting (``_nrt=False``): every per-arm view of a batch array otherwise
costs an atomic increment and decrement, ~0.6 µs of a ~1 µs arm. The big kernels
(``rigid_terms``, ``arm_terms``) are compiled once and called, not inlined by numba (numba's
inlining of them made the cold compile ~60 s of CPU instead of ~27 s, for ~10 % of speed).
Not achieved: SIMD across arms. A lane layout (``LANES`` arms per row, every joint's arithmetic
one loop over the lanes) computed the same terms, but LLVM vectorised none of its loops (it
would need run-time alias checks between the many workspace arrays, which numba cannot rule
out) and it ran slower than the scalar kernel; explicit vector types (not in numba) or a JAX /
GPU port are the ways to it.

GPU. :func:`arm_step` and its callees are compiled for CUDA from this same source by
:mod:`soft_envs.sim.batched_cuda` (one thread an arm, the workspace in local memory).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.sim.batched_kernels import _INLINE, _JIT, _NO_NRT, configuration, terms_of_arm, workspace


@njit(**_INLINE)
def cholesky_solve(A, b, x):
    """``x = A⁻¹ b`` for a symmetric positive definite ``A`` (``A = L Lᵀ``; its lower triangle is
    overwritten by ``L`` with the reciprocals of ``L``'s diagonal on the diagonal)."""
    n = b.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        inv = 1.0 / math.sqrt(s)
        A[j, j] = inv
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s * inv
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= A[i, k] * x[k]
        x[i] = s * A[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= A[k, i] * x[k]
        x[i] = s * A[i, i]


@njit(**_INLINE)
def _force(uk, wk, tau, rest, h, k, dd, ray_m, M, out):
    """``F = τ − h − K (u − r) − β_R K u̇ − α_R M u̇`` (``h = C u̇ + G``) of one arm into ``out``."""
    n = uk.shape[0]
    for i in range(n):
        f = tau[i] - h[i] - k[i] * (uk[i] - rest[i]) - dd[i] * wk[i]
        if ray_m != 0.0:
            s = 0.0
            for j in range(n):
                s += M[i, j] * wk[j]
            f -= ray_m * s
        out[i] = f


@njit(**_JIT)
def step_workspace(n):
    """The integrator's scratch of one arm: ``(M_e, A)`` and twelve vectors of ``n`` (:func:`predict`'s ``vec``)."""
    return np.empty((n, n)), np.empty((n, n)), np.empty((12, n))


@njit(**_INLINE)
def predict(u, w, a, k, rayleigh, rest_s, rest_e, tau_s, tau_e, cancel, fresh, coefficients, passes, M_s, h_s,
            A, vec, u_out, w_out, a_out):
    """The reference's step with the start terms ``M_s``, ``h_s`` = C u̇ + G up to its
    first solve (the predictor; the whole step without corrector passes) into ``*_out``. ``k`` the
    stiffness, ``rayleigh`` = (α_R, β_R), ``cancel`` leaves the damping out, ``fresh`` starts from
    the true acceleration; ``coefficients`` = ``(dt, α_m, α_f, γ, β)``. What the corrector passes
    need is kept in ``vec`` ``(12, n)``; ``A`` ``(n, n)`` scratch."""
    prepare(u, w, a, k, rayleigh, rest_s, tau_s, cancel, fresh, coefficients, passes, M_s, h_s, A, vec)
    solve_pass(k, rest_e, tau_e, coefficients, M_s, h_s, M_s, False, A, vec, A, False, u_out, w_out, a_out)


@njit(**_INLINE)
def prepare(u, w, a, k, rayleigh, rest_s, tau_s, cancel, fresh, coefficients, passes, M_s, h_s, A, vec):
    """:func:`predict` up to its solve: the start force and acceleration and the end state without
    ``a_{n+1}``'s share (``û = vec[4]``, ``ŵ = vec[5]``), where a force of the end state (contact,
    :mod:`soft_envs.sim.contact`) is linearised before :func:`solve_pass`."""
    dt, am, af, gamma, beta = coefficients
    n = u.shape[0]
    dd, f_s, acc_s, u_hat, w_hat, impl, a0 = vec[1], vec[2], vec[3], vec[4], vec[5], vec[6], vec[8]
    keep = 0.0 if cancel else 1.0
    ray_m = rayleigh[0] * keep
    for i in range(n):
        dd[i] = rayleigh[1] * keep * k[i]
    _force(u, w, tau_s, rest_s, h_s, k, dd, ray_m, M_s, f_s)
    if passes > 0 or fresh:
        for i in range(n):
            for j in range(n):
                A[i, j] = M_s[i, j]
        cholesky_solve(A, f_s, acc_s)
    for i in range(n):
        a0[i] = acc_s[i] if fresh else a[i]
        u_hat[i] = u[i] + dt * w[i] + ((0.5 - beta) * dt * dt) * a0[i]
        w_hat[i] = w[i] + ((1.0 - gamma) * dt) * a0[i]
        impl[i] = (1.0 - af) * (beta * dt * dt * k[i] + gamma * dt * dd[i])
    vec[11, 0] = (1.0 - am) + (1.0 - af) * gamma * dt * ray_m  # the mass factor of the solves
    vec[11, 1] = ray_m


@njit(**_INLINE)
def solve_pass(k, rest_e, tau_e, coefficients, M_e, h_e, M_s, corrected, A, vec, extra, has_extra, u_out, w_out,
               a_out):
    """One solve of the reference's pass loop with ``M``, ``h`` at the step's end ``M_e``, ``h_e``
    (``corrected``: a corrector pass, with its ``α_f (M_e − M_s) ü_n`` term); ``vec`` from :func:`predict`.
    With ``has_extra``, ``extra`` ``(n, n)`` is added to the solve's matrix: the share of ``a_{n+1}`` in
    a force of the end state linearised there (contact's ``(1 − α_f)(β dt² K_c + γ dt D_c)``)."""
    dt, am, af, gamma, beta = coefficients
    n = k.shape[0]
    dd, f_s, acc_s, u_hat, w_hat, impl, rhs, a0 = vec[1], vec[2], vec[3], vec[4], vec[5], vec[6], vec[7], vec[8]
    mass_factor, ray_m = vec[11, 0], vec[11, 1]
    _force(u_hat, w_hat, tau_e, rest_e, h_e, k, dd, ray_m, M_e, rhs)
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += M_e[i, j] * a0[j]
        r = (1.0 - af) * rhs[i] + af * f_s[i] - am * s
        if corrected:
            s = 0.0
            for j in range(n):
                s += (M_e[i, j] - M_s[i, j]) * acc_s[j]
            r = r + af * s
        rhs[i] = r
    for i in range(n):
        for j in range(n):
            A[i, j] = mass_factor * M_e[i, j] + (extra[i, j] if has_extra else 0.0)
        A[i, i] += impl[i]
    cholesky_solve(A, rhs, a_out)
    for i in range(n):
        u_out[i] = u_hat[i] + (beta * dt * dt) * a_out[i]
        w_out[i] = w_hat[i] + (gamma * dt) * a_out[i]


@njit(**_INLINE)
def arm_step(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, tau_s, tau_e, cancel, fresh,
             coefficients, passes, start, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws):
    """One arm's step with its own terms: :func:`predict`, then per corrector pass the configuration
    terms at the latest end state and :func:`solve_pass`; the start terms are computed here unless
    ``start`` (then they are given). The new ``u``, ``u̇``, ``a`` and ``c̃`` (θ's sign nearest ``c``)
    go to the ``*_out`` arrays. ``topology`` = ``(ints, table, trig, sec, lref)``."""
    if not start:
        terms_of_arm(topology, mass, inertia, gravity, u, w, c, True, True, M_s, h_s, g_s, ws)
    predict(u, w, a, k, rayleigh, rest_s, rest_e, tau_s, tau_e, cancel, fresh, coefficients, passes, M_s, h_s,
            sws[1], sws[2], u_out, w_out, a_out)
    corrector_passes(topology, mass, inertia, gravity, k, rest_e, tau_e, cancel, coefficients, passes, M_s, h_s, g_s,
                     c, u_out, w_out, a_out, c_out, ws, sws)


@njit(**_NO_NRT)
def corrector_passes(topology, mass, inertia, gravity, k, rest_e, tau_e, cancel, coefficients, passes, M_s, h_s, g_s,
                     c, u_out, w_out, a_out, c_out, ws, sws):
    """:func:`arm_step` after its predictor (``*_out`` hold the predictor's end state): per corrector pass
    the configuration terms at the latest end state and :func:`solve_pass`; then the end state's ``c̃``."""
    sec, lref = topology[3], topology[4]
    M_e, A, vec = sws
    g_e, h_e = vec[9], vec[10]
    for _ in range(passes):
        configuration(u_out, c, True, sec[0] != 0, sec[1] != 0, sec[2], lref, c_out)
        terms_of_arm(topology, mass, inertia, gravity, u_out, w_out, c_out, True, True, M_e, h_e, g_e, ws)
        if cancel:  # the controller's C u̇ of the step's start cancels the arm's: held there
            for i in range(h_e.shape[0]):
                h_e[i] = g_e[i] + (h_s[i] - g_s[i])
        solve_pass(k, rest_e, tau_e, coefficients, M_e, h_e, M_s, True, A, vec, A, False, u_out, w_out, a_out)
    configuration(u_out, c, True, sec[0] != 0, sec[1] != 0, sec[2], lref, c_out)


@njit(**_INLINE)
def hold(u, w, a, c, u_out, w_out, a_out, c_out):
    """An arm that does not move: its ``u``, ``u̇``, ``a`` and ``c̃`` copied to the ``*_out`` arrays."""
    for i in range(u.shape[0]):
        u_out[i], w_out[i], a_out[i] = u[i], w[i], a[i]
    for i in range(c.shape[0]):
        c_out[i] = c[i]


@njit(**_JIT)
def single_predict(u, w, a, k, rayleigh, rest_s, rest_e, tau_s, tau_e, cancel, fresh, coefficients, passes, M_s, h_s,
                   A, vec, u_out, w_out, a_out):
    """:func:`predict` for one arm whose terms come from elsewhere (:class:`~soft_envs.sim.soft_arm.SoftArmBody`:
    PyBullet's)."""
    predict(u, w, a, k, rayleigh, rest_s, rest_e, tau_s, tau_e, cancel, fresh, coefficients, passes, M_s, h_s,
            A, vec, u_out, w_out, a_out)


@njit(**_JIT)
def single_correct(k, rest_e, tau_e, coefficients, M_e, h_e, M_s, A, vec, u_out, w_out, a_out):
    """A corrector pass (:func:`solve_pass`) for one arm with its end terms ``M_e``, ``h_e``."""
    solve_pass(k, rest_e, tau_e, coefficients, M_e, h_e, M_s, True, A, vec, A, False, u_out, w_out, a_out)


@njit(**_JIT)
def batch_step(ints, table, trig, sec, lref, mass, inertia, gravity, stiffness, rayleigh, u, w, a, c, rest_s, rest_e,
               tau_s, tau_e, cancel, fresh, active, dt, am, af, gamma, beta, passes, start, M_s, h_s, g_s,
               u_out, w_out, a_out, c_out):
    """:func:`arm_step` of every ``active`` arm (the others' state copied unchanged); every per-arm
    array has the batch on its leading axis. ``M_s``, ``h_s``, ``g_s`` ``(B, n, n)``, ``(B, n)``,
    ``(B, n)``: the start terms, given if ``start`` (else written)."""
    n = u.shape[1]
    ws = workspace(lref.shape[0], n, ints.shape[0], trig.shape[0])
    sws = step_workspace(n)
    _step_arms((ints, table, trig, sec, lref), (mass, inertia, gravity, stiffness, rayleigh),
               (u, w, a, c, rest_s, rest_e, tau_s, tau_e), (cancel, fresh, active), (dt, am, af, gamma, beta),
               passes, start, (M_s, h_s, g_s), (u_out, w_out, a_out, c_out), ws, sws)


@njit(**_NO_NRT)
def _step_arms(topology, params, arrays, flags, coefficients, passes, start, start_terms, out, ws, sws):
    """The loop of :func:`batch_step` over arms, compiled without reference counting (the per-arm
    views of the batch arrays would otherwise cost an atomic operation each)."""
    mass, inertia, gravity, stiffness, rayleigh = params
    u, w, a, c, rest_s, rest_e, tau_s, tau_e = arrays
    cancel, fresh, active = flags
    M_s, h_s, g_s = start_terms
    u_out, w_out, a_out, c_out = out
    for b in range(u.shape[0]):
        if not active[b]:
            hold(u[b], w[b], a[b], c[b], u_out[b], w_out[b], a_out[b], c_out[b])
            continue
        arm_step(topology, mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b], u[b], w[b], a[b], c[b],
                 rest_s[b], rest_e[b], tau_s[b], tau_e[b], cancel[b], fresh[b], coefficients, passes, start,
                 M_s[b], h_s[b], g_s[b], u_out[b], w_out[b], a_out[b], c_out[b], ws, sws)
