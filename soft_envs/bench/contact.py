"""The soft arms' contact (``soft-envs bench contact``): every independent check of the contact model
(geometry against PyBullet, statics against the elastic model, friction and free objects against
μg, energy, penetration, halving the step, the vector env against the single env), its cost, and the
obstacle-reach task's controllers side by side.
"""

from __future__ import annotations

import time

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.bench.contact_checks import convergence_check, sphere_row, statics_check, swing

TITLE = "Contact: the soft arms in a world"


def _dict_table(rows: list[dict]) -> str:
    """A markdown table of uniform dict rows (floats to 4 significant figures)."""
    if not rows:
        return "(none)"
    headers = list(rows[0])
    return markdown_table(headers, [[f"{v:.4g}" if isinstance(v, float) else v for v in r.values()] for r in rows])


def physics_table() -> str:
    """The arm's checks: statics against the elastic model, energy and penetration of a swing into a
    sphere, the halving study."""
    statics = statics_check()
    hit = swing()
    change, touches = convergence_check()
    rows = [
        ("b. statics: wall force vs the elastic model's equilibrium (PETER 2, no friction, tip 4 mm past the wall)",
         f"{statics.simulated_force:.4f} N vs {statics.elastic_force:.4f} N", f"{100 * statics.relative_error:.3f} %",
         "≤ 2 %"),
        ("b. statics: penetration at rest", f"{1e3 * statics.penetration:.3f} mm", "", "≤ 1 mm"),
        ("d. energy of PETER swinging into a 12 mm sphere (released from a bend, the arm's default damping "
         "β = 0.02 s): largest rise between steps",
         f"{hit.largest_gain:.2e} of the start's", f"touching {hit.touching_steps} of {len(hit.energy)} steps",
         "≤ 0"),
        ("d. deepest penetration of that swing", f"{1e3 * hit.deepest:.3f} mm", "", "≤ 1 mm"),
        ("e. halving the step (1/120 → 1/240 s): the tip path of a PeterReach episode with 4 obstacles, random "
         "actions", f"{100 * change:.3f} % of its span", f"{touches} collisions", "≤ 1 %"),
    ]
    return markdown_table(("check", "measured", "", "goal"), rows)


def cost_table(n_arms: tuple[int, ...] = (1, 1024), steps: int = 60) -> str:
    """Physics steps of soft PETER arms in free space and with three obstacles near each arm: µs per arm
    and step (thread CPU time, best of 3, one thread)."""
    from soft_envs.robots import Peter
    from soft_envs.sim.batched_bodies import BatchedSoftPeter

    rows = []
    for B in n_arms:
        rates = {}
        for label, obstacles in (("free space", 0), ("three obstacles", 3)):
            body = BatchedSoftPeter(Peter(2), B, num_threads=1)
            body.reset_inflation(None, np.array([0.0, 2.0, 2.0, 0.0, 2.0, 2.0]))
            body.reset(None, body.state.u.copy(), rest=np.zeros(body.n_dof))
            if obstacles:
                tip = body.tip_state()[0][0]
                shapes = [sphere_row(tip + np.array(offset), 0.012) for offset in
                          ((-0.025, 0.04, -0.01), (-0.05, -0.04, -0.02), (0.0, 0.05, 0.0))]
                body.add_scene(3).set_shapes(None, np.stack(shapes))
            zero = np.zeros((B, body.n_dof))
            body.step(1.0 / 120.0, zero)  # compiled
            best = np.inf
            for _ in range(3):
                start = time.thread_time()
                for _ in range(steps):
                    body.step(1.0 / 120.0, zero)
                best = min(best, (time.thread_time() - start) / (steps * B))
            rates[label] = best
        rows.append((str(B), f"{1e6 * rates['free space']:.2f}", f"{1e6 * rates['three obstacles']:.2f}",
                     f"{rates['three obstacles'] / rates['free space']:.2f}×"))
    return markdown_table(("arms", "free space [µs/arm/step]", "three obstacles [µs/arm/step]", "ratio"), rows)


