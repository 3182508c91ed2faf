"""The batched soft-arm core on a GPU: the per-arm functions of :mod:`soft_envs.sim.batched_kernels`
and :mod:`soft_envs.sim.batched_integrator`, and the contact's of :mod:`soft_envs.sim.contact`,
:mod:`soft_envs.sim.backbone_kernels` and :mod:`soft_envs.collision`, compiled for CUDA from their own
Python source.

One source, two targets. Every per-arm function of the CPU core is an ``@njit`` function whose
Python source (``py_func``) uses scalar arithmetic and small arrays only. :func:`device_functions`
gives each of them a second life as a ``numba.cuda.jit(device=True)`` function: the same code
object, rebound to a namespace where its callees are their CUDA versions. Only what allocates
differs: the CPU drivers take their scratch from ``np.empty``, the CUDA kernels here from
``cuda.local.array`` (sizes fixed per topology when a kernel is built). One thread steps one
arm, as one iteration of the CPU driver's loop does (:func:`~soft_envs.sim.batched_integrator.batch_step`).

Why numba's CUDA target (JAX or Warp were candidates): the CPU core is numba already, so the
CUDA step is the same arithmetic, not a transcription to keep equal by hand; a JAX port would be
a third copy of the section map, the rigid-body recursion and the integrator in ``jnp``, traced
per topology, and PyTorch eager would launch thousands of small kernels per step. Correctness is
tested on any machine through numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, which runs the
kernels' Python on the CPU) against the CPU core, and on a GPU by
``soft-envs bench batched --device cuda``, which also times it.

Arrays. :class:`CudaSoftArms` keeps the topology, the per-arm parameters and the state on the
device, laid out as the CPU core's (:class:`~soft_envs.sim.batched_arm.ArmParams`,
:class:`~soft_envs.sim.batched_arm.ArmState`); :func:`as_torch` hands any of them to PyTorch
without a copy (``__cuda_array_interface__``). Importing this module needs neither a GPU nor
CUDA: numba's ``cuda`` module is imported when a kernel is first built.
"""

from __future__ import annotations

import os
import types
from functools import cache
from typing import Any

import numpy as np

from soft_envs import collision
from soft_envs.exceptions import InvalidParameterError
from soft_envs.sim import backbone_kernels, batched_integrator, batched_kernels, contact
from soft_envs.sim.batched_arm import ArmState, BatchedSoftArm

try:  # the module only (no GPU or CUDA toolkit needed to import it); a module global, so the simulator can swap it
    from numba import cuda
except ImportError:  # pragma: no cover - a numba without its CUDA target
    cuda = None  # type: ignore[assignment]

#: The contact's functions that stay CPU-only: its batch drivers and its ``np.empty`` workspace.
CONTACT_HOST_ONLY = ("contact_workspace", "batch_step_contact", "_step_arms", "batch_contact")


def _own_functions(module, host_only: tuple[str, ...]) -> tuple[str, ...]:
    """The numba functions ``module`` defines, but ``host_only``, in the order it defines them."""
    return tuple(name for name, value in vars(module).items() if name not in host_only
                 and getattr(getattr(value, "py_func", None), "__module__", None) == module.__name__)


#: The per-arm functions compiled for the device, by module (every callee of ``arm_step``,
#: ``point_state`` and the contact's ``arm_step_contact``, which the GPU env steps with obstacles;
#: the batch drivers and the ``np.empty`` workspaces stay CPU-only).
DEVICE_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    batched_kernels: ("_wrap", "_sinc", "configuration", "evaluation_point", "section_jacobian", "rigid_terms",
                      "point_state", "_rates", "_evaluation_map", "_evaluation_state", "arm_terms", "terms_of_arm"),
    batched_integrator: ("cholesky_solve", "_force", "prepare", "predict", "solve_pass", "corrector_passes",
                         "arm_step"),
    collision: collision.KERNEL_FUNCTIONS,
    backbone_kernels: _own_functions(backbone_kernels, ("batch_backbone",)),
    contact: _own_functions(contact, CONTACT_HOST_ONLY),
}

