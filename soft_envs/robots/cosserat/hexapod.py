"""The 6-PFS flexible hexapod: geometry, the reference equilibrium, warm-started forward kinematics.

Stability (:mod:`~soft_envs.robots.cosserat.stability`) and the assembly-mode search
(:mod:`~soft_envs.robots.cosserat.assembly`) are methods of :class:`Hexapod6PFS` too, written
in their own modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import soft_envs.robots.cosserat.assembly as _assembly
import soft_envs.robots.cosserat.stability as _stability
from soft_envs import clock
from soft_envs.exceptions import ConvergenceError, InvalidConfigurationError, InvalidParameterError
from soft_envs.geometry import cross, quaternion_from_rotation_vector
from soft_envs.robots.cosserat.assembly import AssemblySearch
from soft_envs.robots.cosserat.equations import (
    FK_FREE,
    FK_ROWS,
    LOAD,
    POSE_FIXED_FREE,
    POSE_FIXED_ROWS,
    SINGLE_SEARCH,
    HexapodEquations,
    HexapodSolution,
)
from soft_envs.robots.cosserat.integrator import IDENTITY_WXYZ, rotation_matrix_wxyz
from soft_envs.robots.cosserat.rod import Rod, RodState

# parameters -> (z, residual, energy, Jacobian) of the ρ = 0 solution, process-wide
_REFERENCE_CACHE: dict[tuple, tuple] = {}


class Hexapod6PFS:
    """The 6-PFS flexible hexapod: six Kirchhoff rods on linear guides, spherical joints on top.

    Frames (world, SI): ``z`` up, the base plane at ``z = 0``. Rod ``i`` is clamped to a carriage
    that its guide moves along the unit direction ``g_i`` (vertical by default), with its
    tangent along ``g_i``: its lower end is ``A_i = a_i + ρ_i g_i``,
    ``a_i = R_b (cos α_i, sin α_i, 0)``. Its upper end ``B_i`` is the centre of a spherical joint
    at ``r_i = R_p (cos β_i, sin β_i, 0)`` in the platform frame, whose origin ``P`` is the centre
    of the platform joint circle. Rods are numbered anticlockwise in pairs ``k = 0, 1, 2``
    (``i = 2k, 2k+1``): ``α_i = 120° k ∓ base_half_angle`` and ``β_i = 120° k ∓ platform_half_angle``,
    so the two rods of a pair lean in opposite tangential directions (a Gough–Stewart-like
    layout): every rod is bent at ``ρ = 0`` and the problem is regular there (straight vertical
    inextensible rods would make it singular). Quaternions are ``(x, y, z, w)``.

    Documented parameter set (the paper gives none): spring-steel rods of 1.3 mm diameter,
    ``E = 207 GPa``, ``ν = 0.305`` (``G = E / 2(1+ν) = 79.3 GPa``), 0.25 m long, on vertical
    guides; 87 mm radius base and platform circles; half-angles 15° (base) and 50° (platform),
    so each rod's ends are 52 mm apart horizontally and the platform rests 0.243 m above the
    base at ``ρ = 0`` with each rod pushing it with 0.31 N; guide inputs within ``±0.02 m``
    (the branch of the zero-input solution is followed without folds over that whole box).
    ``guide_tilt`` leans the guides (and clamps) by that angle toward the side the rod leans to.

    Args:
        rod_length, rod_radius, youngs_modulus, poisson_ratio: the rods (SI).
        base_radius, platform_radius: joint circles [m].
        base_half_angle, platform_half_angle, guide_tilt: [rad].
        input_limit: guide inputs in ``[−input_limit, input_limit]`` [m].
        n_steps: RK4 steps per rod (see ``soft-envs bench hexapod`` for the accuracy it gives).
    """

    n_rods = 6

    def __init__(self, *, rod_length: float = 0.25, rod_radius: float = 0.00065, youngs_modulus: float = 207e9,
                 poisson_ratio: float = 0.305, base_radius: float = 0.087, platform_radius: float = 0.087,
                 base_half_angle: float = np.deg2rad(15.0), platform_half_angle: float = np.deg2rad(50.0),
                 guide_tilt: float = 0.0, input_limit: float = 0.02, n_steps: int = 32) -> None:
        self.rod = Rod(rod_length, rod_radius, youngs_modulus, poisson_ratio=poisson_ratio, n_steps=n_steps)
        for name, value in (("base_radius", base_radius), ("platform_radius", platform_radius),
                            ("input_limit", input_limit)):
            if not (np.isfinite(value) and value > 0):
                raise InvalidParameterError(f"{name} must be finite and > 0; got {value!r}")
        self.base_radius, self.platform_radius = float(base_radius), float(platform_radius)
        self.base_half_angle, self.platform_half_angle = float(base_half_angle), float(platform_half_angle)
        self.input_limit = float(input_limit)
        self.n_steps = int(n_steps)
        k = np.repeat(np.arange(3), 2)
        sign = np.tile([-1.0, 1.0], 3)
        self.base_angles = 2 * np.pi / 3 * k + sign * self.base_half_angle
        self.platform_angles = 2 * np.pi / 3 * k + sign * self.platform_half_angle
        self.base_points = self.base_radius * np.stack(
            (np.cos(self.base_angles), np.sin(self.base_angles), np.zeros(6)), axis=1)
        self.platform_points = self.platform_radius * np.stack(
            (np.cos(self.platform_angles), np.sin(self.platform_angles), np.zeros(6)), axis=1)
        # guide (and clamp tangent) of rod i: tilted by guide_tilt from +z toward the side its joint leans to
        tangent = np.stack((-np.sin(self.base_angles), np.cos(self.base_angles), np.zeros(6)), axis=1) * sign[:, None]
        self.guide_tilt = float(guide_tilt)
        self.guide_directions = np.cos(guide_tilt) * np.array([0.0, 0.0, 1.0]) + np.sin(guide_tilt) * tangent
        axis = cross(np.array([0.0, 0.0, 1.0]), tangent)  # rotation e3 -> guide direction
        self.base_quaternions = quaternion_from_rotation_vector(self.guide_tilt * axis)  # clamp frames (x, y, z, w)
        self.L, self.EI, self.GJ = self.rod.length, self.rod.EI, self.rod.GJ
        self.equations = HexapodEquations(length=self.L, EI=self.EI, GJ=self.GJ, n_steps=self.n_steps,
                                          base_points=self.base_points, platform_points=self.platform_points,
                                          guide_directions=self.guide_directions,
                                          base_quaternions=self.base_quaternions)
        self._reference: HexapodSolution | None = None

    def __repr__(self) -> str:
        return (f"Hexapod6PFS(rod={self.rod!r}, base_radius={self.base_radius}, platform_radius="
                f"{self.platform_radius}, input_limit={self.input_limit}, n_steps={self.n_steps})")

    # ------------------------------------------------------------------ bounds and checks
    @property
    def lower(self) -> np.ndarray:
        """Lower guide-input bounds ``(6,)`` [m]."""
        return np.full(6, -self.input_limit)

    @property
    def upper(self) -> np.ndarray:
        """Upper guide-input bounds ``(6,)`` [m]."""
        return np.full(6, self.input_limit)

    def check_inputs(self, rho: Any) -> np.ndarray:
        """``ρ`` as a ``(6,)`` float array; ``ValueError`` if not finite or of the wrong shape."""
        arr = np.asarray(rho, dtype=float)
        if arr.shape != (6,):
            raise InvalidConfigurationError(f"guide inputs must have shape (6,); got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise InvalidConfigurationError(f"guide inputs must be finite; got {arr}")
        return arr

    @staticmethod
    def _check_load(load: Any) -> np.ndarray:
        arr = np.zeros(6) if load is None else np.asarray(load, dtype=float).reshape(-1)
        if arr.shape != (6,) or not np.all(np.isfinite(arr)):
            raise InvalidParameterError("load must be a finite (6,) vector: force [N] then moment [N m]")
        return arr

    def base_positions(self, rho: np.ndarray) -> np.ndarray:
        """Lower rod ends ``A_i`` ``(..., 6, 3)`` [m] for inputs ``(..., 6)``."""
        return self.equations.base_positions(rho)

    # ------------------------------------------------------------------ the reference (zero-input) solution
    def centered_pose_guess(self, height: float | None = None) -> np.ndarray:
        """Scaled variables of a first guess: platform centred and level at ``height`` [m], every rod
        bent like a linear cantilever toward its joint (stage-1 mode 0)."""
        d = self.guide_directions
        straight = self.base_points + self.L * d
        if height is None:
            offsets = self.platform_points[:, :2] - self.base_points[:, :2]
            height = float(np.mean(np.sqrt(np.maximum(self.L**2 - np.sum(offsets**2, axis=1), 0.25 * self.L**2))))
        delta = self.platform_points + [0.0, 0.0, height] - straight
        delta -= np.sum(delta * d, axis=1, keepdims=True) * d  # lateral part
        H = 3.0 * self.EI * delta / self.L**3  # lateral force of a linear cantilever [N]
        m0 = cross(self.L * d, H)
        R0 = rotation_matrix_wxyz(self.equations.base_q)
        u0 = np.einsum("kji,kj->ki", R0, m0) / self.EI
        return self.equations.pack(u0, H, [0.0, 0.0, height], IDENTITY_WXYZ, np.zeros(6))

    def _cache_key(self) -> tuple:
        return (self.L, self.rod.radius, self.rod.youngs_modulus, self.rod.shear_modulus, self.base_radius,
                self.platform_radius, self.base_half_angle, self.platform_half_angle, self.guide_tilt, self.n_steps)

    def reference_solution(self) -> HexapodSolution:
        """The primary assembly mode at ``ρ = 0`` (cached per parameter set, process-wide): every rod
        in bending mode 0, no load. :class:`~soft_envs.exceptions.ConvergenceError` when the
        parameters admit none near the centred guess."""
        eq = self.equations
        cached = _REFERENCE_CACHE.get(self._cache_key())
        if self._reference is None and cached is not None:
            self._reference = eq.solution(cached[0], np.zeros(6), cached[1], True, 0, 0.0, (0,) * 6, cached[2],
                                          jacobian=cached[3])
        if self._reference is None:
            start = clock.now()
            rho = np.zeros(6)
            # rods at a fixed, level platform first (the load that holds it there is unknown) ...
            first = eq.newton(self.centered_pose_guess()[None], rho, POSE_FIXED_FREE, POSE_FIXED_ROWS)
            z = first.x[0]
            z[LOAD] = 0.0
            # ... then release the platform (load zero)
            second = eq.newton(z[None], rho, FK_FREE, FK_ROWS)
            if not second.converged[0]:
                raise ConvergenceError("the reference configuration did not converge; check the parameters")
            jacobian = eq.jacobian(second.x[:1], rho[None], FK_FREE)[1][0]
            self._reference = eq.solution(second.x[0], rho, second.residual[0], True,
                                          first.iterations[0] + second.iterations[0], clock.now() - start,
                                          modes=(0,) * 6, jacobian=jacobian)
            r = self._reference
            _REFERENCE_CACHE[self._cache_key()] = (r.z.copy(), r.residual, r.energy, r.jacobian.copy())
        return self._reference

    # ------------------------------------------------------------------ one warm-started solve
    def solve(self, rho: Any, guess: HexapodSolution | None = None, *, load: Any = None, tol: float = 1e-10,
              max_iter: int = 15, max_input_step: float = 0.01) -> HexapodSolution:
        """Forward kinematics from one start: the equilibrium reached by continuation from ``guess``.

        Args:
            rho: guide inputs ``(6,)`` [m].
            guess: a previous :class:`HexapodSolution` (the branch to stay on); default the
                reference (ρ = 0) solution. The inputs (and load) move from the guess's to the
                requested ones in steps of at most ``max_input_step`` [m] (halved on failure),
                each step started from a first-order predictor (implicit-function tangent).
            load: external force [N] and moment about ``p_P`` [N m] on the platform, ``(6,)``.
            tol: on the max-norm of the scaled residual (positions in units of the rod length).
            max_iter: Newton steps per continuation step.

        Returns the solution with ``converged=False`` (the last converged point of the path, at
        its own inputs) when the path cannot be followed, e.g. past a fold where the branch ends.
        """
        start = clock.now()
        eq = self.equations
        rho = self.check_inputs(rho)
        load = self._check_load(load)
        if not (np.isfinite(max_input_step) and max_input_step > 0):
            raise InvalidParameterError(f"max_input_step must be finite and > 0 [m]; got {max_input_step!r}")
        if not (np.isfinite(tol) and tol > 0):
            raise InvalidParameterError(f"tol must be finite and > 0; got {tol!r}")
        if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
            raise InvalidParameterError(f"max_iter must be an integer >= 1; got {max_iter!r}")
        if guess is None:
            guess = self.reference_solution()
        z = guess.z.copy()
        rho0 = np.asarray(guess.inputs, float)
        load0 = np.asarray(guess.load, float)
        J = guess.jacobian
        total_it = 0
        t, dt = 0.0, 1.0
        span = max(float(np.max(np.abs(rho - rho0))) / max_input_step, 1e-300)
        dt = min(1.0, 1.0 / span)
        if np.array_equal(rho, rho0) and np.array_equal(load, load0) and J is not None:
            return eq.solution(z, rho, guess.residual, guess.converged, 0, clock.now() - start,
                               guess.modes, guess.energy, jacobian=J)
        res, energy = np.inf, guess.energy
        while t < 1.0:
            t1 = min(1.0, t + dt)
            r_t = rho0 + t1 * (rho - rho0)
            l_t = load0 + t1 * (load - load0)
            z_try = z.copy()
            z_try[LOAD] = eq.scale_load(l_t)
            if J is not None:  # tangent predictor dz = −J⁻¹ (∂g/∂ρ dρ + ∂g/∂w dw)
                rhs = eq.input_derivative(z) @ (r_t - (rho0 + t * (rho - rho0))) + \
                    eq.load_derivative(z) @ (z_try[LOAD] - z[LOAD])
                try:
                    z_try[:43] -= np.linalg.solve(J, rhs)
                except np.linalg.LinAlgError:
                    pass
            out = eq.newton(z_try[None], r_t, FK_FREE, FK_ROWS, tol=tol, max_iter=max_iter, search=SINGLE_SEARCH,
                            keep_jacobian=True)
            total_it += int(out.iterations[0])
            if out.converged[0]:
                z, J, t, res, energy = out.x[0], out.jacobian[0], t1, float(out.residual[0]), float(out.aux[0])
                dt = min(1.0, dt * 2.0)
            else:
                dt *= 0.5
                if dt < 1e-3:
                    break
        done = t >= 1.0
        rho_done = rho0 + t * (rho - rho0)
        return eq.solution(z, rho_done, res, done, total_it, clock.now() - start, guess.modes, energy,
                           jacobian=J)

    # ------------------------------------------------------------------ rods of a solution
    def rod_states(self, sol: HexapodSolution, n_steps: int | None = None) -> list[RodState]:
        """The six rods of ``sol`` as :class:`RodState` (world frame), cached on the solution."""
        steps = self.n_steps if n_steps is None else int(n_steps)
        if sol.rods is not None and len(sol.rods[0].s) == steps + 1:
            return sol.rods
        sol.rods = self.rod.states(sol.base_curvatures, sol.forces, base_positions=self.base_positions(sol.inputs),
                                   base_quaternions=self.base_quaternions, n_steps=steps)
        return sol.rods

    def tip_forces(self, sol: HexapodSolution) -> np.ndarray:
        """Force each rod exerts on the platform ``(6, 3)`` [N], world frame (``−n_i``)."""
        return -np.asarray(sol.forces)

    def input_jacobian(self, sol: HexapodSolution) -> np.ndarray:
        """``∂(p_P, θ_P)/∂ρ`` ``(6, 6)`` at a solution: platform position [m/m] and rotation
        vector [rad/m] (world frame) per guide input, by the implicit-function theorem on the
        43 residuals (the quasi-static tangent of the branch)."""
        eq = self.equations
        _, J, _, _ = eq.jacobian(sol.z[None], sol.inputs[None], FK_FREE)
        dz = -np.linalg.solve(J[0], eq.input_derivative(sol.z))
        return eq.pose_rows(sol.z) @ dz

    # ------------------------------------------------------------------ stability (stability.py)
    def stiffness(self, sol: HexapodSolution, method: str = "linear", *, force_step: float = 1e-4,
                  moment_step: float = 1e-5) -> np.ndarray:
        """Platform stiffness ``K`` ``(6, 6)`` [N/m, N m/rad] at ``sol``; see :func:`.stability.stiffness`."""
        return _stability.stiffness(self, sol, method, force_step=force_step, moment_step=moment_step)

    def energy_hessian(self, sol: HexapodSolution, h: float = 1e-6) -> dict[str, np.ndarray]:
        """Second variation of the elastic energy near ``sol``; see :func:`.stability.energy_hessian`."""
        return _stability.energy_hessian(self, sol, h)

    def adjacent_energies(self, sol: HexapodSolution, directions: np.ndarray, step: float = 1e-3,
                          iterations: int = 4) -> np.ndarray:
        """Energies [J] of admissible neighbours minus ``sol``'s; see :func:`.stability.adjacent_energies`."""
        return _stability.adjacent_energies(self, sol, directions, step, iterations)

    def stability(self, sol: HexapodSolution, *, energy_step: float = 1e-3) -> dict[str, Any]:
        """Both stability criteria of the seed, stored in ``sol.stability`` and ``sol.stable``; see
        :func:`.stability.stability`."""
        return _stability.stability(self, sol, energy_step=energy_step)

    # ------------------------------------------------------------------ assembly modes (assembly.py)
    def stage1(self, max_mode: int = 3, n_force: int = 241, n_curvature: int = 161,
               max_force: float = 150.0, max_curvature: float = 30.0) -> list[HexapodSolution]:
        """Symmetric assembly modes at ``ρ = 0``; see :func:`.assembly.stage1`."""
        return _assembly.stage1(self, max_mode, n_force, n_curvature, max_force, max_curvature)

    def stage1_configurations(self, max_mode: int = 3, *, symmetric: list[HexapodSolution] | None = None,
                              max_combinations: int | None = None, seed: int = 0) -> tuple[np.ndarray, list]:
        """Mixed-mode starting configurations; see :func:`.assembly.stage1_configurations`."""
        return _assembly.stage1_configurations(self, max_mode, symmetric=symmetric,
                                              max_combinations=max_combinations, seed=seed)

    def search_assembly_modes(self, rho: Any = None, *, max_mode: int = 3, max_combinations: int | None = 200,
                              radial: bool | str = "symmetric", stability: bool = True, input_steps: int = 8,
                              seed: int = 0, progress: bool = False) -> AssemblySearch:
        """All assembly modes found for inputs ``rho``, with the counts of each stage; see
        :func:`.assembly.search`."""
        return _assembly.search(self, rho, max_mode=max_mode, max_combinations=max_combinations, radial=radial,
                               stability=stability, input_steps=input_steps, seed=seed, progress=progress)

    def forward_kinematics(self, rho: Any = None, *, max_mode: int = 3, max_combinations: int | None = 200,
                           radial: bool | str = "symmetric", stability: bool = True, input_steps: int = 8,
                           seed: int = 0, progress: bool = False) -> list[HexapodSolution]:
        """All assembly modes found for inputs ``rho`` (default zero), with zero external load,
        sorted by energy: :meth:`search_assembly_modes` without the counts."""
        return self.search_assembly_modes(rho, max_mode=max_mode, max_combinations=max_combinations, radial=radial,
                                          stability=stability, input_steps=input_steps, seed=seed,
                                          progress=progress).solutions