def env_cost_table(n_envs: tuple[int, ...] = (1, 256), steps: int = 20) -> str:
    """``PeterReach-v0`` env steps without and with ``obstacles=3`` under uniformly random actions (the
    single env, and the native vector env on one thread): ms per env step (thread CPU time, best of 3)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)

    rows = []
    for N in n_envs:
        rates = []
        for obstacles in (0, 3):
            kwargs = {"obstacles": obstacles} if obstacles else {}
            env = gym.make("soft_envs/PeterReach-v0", **kwargs) if N == 1 else \
                gym.make_vec("soft_envs/PeterReach-v0", num_envs=N, num_threads=1, **kwargs)
            env.reset(seed=0)
            env.action_space.seed(0)
            for _ in range(3):  # compiled, contact under way
                env.step(env.action_space.sample())
            best = np.inf
            for _ in range(3):
                start = time.thread_time()
                for _ in range(steps):
                    env.step(env.action_space.sample())
                best = min(best, (time.thread_time() - start) / steps)
            rates.append(best)
            env.close()
        rows.append(("single env" if N == 1 else f"vector env, {N} arms", f"{1e3 * rates[0]:.2f}",
                     f"{1e3 * rates[1]:.2f}", f"{rates[1] / rates[0]:.2f}×"))
    return markdown_table(("PeterReach-v0", "free space [ms/step]", "three obstacles [ms/step]", "ratio"), rows)


def random_action_table(seeds: tuple[int, ...] = (0,), n_envs: int = 32, steps: int = 200) -> str:
    """Each contact env's native vector env (``n_envs`` arms) under uniformly random actions for
    ``steps`` env steps per seed: the deepest penetration of any physics step [mm], the env steps
    deeper than 1 mm, the collisions counted, and the cost (ms per env step, thread CPU time); the PCC
    arm's obstacle reach also in whole contact steps (``scene.max_substeps = 1``)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)

    cases = (("PeterReach-v0, obstacles=3", "soft_envs/PeterReach-v0", {"obstacles": 3}, None),
             ("PCCReach-v0, obstacles=3", "soft_envs/PCCReach-v0", {"obstacles": 3}, None),
             ("PCCReach-v0, obstacles=3, whole contact steps", "soft_envs/PCCReach-v0", {"obstacles": 3}, 1),
             ("PCCPush-v0 (the arm–box coupling's whole steps)", "soft_envs/PCCPush-v0", {}, None))
    rows = []
    for label, env_id, kwargs, most in cases:
        deepest, over, collisions, seconds, total = 0.0, 0, 0, 0.0, 0
        for seed in seeds:
            env = gym.make_vec(env_id, num_envs=n_envs, num_threads=1, **kwargs)
            if most is not None:
                env.arms.scene.max_substeps = most  # type: ignore[attr-defined]
            env.action_space.seed(seed)
            env.reset(seed=seed)
            for _ in range(steps):
                action = env.action_space.sample()
                start = time.thread_time()
                obs, _, terminated, truncated, info = env.step(action)
                seconds += time.thread_time() - start
                if not np.all(np.isfinite(obs)):
                    raise RuntimeError(f"{label}: a non-finite observation under random actions (seed {seed})")
                depth = np.asarray(info["penetration"])
                deepest, over = max(deepest, float(depth.max())), over + int(np.count_nonzero(depth > 1e-3))
                done = np.logical_or(terminated, truncated)
                collisions += int(np.sum(np.asarray(info["collisions"])[done]))
            collisions += int(np.sum(info["collisions"]))
            total += steps * n_envs
            env.close()
        rows.append((label, f"{1e3 * deepest:.3f}", f"{over} of {total}", str(collisions),
                     f"{1e3 * seconds / (steps * len(seeds)):.2f}"))
    return markdown_table(("env", "deepest [mm]", "env steps > 1 mm", "collisions", "ms per env step"), rows)


