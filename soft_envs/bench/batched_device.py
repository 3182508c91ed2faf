"""``soft-envs bench batched --device cuda``: the batched soft-arm core and the soft PETER reach env on a
GPU, next to the CPU core on every core of the same machine, in one process.

Tables: (1) the GPU step against the CPU core on the same arms and steps (largest difference of
``u``, ``u̇``, ``c̃`` and the tip after 20 steps); (2) nanoseconds per arm and physics step of
the core, GPU and CPU (one thread and every core); (3) the whole env step on the GPU
(:class:`~soft_envs.envs.peter_reach_cuda.PeterReachCudaVectorEnv`: actions from and
observations to PyTorch tensors on the GPU), env-steps per second, for the ideal robot and for a new
realistic one every episode (``realism="realistic"``: its draws on the device). Wall-clock time, the kernels
synchronised before each clock read, the best of 3 rounds. Needs no PyBullet. On numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) it runs on tiny batches, as a check of the code path only.
"""

from __future__ import annotations

import time

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.robots import Peter
from soft_envs.sim import batched_cuda, threads
from soft_envs.sim.batched_bodies import BatchedSoftPeter

DT = 1.0 / 120.0  # s, PeterReach's soft physics step


def _arms(B: int, num_threads: int = 1, seed: int = 0) -> BatchedSoftPeter:
    """``B`` 2-module PETER arms with 0.2 kg payloads, legs at random inflation and rest lengths
    2 mm longer (so that every arm moves)."""
    rng = np.random.default_rng(seed)
    arms = BatchedSoftPeter(Peter(2), B, payload=0.2, num_threads=num_threads)
    arms.reset_inflation(None, rng.uniform(0.0, 2.0, (B, 6)))
    arms.set_rest(None, arms.state.rest + 0.002)
    return arms


def _best(call, reps: int, rounds: int = 3, sync=None) -> float:
    """Best wall-clock seconds per call over ``rounds`` of ``reps`` calls (``sync()`` before each read)."""
    best = np.inf
    for _ in range(rounds):
        if sync:
            sync()
        start = time.perf_counter()
        for _ in range(reps):
            call()
        if sync:
            sync()
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def agreement(B: int, steps: int, seed: int = 0) -> list:
    """The GPU against the CPU core: ``[B, steps, max |Δu|, max |Δu̇|, max |Δc̃|, max |Δtip| [m]]``."""
    cpu = _arms(B, seed=seed)
    gpu = batched_cuda.CudaSoftArms(_arms(B, seed=seed))
    rng = np.random.default_rng(seed + 1)
    for _ in range(steps):
        rest = cpu.state.rest + rng.normal(0.0, 2e-4, cpu.state.rest.shape)
        torque = rng.normal(0.0, 1e-3, cpu.state.u.shape)
        cpu.step(DT, torque, rest_end=rest)
        gpu.step(DT, torque, rest_end=rest)
    state = gpu.download()
    tip = np.asarray(gpu.tip_state().copy_to_host())
    position, velocity = cpu.tip_state()
    differences = [np.abs(getattr(state, name) - getattr(cpu.state, name)).max() for name in ("u", "w", "c")]
    tip_difference = max(np.abs(tip[:, :3] - position).max(), np.abs(tip[:, 3:] - velocity).max())
    return [B, steps, *(f"{d:.1e}" for d in differences), f"{tip_difference:.1e}"]


