"""Kirchhoff (Cosserat) rods solved by shooting, and the 6-PFS flexible hexapod built from them.

Rod model (seed 002, SPEC §6): a straight, uniform, inextensible, unshearable rod with no
distributed load. Arc length ``s ∈ [0, L]`` [m]; ``p(s)`` the centreline [m] and ``R(s)`` the
cross-section frame, both in the world frame; ``u(s)`` the curvature/twist in the body frame
[1/m]; ``n`` the internal force [N] (world frame, constant along the rod: ``n' = 0``), i.e. the
force that the material beyond ``s`` exerts on the material before it, so a dead tip load ``F``
gives ``n ≡ F``; ``m = R K u`` the internal moment [N m] (world frame), ``K = diag(EI, EI, GJ)``.
The elastic energy ``E = ½ ∫ uᵀ K u ds`` [J] is integrated alongside. Integration: classical
Runge–Kutta 4 with a fixed number of steps, vectorised over any batch of rods (numpy).

Every public quaternion (arguments, :class:`RodState`, :class:`HexapodSolution`) is
``(x, y, z, w)``, PyBullet's order. Inside the integrator the orientation is the seed's
scalar-first ``(w, x, y, z)`` (eq. 11, ``2/|q|²`` so drift of ``|q|`` never shears the frame), a
private detail converted at the boundary.

Modules:

* :mod:`.integrator` — the rod ODE and RK4 (the scalar-first quaternion internals).
* :mod:`.compiled` — the same RK4 and the hexapod's equations and Jacobian as numba kernels,
  used by default (``compiled.disabled()`` switches back to the numpy path).
* :mod:`.newton` — the one damped-Newton routine every solve below uses.
* :mod:`.rod` — :class:`Rod`, :class:`RodState`: the clamped rod under a tip load, buckling.
* :mod:`.elastica` — closed-form references (the cantilever elastica).
* :mod:`.equations` — the hexapod's 43 scaled equilibrium equations, :class:`HexapodSolution`.
* :mod:`.hexapod` — :class:`Hexapod6PFS`: geometry, reference solution, warm-started solves.
* :mod:`.stability` — platform stiffness and the energy criterion (seed §4).
* :mod:`.assembly` — the assembly-mode search (stage 1, stage 2, :class:`AssemblySearch`).
"""

from soft_envs.robots.cosserat.assembly import AssemblySearch
from soft_envs.robots.cosserat.equations import HexapodSolution
from soft_envs.robots.cosserat.hexapod import Hexapod6PFS
from soft_envs.robots.cosserat.rod import Rod, RodState

__all__ = ["AssemblySearch", "Hexapod6PFS", "HexapodSolution", "Rod", "RodState"]
