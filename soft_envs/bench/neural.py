"""Neural-network IK for PETER: paper Table 1 side by side (network, hybrid, TRR) and inference speed.

Every column runs on the same targets as the TRR column of ``bench peter``
(:func:`~soft_envs.bench.peter.table1_targets`). Errors are tip errors on the paper's
tilted-plane model, ``‖x(t) − x_d‖``, for the times ``t`` each method returns.
"""

from __future__ import annotations

import os
import time

import numpy as np

from soft_envs.agents.ik.trust_region import trr, trr_batch
from soft_envs.agents.nn import NeuralIK, weights_path
from soft_envs.bench import markdown_table, pyplot, save_figure
from soft_envs.bench.peter import PAPER_TRR, table1_targets
from soft_envs.console import progress

TITLE = "PETER soft arm — neural-network IK, the NN→TRR hybrid and TRR (paper Table 1, Figure 3)"

PAPER_NN = {"mean": 1.27, "median": 1.10, "max": 4.5, "time": 92.0}  # mm, mm, mm, ms
ABLATIONS = {  # shipped 2-module variants (weights/peter_2_<name>.npz): name -> recipe
    "paper": "paper's recipe: random labels, 30 % dropout",
    "nodropout": "random labels, no dropout",
    "dropout": "TRR-branch labels + forward loss, 30 % dropout",
    "branch": "TRR-branch labels, no dropout",
    "forward": "random labels + forward loss, no dropout",
}


def ablation_network(n_modules: int, name: str) -> NeuralIK | None:
    """The shipped ablation network ``name`` (2 modules only; none for the other arms)."""
    path = weights_path(n_modules, name)
    return NeuralIK.load(path) if os.path.exists(path) else None


def _row(label: str, n_modules: int, errors: np.ndarray, seconds: np.ndarray | None, rate: float | None) -> list:
    e = errors * 1e3
    return [n_modules, label, f"{e.mean():.3g}", f"{np.median(e):.3g}", f"{e.max():.3g}",
            f"{np.mean(e < 1e-2) * 100:.1f} %",
            "—" if seconds is None else f"{seconds.mean() * 1e3:.3f} / {np.median(seconds) * 1e3:.3f}",
            "—" if rate is None else f"{rate:,.0f}"]


def _network_row(net: NeuralIK, label: str, n_modules: int, targets: np.ndarray,
                 n_single: int) -> tuple[list, np.ndarray]:
    model = net.model
    times = net.predict(targets)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        net.predict(targets)
        best = min(best, time.perf_counter() - start)
    rate = len(targets) / best
    errors = np.linalg.norm(model.forward(times) - targets, axis=-1)
    seconds = np.empty(n_single)
    for i in range(n_single):
        t0 = time.perf_counter()
        net.predict(targets[i])
        seconds[i] = time.perf_counter() - t0
    return _row(label, n_modules, errors, seconds, rate), errors


