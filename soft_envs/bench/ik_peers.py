"""The IK solvers users pick instead of ours, run on our chain-IK targets (``soft-envs bench ik --peers``).

Each peer is optional (the ``peers`` extra: ``pip install "soft_envs[peers]"``); a peer that is
not installed gives a row saying so. Every peer gets the same full-pose targets, the same first
guess (the middle of the joint limits) and a tolerance that means the same thing as ours
(position error < 1e-5 m and orientation error < 1e-5 rad), and its answer is scored with our
forward kinematics (success also needs every joint within its URDF limits). The settings of each
are stated in :data:`SETTINGS`.

* roboticstoolbox-python ``ik_LM`` / ``ik_NR`` (C++): their ``tol`` bounds ``E = ½ eᵀe`` of the
  pose error vector ``e`` [m, rad], so ``tol = ½ (1e-5)² = 5e-11`` means 1e-5; with the default
  ``tol=1e-6`` only errors below 1.4e-3 would be asked for.
* TRAC-IK (``pytracik``, C++): it reads the URDF's joint limits as float32 (and the Panda's as
  ``[0, 0]``), so the limits are set explicitly from the URDF in float64.
* pink (``pin-pink`` on pinocchio, with the ``daqp`` QP solver): a differential-IK loop — the
  QP's joint velocity integrated over ``dt`` until the pose is within the tolerances.
* ikpy: ``Chain.inverse_kinematics`` (scipy L-BFGS-B on the pose error) with the full orientation.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np

from soft_envs.console import quiet_native_output
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.bullet_chain import BulletChain

TOL = 1e-5  # m and rad: the success threshold of the comparison
EPSILON = TOL / 3**0.5  # TRAC-IK's bound on each twist component: the norms of both halves then stay below TOL

SETTINGS = {
    "roboticstoolbox `ik_LM`": "C++ Levenberg–Marquardt (Wampler), `tol=5e-11` (= ½·(1e-5)²), ilimit 30, "
                               "slimit 100 random searches, joint limits on",
    "roboticstoolbox `ik_NR`": "C++ Newton–Raphson, `tol=5e-11`, ilimit 30, slimit 100, joint limits on",
    "TRAC-IK (pytracik), 5 ms": "C++ KDL Newton + SQP in parallel, Speed mode, `epsilon=5.8e-6` (a bound on "
                                "each twist component: 1e-5/√3), 5 ms budget (its default), limits set in float64",
    "TRAC-IK (pytracik), 50 ms": "as above with a 50 ms budget",
    "pink": "differential IK: `solve_ik` (daqp QP, damping 1e-12) of a `FrameTask` (costs 1, 1), "
            "`dt = 1`, ≤ 200 steps until within the tolerances",
    "ikpy": "`inverse_kinematics(position, orientation, orientation_mode='all')`, scipy L-BFGS-B, defaults",
}

# solve(position (3,), quaternion (x, y, z, w), q0 (n,)) -> joint values (n,) or None
Solve = Callable[[np.ndarray, np.ndarray, np.ndarray], "np.ndarray | None"]


def standalone_urdf(chain: BulletChain) -> str:
    """A copy of the chain's URDF whose mesh paths are absolute (``package://`` stripped), in a
    temporary folder: loaders that resolve ROS packages (roboticstoolbox, pinocchio) then find them."""
    folder = os.path.dirname(os.path.abspath(chain.urdf_path))
    with open(chain.urdf_path) as fh:
        text = fh.read()
    text = re.sub(r'filename="(?:package://|file://)?([^"/][^"]*)"',
                  lambda m: f'filename="{os.path.join(folder, m.group(1))}"', text)
    path = os.path.join(tempfile.mkdtemp(prefix="soft_envs_peer_"), os.path.basename(chain.urdf_path))
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _pose_matrix(position: np.ndarray, quaternion: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = quaternion_to_matrix(quaternion), position
    return T


def rtb_solver(chain: BulletChain, method: str = "ik_LM", tol: float = TOL) -> Solve:
    """roboticstoolbox's C++ ``method`` (``"ik_LM"``, ``"ik_NR"``) on the chain's URDF, asked for
    pose errors below ``tol`` [m and rad] (its ``tol`` bounds ``½ eᵀe``: ``½ tol²``), joint limits on
    (its default: an answer outside them is searched again); ``ImportError`` without it."""
    import roboticstoolbox as rtb

    with quiet_native_output(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Robot.URDF: still the documented one-call loader
        robot = rtb.Robot.URDF(standalone_urdf(chain))
    solver = getattr(robot, method)
    half_square = 0.5 * tol**2

    def solve(position, quaternion, q0):
        sol = solver(_pose_matrix(position, quaternion), end=chain.end_link, q0=q0, tol=half_square)
        return np.asarray(sol.q) if sol.success else None

    return solve


def _tracik(chain: BulletChain, timeout: float) -> Solve:
    import pytracik

    with open(chain.urdf_path) as fh:
        urdf = fh.read()
    with quiet_native_output():  # KDL warns about the root link's inertia
        solver = pytracik.TRAC_IK(chain.base_link, chain.end_link, urdf, timeout, EPSILON, pytracik.SolveType.Speed)
    pytracik.set_joint_limits(solver, chain.lower.tolist(), chain.upper.tolist())

    def solve(position, quaternion, q0):
        x, y, z, w = quaternion
        out = pytracik.ik(solver, q0, position[0], position[1], position[2], x, y, z, w)
        return np.asarray(out[1:]) if out[0] >= 0 else None

    return solve


def _pink(chain: BulletChain) -> Solve:
    import pink
    import pinocchio
    from pink.tasks import FrameTask

    with quiet_native_output():
        full = pinocchio.buildModelFromUrdf(standalone_urdf(chain))
    keep = set(chain.joint_names)
    lock = [full.getJointId(name) for name in full.names[1:] if name not in keep]
    model = pinocchio.buildReducedModel(full, lock, pinocchio.neutral(full)) if lock else full
    order = [model.idx_qs[model.getJointId(name)] for name in chain.joint_names]
    data = model.createData()
    task = FrameTask(chain.end_link, position_cost=1.0, orientation_cost=1.0)

    def solve(position, quaternion, q0):
        q = pinocchio.neutral(model)
        q[order] = q0
        target = pinocchio.SE3(quaternion_to_matrix(quaternion), np.asarray(position, dtype=float))
        task.set_target(target)
        for _ in range(200):
            configuration = pink.Configuration(model, data, q)
            error = task.compute_error(configuration)
            if np.linalg.norm(error[:3]) < 0.5 * TOL and np.linalg.norm(error[3:]) < 0.5 * TOL:
                break
            velocity = pink.solve_ik(configuration, [task], 1.0, solver="daqp", damping=1e-12)
            q = configuration.integrate(velocity, 1.0)
        return np.asarray(q)[order]

    return solve


def _ikpy(chain: BulletChain) -> Solve:
    from ikpy.chain import Chain

    elements = [chain.joints[0].parent]
    for joint in chain.joints:
        elements += [joint.name, joint.child]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = Chain.from_urdf_file(chain.urdf_path, base_elements=elements)
        # ikpy follows the tree past the end link (the Panda's fingers): cut it at our last joint
        names = [link.name for link in parsed.links]
        links = parsed.links[:names.index(chain.joints[-1].name) + 1]
        active = [link.name in chain.joint_names for link in links]
        ik_chain = Chain(links, active_links_mask=active)
    columns = [i for i, a in enumerate(active) if a]

    def solve(position, quaternion, q0):
        start = np.zeros(len(ik_chain.links))
        start[columns] = q0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = ik_chain.inverse_kinematics(position, quaternion_to_matrix(quaternion), orientation_mode="all",
                                            initial_position=start)
        return np.asarray(q)[columns]

    return solve


PEERS: dict[str, Callable[[BulletChain], Solve]] = {
    "roboticstoolbox `ik_LM`": lambda chain: rtb_solver(chain, "ik_LM"),
    "roboticstoolbox `ik_NR`": lambda chain: rtb_solver(chain, "ik_NR"),
    "TRAC-IK (pytracik), 5 ms": lambda chain: _tracik(chain, 0.005),
    "TRAC-IK (pytracik), 50 ms": lambda chain: _tracik(chain, 0.05),
    "pink": _pink,
    "ikpy": _ikpy,
}


def run_peer(name: str, chain: BulletChain, positions: np.ndarray, quats: np.ndarray,
             limit: int | None = None) -> tuple[np.ndarray, np.ndarray] | str:
    """Solve the targets with one peer: ``(solutions, seconds)``, a failed solve's row being the
    start (the middle of the limits, scored as a failure), or why it could not run."""
    try:
        solve = PEERS[name](chain)
    except ImportError as exc:
        return f"not installed ({exc.name}): pip install \"soft_envs[peers]\""
    except Exception as exc:  # noqa: BLE001 - a peer that cannot load this robot is reported, not fatal
        return f"could not load the robot: {type(exc).__name__}: {exc}"[:160]
    n = len(positions) if limit is None else min(limit, len(positions))
    start = 0.5 * (chain.lower + chain.upper)
    solutions, seconds = np.tile(start, (n, 1)), np.empty(n)
    failed = np.zeros(n, dtype=bool)
    for i in range(n):
        t0 = time.perf_counter()
        try:
            q = solve(positions[i], quats[i], start.copy())
        except Exception:  # noqa: BLE001 - a peer's own failure (e.g. pink's QP finds no step) is a failed solve
            q = None
        seconds[i] = time.perf_counter() - t0
        if q is None or not np.all(np.isfinite(q)):
            failed[i] = True
        else:
            solutions[i] = q
    solutions[failed] = np.nan  # scored as failures
    return solutions, seconds