def ik_table(goals: int = 50, seed: int = 0) -> str:
    """The IK solvers on PeterReach's obstacle goals (:class:`~soft_envs.envs.obstacle_course.ObstacleCourse`,
    three spheres a goal, every goal reachable without touching): the share of solutions within 1 mm whose
    body is clear of every obstacle, and the median time per solve; the same goals without obstacles."""
    from soft_envs.agents.ik import sqp, trr
    from soft_envs.collision import capsule_distance
    from soft_envs.envs.obstacle_course import ObstacleCourse, sphere_rows
    from soft_envs.robots import Peter

    model = Peter(2)
    course = ObstacleCourse(model, 3)
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(goals):
        t = model.sample(rng)
        cases.append((model.forward(t), sphere_rows(course.draw(rng, t)[None])[0]))

    def clear(q, rows) -> bool:
        points = model.backbone(q)
        return all(capsule_distance(a, b, model.body_radius, row).distance >= 0.0
                   for a, b in zip(points[:-1], points[1:]) for row in rows if row[0] != 0)

    solvers = (("TRR, obstacle-blind (the free-space solver)", lambda goal, rows: trr(model, goal)),
               ("TRR with a barrier", lambda goal, rows: trr(model, goal, obstacles=rows)),
               ("SQP with distance constraints", lambda goal, rows: sqp(model, goal, obstacles=rows)))
    out = []
    for name, solve in solvers:
        within, free, seconds = 0, 0, []
        for goal, rows in cases:
            result = solve(goal, rows)
            seconds.append(result.seconds)
            ok = result.error < 1e-3
            within += ok
            free += ok and clear(result.solution, rows)
        out.append((name, f"{100 * within / goals:.0f} %", f"{100 * free / goals:.0f} %",
                    f"{1e3 * np.median(seconds):.1f}"))
    return markdown_table(("solver", "within 1 mm", "within 1 mm, body clear", "median time per solve [ms]"), out)