def table1(n_targets: int, seed: int, plot_dir: str | None) -> str:
    rows, ablation_rows, all_errors = [], [], {}
    for n_modules in (2, 3, 4):
        model, targets = table1_targets(n_modules, n_targets, seed)
        net = NeuralIK.pretrained(n_modules)
        row, nn_errors = _network_row(net, "network", n_modules, targets, n_targets)
        rows.append(row)

        # Hybrid, one target at a time (network + trr_batch from its answer), then batched.
        errors, seconds = np.empty(n_targets), np.empty(n_targets)
        for i, target in enumerate(progress(targets, desc=f"hybrid, {n_modules} modules", leave=False)):
            res = net.solve(target)
            errors[i], seconds[i] = res.error, res.seconds
        batch = net.solve_batch(targets)
        rows.append(_row("network → TRR (hybrid)", n_modules, errors, seconds, n_targets / batch.seconds))
        hybrid_errors = errors

        errors, seconds = np.empty(n_targets), np.empty(n_targets)
        for i, target in enumerate(progress(targets, desc=f"TRR, {n_modules} modules", leave=False)):
            res = trr(model, target)
            errors[i], seconds[i] = res.error, res.seconds
        batch = trr_batch(model, targets)
        rows.append(_row("TRR (fixed start)", n_modules, errors, seconds, n_targets / batch.seconds))
        all_errors[n_modules] = {"network": nn_errors, "hybrid": hybrid_errors, "TRR": errors}

        for name, what in ABLATIONS.items():
            variant = ablation_network(n_modules, name)
            if variant is not None:
                row, errs = _network_row(variant, what, n_modules, targets, min(n_targets, 200))
                ablation_rows.append(row)
                all_errors[n_modules][f"network, {name}"] = errs
        if ablation_rows and ablation_rows[-1][0] == n_modules:
            ablation_rows.append(_row("shipped: TRR-branch labels + forward loss, no dropout", n_modules,
                                      nn_errors, None, None))
    rows.append(["paper (2–4)", "neural network", PAPER_NN["mean"], PAPER_NN["median"], PAPER_NN["max"], "—",
                 f"{PAPER_NN['time']:.0f}", "—"])
    rows.append(["paper (2–4)", "TRR", PAPER_TRR["mean"], PAPER_TRR["median"], PAPER_TRR["max"], "—",
                 f"{PAPER_TRR['time']:.0f}", "—"])
    headers = ["modules", "method", "mean err [mm]", "median err [mm]", "max err [mm]", "< 0.01 mm",
               "time/target mean / median [ms]", "batched targets/s"]
    text = (
        f"{n_targets} targets per module count (tips of seeded random inflation times, the TRR column's "
        "targets); tip error on the paper's tilted-plane model. *Time/target*: one target at a time "
        "(the paper's setting); *batched*: all targets in one call. The hybrid starts `trr_batch` "
        "(vectorised bounded LM, `trr` for stragglers) from the network's answer.\n\n"
        + markdown_table(headers, rows)
    )
    for n_modules, info in _training_info().items():
        text += f"\n\n{n_modules}-module network: {info}"
    if ablation_rows:
        text += ("\n\nWhat beats plain regression on a redundant inverse: 2-module variants shipped as "
                 "`weights/peter_2_<variant>.npz`, same architecture, data (10 000 samples, seed 0), "
                 "optimiser and early stopping, one training run each (so differences below ~10 % are "
                 "within seed noise); *random labels* are the times that generated each target (the "
                 "paper), *TRR-branch labels* TRR's solution from the middle of the bounds, *forward loss* "
                 "the tip error through the model's forward kinematics. Same targets as above:\n\n"
                 + markdown_table(headers, ablation_rows))
    if plot_dir:
        _plot(all_errors, plot_dir)
        text += f"\n\nError distributions (cf. the paper's Figure 3): `{plot_dir}/peter_nn_errors.png`."
    return text


def _training_info() -> dict[int, str]:
    out = {}
    for n_modules in (2, 3, 4):
        meta = NeuralIK.pretrained(n_modules).metadata.get("training", {})
        if meta:
            err = meta.get("test_tip_error_mm", {})
            out[n_modules] = (f"trained {meta['training_seconds']:.0f} s on CPU ({meta['threads']} torch thread, "
                              f"shared busy machine), {meta['epochs']} epochs (best {meta['best_epoch']}), "
                              f"{meta['n_samples']} samples, test-split mean error "
                              f"{err.get('mean', float('nan')):.3f} mm.")
    return out


def inference_rate(n_targets: int, seed: int) -> str:
    rows = []
    for n_modules in (2, 3, 4):
        _, targets = table1_targets(n_modules, n_targets, seed)
        net = NeuralIK.pretrained(n_modules)
        net.predict(targets[:1000])
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            net.predict(targets)
            best = min(best, time.perf_counter() - start)
        single = []
        for x in targets[:200]:
            start = time.perf_counter()
            net.predict(x)
            single.append(time.perf_counter() - start)
        rows.append([n_modules, n_targets, f"{n_targets / best:,.0f}", f"{np.median(single) * 1e6:.0f}"])
    return ("`NeuralIK.predict`, numpy float32, best of 3 (batched) and median over 200 single calls; "
            "the paper: 92 ms per target.\n\n"
            + markdown_table(["modules", "batch", "targets/s (batched)", "one target [µs]"], rows))


def _plot(errors: dict[int, dict[str, np.ndarray]], plot_dir: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(errors), figsize=(4.2 * len(errors), 3.6), sharey=True)
    for ax, (n_modules, by_method) in zip(np.atleast_1d(axes), errors.items()):
        labels = list(by_method)
        data = [np.log10(np.maximum(by_method[k] * 1e3, 1e-9)) for k in labels]
        ax.boxplot(data, showfliers=True)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=8)
        ax.axhline(np.log10(1.27), color="tab:red", lw=0.8, ls="--", label="paper NN mean")
        ax.axhline(np.log10(0.22), color="tab:green", lw=0.8, ls=":", label="paper TRR mean")
        ax.set_title(f"{n_modules} modules")
    np.atleast_1d(axes)[0].set_ylabel("log10 tip error [mm]")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    save_figure(fig, plot_dir, "peter_nn_errors.png")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    n_targets = 1000 if full else 100
    return "\n\n".join([
        "### Table 1: network, hybrid and TRR\n\n" + table1(n_targets, seed, plot_dir),
        "### Inference speed\n\n" + inference_rate(100_000 if full else 20_000, seed),
    ])