#: Threads per block of the kernels (one arm a thread; measured on an H200, ``bench batched``).
THREADS_PER_BLOCK = 64


def simulated() -> bool:
    """Whether numba's CUDA simulator stands in for a GPU (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def cuda_module():
    """numba's ``cuda`` module, or a clear error where it cannot run kernels."""
    if cuda is None:  # pragma: no cover - numba without its CUDA target
        raise InvalidParameterError("numba's CUDA target is not installed; pip install numba-cuda")
    if not (simulated() or cuda.is_available()):
        raise InvalidParameterError("no CUDA GPU is available (numba.cuda.is_available() is False); "
                                    "set NUMBA_ENABLE_CUDASIM=1 to run the kernels on numba's CUDA simulator")
    return cuda


@cache
def device_functions() -> dict[str, Any]:
    """The namespace of the CUDA versions of :data:`DEVICE_FUNCTIONS` (module docstring): each one
    the CPU function's own code, its globals the CPU modules' constants and its callees' CUDA versions."""
    cuda_module()
    namespace: dict[str, Any] = {}
    for module in DEVICE_FUNCTIONS:
        namespace.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    for module, names in DEVICE_FUNCTIONS.items():
        for name in names:
            source = getattr(module, name).py_func
            function = types.FunctionType(source.__code__, namespace, name, source.__defaults__, source.__closure__)
            namespace[name] = cuda.jit(device=True)(function)
    return namespace


@cache
def step_kernel(n_sections: int, n: int, n_joints: int, n_angles: int):
    """The CUDA kernel of one physics step of every arm (``batch_step`` of the CPU core; one thread
    an arm) for arms of ``n_sections`` sections, ``n`` smooth coordinates, ``n_joints`` joints and
    ``n_angles`` distinct joint angles (the sizes of the per-thread scratch)."""
    cuda_module()
    from numba import float64

    arm_step = device_functions()["arm_step"]
    nc = 3 * n_sections

    @cuda.jit
    def kernel(ints, table, trig, sec, lref, mass, inertia, gravity, stiffness, rayleigh, u, w, a, c, rest_s,
               rest_e, tau_s, tau_e, cancel, fresh, active, coef, passes, u_out, w_out, a_out, c_out):
        b = cuda.grid(1)
        if b >= u.shape[0]:
            return
        if not active[b]:
            for i in range(n):
                u_out[b, i], w_out[b, i], a_out[b, i] = u[b, i], w[b, i], a[b, i]
            for i in range(nc):
                c_out[b, i] = c[b, i]
            return
        jac = cuda.local.array((n_sections, 3, 3), float64)
        for i in range(n_sections):
            for r in range(3):
                for p in range(3):
                    jac[i, r, p] = 0.0
        ws = (cuda.local.array(n, float64), cuda.local.array(nc, float64), cuda.local.array(nc, float64),
              cuda.local.array(nc, float64), cuda.local.array(nc, float64), cuda.local.array(nc, float64), jac,
              cuda.local.array((nc, nc), float64), cuda.local.array((n_joints, 6), float64),
              cuda.local.array((n_joints, 16), float64), cuda.local.array((n_joints, 6), float64),
              cuda.local.array((nc, n), float64), cuda.local.array((n_angles, 2), float64))
        sws = (cuda.local.array((n, n), float64), cuda.local.array((n, n), float64),
               cuda.local.array((12, n), float64))
        M_s = cuda.local.array((n, n), float64)
        h_s = cuda.local.array(n, float64)
        g_s = cuda.local.array(n, float64)
        arm_step((ints, table, trig, sec, lref), mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b], u[b],
                 w[b], a[b], c[b], rest_s[b], rest_e[b], tau_s[b], tau_e[b], cancel[b], fresh[b],
                 (coef[0], coef[1], coef[2], coef[3], coef[4]), passes, False, M_s, h_s, g_s, u_out[b], w_out[b],
                 a_out[b], c_out[b], ws, sws)

    return kernel


