"""PyBullet client ownership and headless rendering.

PyBullet is imported at its first use, not when this module is (the soft arms' envs
step the batched core and run where PyBullet is not installed; only a client, a body or a
picture needs it). :data:`pybullet` is the module, loaded on its first attribute access.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from soft_envs.console import quiet_native_output
from soft_envs.geometry import STANDARD_GRAVITY  # noqa: F401  (re-exported: the simulations' gravity)

if TYPE_CHECKING:
    from pybullet_utils.bullet_client import BulletClient


class _PyBullet:
    """The ``pybullet`` module, imported (quietly: it prints a build banner) at the first attribute
    read; an ``ImportError`` there says which feature needed it."""

    _module: ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        if _PyBullet._module is None:
            try:
                with quiet_native_output():
                    _PyBullet._module = importlib.import_module("pybullet")
            except ImportError as exc:
                raise ImportError("PyBullet is needed here (a physics client, a rendered picture or a "
                                  "rigid robot) but cannot be imported: pip install pybullet") from exc
        return getattr(_PyBullet._module, name)


pybullet: Any = _PyBullet()


def has_display() -> bool:
    """True when a GUI window can be opened (an X display is set)."""
    return bool(os.environ.get("DISPLAY"))


def connect(gui: bool = False) -> BulletClient:
    """A new physics client owned by the caller (``DIRECT`` unless ``gui``); never the global one."""
    mode = pybullet.GUI if gui else pybullet.DIRECT  # (imports PyBullet quietly, or says it is missing)
    with quiet_native_output():  # PyBullet prints "argv[0]=" on connect
        from pybullet_utils.bullet_client import BulletClient

        client = BulletClient(connection_mode=mode)
    if gui:
        client.configureDebugVisualizer(pybullet.COV_ENABLE_GUI, 0)
    return client


def configure_physics(
    client: BulletClient,
    *,
    time_step: float,
    gravity: float | None = None,
    solver_iterations: int | None = None,
    direct_solver: bool = False,
) -> None:
    """Set the physics of ``client``: the time step [s] and, where given, standard gravity
    [m/s², along the world's −z], the constraint-solver iterations and PyBullet's direct MLCP
    (Dantzig) constraint solver instead of the iterative default (PGS). What is not given keeps
    PyBullet's default (no gravity, 50 iterations, PGS)."""
    client.setTimeStep(time_step)
    if gravity is not None:
        client.setGravity(0.0, 0.0, -gravity)
    engine: dict[str, int] = {}
    if solver_iterations is not None:
        engine["numSolverIterations"] = int(solver_iterations)
    if direct_solver:
        engine["constraintSolverType"] = pybullet.CONSTRAINT_SOLVER_LCP_DANTZIG
    if engine:
        with quiet_native_output():  # PyBullet prints the solver switch
            client.setPhysicsEngineParameter(**engine)


def disconnect(client: BulletClient | None) -> None:
    """Disconnect ``client`` if it is still connected (idempotent)."""
    if client is None:
        return
    try:
        if client.isConnected():
            client.disconnect()
    except pybullet.error:  # already gone
        pass


def render_rgb(
    client: BulletClient,
    *,
    width: int,
    height: int,
    target: tuple[float, float, float],
    distance: float,
    yaw: float = 45.0,
    pitch: float = -25.0,
    fov: float = 45.0,
) -> np.ndarray:
    """An ``(height, width, 3)`` uint8 image from an orbit camera; works headless (TinyRenderer).

    ``target`` and ``distance`` in metres, ``yaw`` and ``pitch`` in degrees.
    """
    view = client.computeViewMatrixFromYawPitchRoll(
        cameraTargetPosition=list(target), distance=distance, yaw=yaw, pitch=pitch, roll=0.0, upAxisIndex=2
    )
    proj = client.computeProjectionMatrixFOV(fov=fov, aspect=width / height, nearVal=0.01, farVal=20.0)
    _, _, rgba, _, _ = client.getCameraImage(
        width, height, viewMatrix=view, projectionMatrix=proj, renderer=pybullet.ER_TINY_RENDERER
    )
    return np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3].copy()