def core_rows(batches, cpu_batches) -> list[list]:
    """``[where, B, ns per arm and physics step, arm-steps/s]`` of the GPU core and of the CPU core."""
    rows = []
    cores = threads.available_cores()
    for cpu_batch in cpu_batches:
        for nt in sorted({1, cores}):
            arms = _arms(cpu_batch, num_threads=nt)
            arms.step(DT, 0.0)
            seconds = _best(lambda arms=arms: arms.step(DT, 0.0), max(2, 8192 // cpu_batch)) / cpu_batch
            rows.append([f"CPU core, {nt} thread{'s' if nt > 1 else ''}", cpu_batch, f"{seconds * 1e9:.0f}",
                         f"{1.0 / seconds:,.0f}"])
    for B in batches:
        gpu = batched_cuda.CudaSoftArms(_arms(B))
        zero = gpu.cuda.to_device(np.zeros((B, gpu.n_dof)))
        gpu.step(DT, zero)
        seconds = _best(lambda gpu=gpu, zero=zero: gpu.step(DT, zero), 10, sync=gpu.synchronize) / B
        rows.append(["GPU core (numba CUDA)", B, f"{seconds * 1e9:.1f}", f"{1.0 / seconds:,.0f}"])
    return rows


def env_rows(batches, steps: int = 5) -> tuple[list[list], str]:
    """``[realism, N, env-steps/s, ns per arm and physics step]`` of the GPU env (the ideal robot, and a new
    realistic one every episode), and a line on the zero-copy hand-over."""
    from soft_envs.envs.peter_reach_cuda import PeterReachCudaVectorEnv

    simulated = batched_cuda.simulated()
    rows, note = [], ""
    for realism, N in ((realism, N) for realism in ("ideal", "realistic") for N in batches):
        env = PeterReachCudaVectorEnv(N, output="numpy" if simulated else "torch", seed=0, realism=realism)
        obs, _ = env.reset()
        if simulated:
            actions = np.zeros((N, env.model.n_dof), dtype=np.float32)
        else:
            import torch

            actions = torch.rand((N, env.model.n_dof), device="cuda") * 2.0 - 1.0
            if not note:
                pointer = obs.data_ptr() == env.device_observations.__cuda_array_interface__["data"][0]
                note = (f"Observations reach PyTorch without a copy: the tensor's data pointer "
                        f"{'is' if pointer else 'is NOT'} the env's device buffer.")
        env.step(actions)
        seconds = _best(lambda env=env, actions=actions: env.step(actions), steps, sync=env.core.synchronize)
        rows.append([realism, N, f"{N / seconds:,.0f}", f"{seconds / (N * env.frame_skip) * 1e9:.1f}"])
    return rows, note


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    """The bench's markdown (module docstring)."""
    batched_cuda.cuda_module()  # a clear error where there is no GPU
    if batched_cuda.simulated():
        core_batches, env_batches, cpu_batches, check = (4,), (2,), (64,), (4, 2)
    else:
        core_batches = (4096, 16384, 65536, 131072, 262144) if full else (4096, 65536, 131072)
        env_batches = (4096, 65536, 131072, 262144) if full else (4096, 65536, 131072)
        cpu_batches, check = (1024, 8192), (512, 20)
    from numba import cuda

    device = "numba's CUDA simulator" if batched_cuda.simulated() else cuda.get_current_device().name
    device = device.decode() if isinstance(device, bytes) else str(device)
    parts = [f"Device: {device}; CPU cores of this process: {threads.available_cores()}.", "",
             markdown_table(["B", "steps", "max abs Δu", "max abs Δu̇", "max abs Δc̃", "max abs Δtip [m, m/s]"],
                            [agreement(*check, seed=seed)]),
             "", "GPU against the CPU core, same arms, torques and rest lengths (random, per step).", ""]
    parts += [markdown_table(["core", "B", "ns per arm and physics step", "arm-steps/s"],
                             core_rows(core_batches, cpu_batches)), ""]
    rows, note = env_rows(env_batches)
    parts += [markdown_table(["PeterReach on the GPU: realism", "N", "env-steps/s", "ns per arm and physics step"],
                             rows),
              "", f"A soft PETER env step is {round(0.1 / DT)} physics steps (10 Hz control at 1/120 s): the "
              "legs, the arm, the tip, the sensor, the observation, the reward, the autoreset with its realism "
              "draws, all in one kernel. " + note]
    return "\n".join(parts)