@cache
def tip_kernel(n_sections: int, n: int):
    """The CUDA kernel of every arm's last-link centre of mass, position and velocity ``(B, 6)``
    (``batch_point_state`` of the CPU core)."""
    cuda_module()
    from numba import float64

    functions = device_functions()
    evaluation_state, point_state = functions["_evaluation_state"], functions["point_state"]
    nc = 3 * n_sections

    @cuda.jit
    def kernel(ints, table, trig, sec, lref, u, w, c, out):
        b = cuda.grid(1)
        if b >= u.shape[0]:
            return
        jac = cuda.local.array((n_sections, 3, 3), float64)
        for i in range(n_sections):
            for r in range(3):
                for p in range(3):
                    jac[i, r, p] = 0.0
        ws = (cuda.local.array(n, float64), cuda.local.array(nc, float64), cuda.local.array(nc, float64),
              cuda.local.array(nc, float64), cuda.local.array(nc, float64), cuda.local.array(nc, float64), jac)
        evaluation_state(sec, lref, u[b], w[b], c[b], ws)
        point_state(ints, table, c[b], ws[2], out[b])

    return kernel


def as_torch(array):
    """A device array as a ``torch.Tensor`` on its GPU, sharing its memory (no copy through the host)."""
    import torch

    return torch.as_tensor(array, device="cuda")