def reach_table(episodes: int = 20, seed: int = 1000, task: str = "peter-2-obstacles", contacts: bool = True) -> str:
    """A task of ``soft-envs evaluate`` (``peter-2-obstacles``, ``pcc-obstacles``, ``pcc-push``, or free space's
    ``pcc-reach`` with ``contacts=False``): every controller of the task on ``episodes`` seeded episodes, ideal
    and realistic: success (the task's) and the episodes' contacts."""
    from soft_envs import evaluate as ev

    jobs = ev.jobs_for([task], presets=("ideal", "realistic"), episodes=episodes, seed=seed)
    result = ev.Evaluation([ev.run_episode(job) for job in jobs])
    return result.table() + ("\n\n" + ev.contact_table(result) if contacts else "")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    """The contact section."""
    parts = ["The arm's body is capsules on its backbone (PETER: 31.5 mm, the legs' bundle; the PCC arm: its "
             "cross-section's 8.8 mm) against planes, spheres, capsules and boxes (`soft_envs.collision`); contact "
             "is a penalty with damping and regularised Coulomb friction acting at the step's end (implicit, "
             "Newton's method) "
             "(`soft_envs.sim.contact`, parameters and their sources in `soft_envs.sim.scene`).",
             "**The arm** (module `soft_envs.bench.contact_checks`)\n\n" + physics_table()]
    try:
        from soft_envs.bench.contact_geometry import geometry_check
    except ImportError:  # pragma: no cover - the section before that module
        pass
    else:
        columns = {"pair": "pair", "cases": "cases", "comparable_cases": "compared",
                   "max_distance_error_m": "distance error [m]", "max_normal_error": "normal error",
                   "max_point_error_m": "witness error [m]", "max_error_to_reference_m": "vs brute force [m]",
                   "pybullet_algorithm": "PyBullet's algorithm"}
        checks = geometry_check(500 if full else 200, seed)
        rows = [{label: row[key] for key, label in columns.items()} for row in checks]
        parts.append("**a. Geometry against PyBullet's `getClosestPoints`** (random configurations, half of them "
                     "penetrating; the largest differences. PyBullet's box is rounded by its 1 mm collision margin: "
                     "compared on that rounded box, and, where the arm is inside the box, only where PyBullet's "
                     "depth is the same quantity as ours, the deepest point's — the other cases are compared with a "
                     "brute-force minimisation of the exact distance)\n\n" + _dict_table(rows))
    try:
        from soft_envs.bench.contact_objects import object_checks
    except ImportError:  # pragma: no cover
        pass
    else:
        parts.append("**c, d, e. Free objects on the table** (`soft_envs.sim.rigid_object`)\n\n"
                     + _dict_table(object_checks()))
    try:
        from soft_envs.bench.contact_push import push_checks
    except ImportError:  # pragma: no cover
        pass
    else:
        parts.append("**f. A PCC arm pushing a free box** (`soft_envs.sim.arm_objects`, module "
                     "`soft_envs.bench.contact_push`: a 3 × 64.4 mm PCC arm hanging over a table, a 4 cm box, "
                     "k = 1e5 N/m, 5 ms steps)\n\n" + _dict_table(push_checks(full)))
    parts.append("**Cost** (one thread, thread CPU time, best of 3; the arms released from a bent pose, three "
                 "12 mm spheres beside each arm's path, touching them most of the time)\n\n" + cost_table()
                 + "\n\nThe env's step under uniformly random actions (the 31.5 mm body touches its spheres often):\n\n"
                 + env_cost_table())
    parts.append(f"**Random actions** (each contact env's native vector env, 32 arms × 200 uniformly random env "
                 f"steps, seeds {'0-2' if full else '0'}; the PCC arm's tip reaches ~6 m/s, 30 mm a 5 ms step, "
                 "which the contact splits into sub-steps of at most 1 mm near a shape, "
                 "`soft_envs.sim.contact.SWEEP_LENGTH`; one thread)\n\n"
                 + random_action_table((0, 1, 2) if full else (0,)))
    parts.append("**IK around obstacles** (2-module PETER, three spheres a goal drawn as `PeterReach-v0` "
                 "`obstacles=3` draws them, every goal reachable without touching; 1 s budget a solve)\n\n"
                 + ik_table(100 if full else 40, seed))
    parts.append("**Obstacle reach in physics** (`soft-envs evaluate --tasks peter-2-obstacles`, seeds from 1000; "
                 "success: within 1 mm at the episode's end without a collision)\n\n"
                 + reach_table(40 if full else 20))
    parts.append("**The PCC arm's obstacle reach** (`soft-envs evaluate --tasks pcc-obstacles`: `PCCReach-v0`, two "
                 "segments, three spheres near the path, seeds from 1000; success: within 1 mm at the episode's end "
                 "without a collision; the obstacle-aware agents plan the goal's configuration around the spheres "
                 "(the elongations as strains; closed on the tip, a first plan 10 mm clear, then 4 mm) and move "
                 "along a route checked clear in the smooth coordinates (one waypoint, else a tree search), paced "
                 "at a quarter of the command ramp and slowing on arrival)\n\n"
                 + reach_table(40 if full else 20, task="pcc-obstacles")
                 + "\n\nThe same arm, goals and seeds in free space (`soft-envs evaluate --tasks pcc-reach`):\n\n"
                 + reach_table(40 if full else 20, task="pcc-reach", contacts=False))
    parts.append("**Push** (`soft-envs evaluate --tasks pcc-push`: `PCCPush-v0`, the three-segment arm hung 0.21 m "
                 "over the table, a 30 mm, 20 g box pushed 20-40 mm, seeds from 1000; success: the box within 1 cm "
                 "of its goal at the episode's end; the table's metric is the box's final distance)\n\n"
                 + reach_table(40 if full else 20, task="pcc-push"))
    return "\n\n".join(parts)