class CudaSoftArms:
    """The arms of a :class:`~soft_envs.sim.batched_arm.BatchedSoftArm` on the GPU: its topology,
    per-arm parameters and state copied to the device once, then stepped there.

    :meth:`step` is :meth:`BatchedSoftArm.step` (the same arithmetic, module docstring) on device
    arrays: ``torque`` and ``rest_end`` may be numpy arrays (copied over) or device arrays
    (numba's, or a ``torch.Tensor`` on the GPU, used in place). :meth:`download` returns the state
    as an :class:`ArmState` of numpy arrays; :attr:`u` etc. are the device arrays themselves.
    """

    STATE = ("u", "w", "a", "c", "rest")

    def __init__(self, arms: BatchedSoftArm, *, threads_per_block: int = THREADS_PER_BLOCK) -> None:
        self.cuda = cuda_module()
        if int(threads_per_block) != threads_per_block or not 1 <= threads_per_block <= 1024:
            raise InvalidParameterError(f"threads_per_block must be an integer in [1, 1024]; got {threads_per_block!r}")
        self.threads_per_block = int(threads_per_block)
        topology = arms.topology
        self.n_arms, self.n_dof = arms.n_arms, arms.n_dof
        self.n_sections = int(topology.reference_lengths.shape[0])
        self.topology = tuple(self.cuda.to_device(np.ascontiguousarray(x)) for x in topology.arrays)
        p = arms.params
        self.params = tuple(self.cuda.to_device(np.ascontiguousarray(x)) for x in
                            (p.mass, p.inertia, p.gravity, p.stiffness, p.rayleigh))
        am, af, gamma, beta = arms.alpha_parameters
        self._alpha = (am, af, gamma, beta)
        self.corrector_passes = arms.corrector_passes
        s = arms.state
        to = self.cuda.to_device
        #: The state on the device, ``(B, n)`` (``c`` ``(B, 3N)``), as :class:`ArmState`'s.
        self.u: Any = to(np.ascontiguousarray(s.u))
        self.w: Any = to(np.ascontiguousarray(s.w))
        self.a: Any = to(np.ascontiguousarray(s.a))
        self.c: Any = to(np.ascontiguousarray(s.c))
        self.rest: Any = to(np.ascontiguousarray(s.rest))
        self.time = s.time.copy()
        self.fresh = self.cuda.to_device(s.fresh & (self.corrector_passes > 0))
        self._spare = {name: self.cuda.device_array_like(getattr(self, name)) for name in ("u", "w", "a", "c")}
        self._coefficients: dict[float, Any] = {}
        self._ones = self.cuda.to_device(np.ones(self.n_arms, dtype=np.bool_))
        self._zeros = self.cuda.to_device(np.zeros(self.n_arms, dtype=np.bool_))
        self._step = step_kernel(self.n_sections, self.n_dof, topology.n_joints, int(topology.trig.shape[0]))
        self._tip = tip_kernel(self.n_sections, self.n_dof)

    @property
    def blocks(self) -> int:
        return (self.n_arms + self.threads_per_block - 1) // self.threads_per_block

    def _rows(self, x, name: str):
        """``x`` (a number, ``(n,)`` or ``(B, n)``; numpy or a device array) as a ``(B, n)`` device array."""
        if hasattr(x, "__cuda_array_interface__"):
            if tuple(x.shape) != (self.n_arms, self.n_dof):
                raise InvalidParameterError(f"{name} on the device must have shape ({self.n_arms}, {self.n_dof})")
            return self.cuda.as_cuda_array(x)
        rows = np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), (self.n_arms, self.n_dof)))
        return self.cuda.to_device(rows)

    def step(self, dt: float, torque, *, torque_end=None, rest_end=None, cancel_damping: bool = False,
             active=None) -> None:
        """Advance every ``active`` arm by ``dt`` [s] (:meth:`BatchedSoftArm.step`, on the device)."""
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidParameterError(f"dt must be a positive number of seconds; got {dt!r}")
        tau_s = self._rows(torque, "torque")
        tau_e = tau_s if torque_end is None else self._rows(torque_end, "torque_end")
        rest_e = self.rest if rest_end is None else self._rows(rest_end, "rest_end")
        act = self._ones if active is None else self.cuda.to_device(
            np.ascontiguousarray(np.broadcast_to(np.asarray(active, dtype=np.bool_), (self.n_arms,))))
        cancel = self._ones if cancel_damping else self._zeros
        coef = self._coefficients.get(float(dt))
        if coef is None:  # on the device once per step size (a host array would be copied at every launch)
            coef = self._coefficients[float(dt)] = self.cuda.to_device(np.array((float(dt), *self._alpha)))
        out = self._spare
        self._step[self.blocks, self.threads_per_block](
            *self.topology, *self.params, self.u, self.w, self.a, self.c, self.rest, rest_e, tau_s, tau_e, cancel,
            self.fresh, act, coef, self.corrector_passes, out["u"], out["w"], out["a"], out["c"])
        for name in ("u", "w", "a", "c"):
            current = getattr(self, name)
            setattr(self, name, out[name])
            out[name] = current
        if rest_end is not None:
            if active is None:
                self.rest.copy_to_device(rest_e)
            else:
                rest = self.rest.copy_to_host()
                mask = np.asarray(active, dtype=bool)
                rest[mask] = np.asarray(rest_e.copy_to_host())[mask]
                self.rest = self.cuda.to_device(rest)
        moved = np.ones(self.n_arms, dtype=bool) if active is None else np.asarray(active, dtype=bool)
        self.time = np.where(moved, self.time + dt, self.time)
        if active is None:
            self.fresh.copy_to_device(self._zeros)
        else:
            self.fresh = self.cuda.to_device(self.fresh.copy_to_host() & ~moved)

    def tip_state(self):
        """Tip position [m] and velocity [m/s] of every arm (base frame), a ``(B, 6)`` device array."""
        out = self.cuda.device_array((self.n_arms, 6))
        self._tip[self.blocks, self.threads_per_block](*self.topology, self.u, self.w, self.c, out)
        return out

    def synchronize(self) -> None:
        """Wait for the kernels launched so far."""
        self.cuda.synchronize()

    def download(self) -> ArmState:
        """The state as numpy arrays (a copy through the host)."""
        host = {name: np.asarray(getattr(self, name).copy_to_host()) for name in self.STATE}
        return ArmState(host["u"], host["w"], host["a"], host["c"], host["rest"], self.time.copy(),
                        np.asarray(self.fresh.copy_to_host()))
