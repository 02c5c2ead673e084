"""What the trained-attention end-to-end scripts check alike (trained_attention.py, swin_checks.py,
trained_local_attention.py, convit_checks.py): each family computes its attention P (N, heads, T, T),
head maps M_h (heads, D_out, D_in) and folded bias b itself, in numpy, from the layer's .npz; from those
and the layer's tokens and output alone, check_measurement recomputes what the report and the dumps
claim — the least-squares convolution (numpy.linalg.lstsq, the dumped kernel through
torch.nn.Conv2d(padding='same')), the white-input convolution and rel_l2, the translation-invariance
defect, the masses and the mean attention distances — never from the C++ nor the exporter.
export_and_run exports a model, runs it with --dump-tensors and checks every case."""
import math
import os
import warnings

import numpy as np
import torch
from torch import nn


def _cli():
    # Imported here: importing cli_check reads the script's arguments (the fixture makers have none).
    import cli_check
    return cli_check


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) / max(np.linalg.norm(b.ravel()), 1e-300))


def design(x_grid, h, w, k1, k2):
    """(N*H*W, D*K1*K2 + 1): the zero-padded K1 x K2 neighbourhoods, columns (channel, row, column), then 1."""
    n, _, d = x_grid.shape
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    padded = np.zeros((n, h + k1 - 1, w + k2 - 1, d))
    padded[:, c1:c1 + h, c2:c2 + w] = x_grid.reshape(n, h, w, d)
    cols = np.zeros((n, h, w, d, k1, k2))
    for p in range(k1):
        for r in range(k2):
            cols[..., p, r] = padded[:, p:p + h, r:r + w]
    return np.concatenate([cols.reshape(n * h * w, d * k1 * k2), np.ones((n * h * w, 1))], axis=1)


def offsets(h, w):
    """(G, G, 2) integer (row, column) offsets key - query of an h x w grid, row-major tokens."""
    rc = np.stack(np.divmod(np.arange(h * w), w), axis=-1)
    return rc[None, :, :] - rc[:, None, :]


def white_kernel(p_grid, m, h, w, k1, k2):
    """The white-input kernel (D_out, D_in, K1, K2): the mean of K_q(delta) = sum_h P_h(q, q+delta) M_h over the
    samples and the queries whose key q + delta is on the grid, on the K1 x K2 window; and that mean attention
    per head spread back over (N, heads, G, G), for the defect."""
    off = offsets(h, w)
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    white = np.zeros((m.shape[1], m.shape[2], k1, k2))
    mean_full = np.zeros_like(p_grid)
    for dr in range(-(h - 1), h):
        for dc in range(-(w - 1), w):
            mask = (off[..., 0] == dr) & (off[..., 1] == dc)
            mean = p_grid[:, :, mask].mean(axis=(0, 2))  # (heads,)
            mean_full[:, :, mask] = mean[None, :, None]
            if 0 <= dr + c1 < k1 and 0 <= dc + c2 < k2:
                white[:, :, dr + c1, dc + c2] = np.einsum("h,hoi->oi", mean, m)
    return white, mean_full


def check_entry(name, entry):
    """The case holds and reproduced the module's output and the identity to 1e-10."""
    check, metrics = _cli().check, entry["metrics"]
    check(entry["status"] == "pass" and entry["verdict"] == "holds",
          f"{name}: {entry['status']} {entry['verdict']}: {entry['message']}")
    check(metrics.get("reference_rel_l2", 1) <= 1e-10, f"{name}: reference_rel_l2 {metrics.get('reference_rel_l2')}")
    check(metrics.get("identity_rel_l2", 1) <= 1e-10, f"{name}: identity_rel_l2 {metrics.get('identity_rel_l2')}")


def check_identity(name, p, m, b, x, y, tolerance=1e-12):
    """The identity the kernels are read from, on numpy's own attention: y = sum_h M_h sum_k P_h(q, k) x_k + b."""
    rebuilt = np.einsum("hoi,nhqk,nki->nqo", m, p, x, optimize=True) + b
    _cli().check(rel_l2(rebuilt, y) <= tolerance,
                 f"{name}: sum_h M_h P_h x + b recomputed here vs the module's output: {rel_l2(rebuilt, y)}")


def check_measurement(name, metrics, dump_dir, x, y, p, m, b, grid, kernel, extra=0):
    """Every number of the measurement against its recomputation from the tokens x (N, T, D_in), the output y
    (N, T, D_out), P (N, heads, T, T), M_h and b; the first `extra` tokens are not on the grid."""
    check = _cli().check
    (h, w), (k1, k2) = grid, kernel
    n, t, d_in = x.shape
    d_out, g, heads = y.shape[2], h * w, p.shape[1]
    check(t == extra + g and p.shape == (n, heads, t, t) and m.shape == (heads, d_out, d_in) and b.shape == (d_out,),
          f"{name}: shapes x {x.shape} y {y.shape} P {p.shape} M {m.shape} b {b.shape} vs grid {extra} + {h}x{w}")
    xg, yg = x[:, extra:], y[:, extra:]

    # (a) least squares in numpy; the dumped kernel through torch.nn.Conv2d(padding='same').
    a = design(xg, h, w, k1, k2)
    target = yg.reshape(n * g, d_out)
    unknowns = d_in * k1 * k2 + 1
    solution, _, rank, _ = np.linalg.lstsq(a, target, rcond=None)
    fit = a @ solution
    weight = np.load(os.path.join(dump_dir, "lstsq_conv_weight.npy"))
    bias = np.load(os.path.join(dump_dir, "lstsq_conv_bias.npy"))
    check(weight.shape == (d_out, d_in, k1, k2) and bias.shape == (d_out,),
          f"{name}: lstsq dumps {weight.shape} {bias.shape}")
    conv = nn.Conv2d(d_in, d_out, (k1, k2), padding="same").double()
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weight))
        conv.bias.copy_(torch.from_numpy(bias))
        out = conv(torch.from_numpy(xg.reshape(n, h, w, d_in).transpose(0, 3, 1, 2).copy())).numpy()
    by_torch = out.transpose(0, 2, 3, 1).reshape(n * g, d_out)
    check(rel_l2(by_torch, fit) <= 1e-9, f"{name}: Conv2d of the dumped lstsq kernel vs numpy's fit: {rel_l2(by_torch, fit)}")
    check(abs(metrics["lstsq_rel_l2"] - rel_l2(fit, target)) <= 1e-9 * max(1, rel_l2(fit, target)),
          f"{name}: lstsq_rel_l2 {metrics['lstsq_rel_l2']} vs numpy {rel_l2(fit, target)}")
    check(metrics["lstsq_rank"] == rank and metrics["lstsq_equations"] == n * g
          and metrics["lstsq_unknowns"] == unknowns, f"{name}: rank/equations/unknowns {metrics}")
    check(metrics["lstsq_underdetermined"] == (n * g < unknowns or rank < unknowns),
          f"{name}: lstsq_underdetermined {metrics['lstsq_underdetermined']} with rank {rank} of {unknowns}")
    if rank == unknowns:  # a unique minimiser: the kernel itself, not only its fit
        flat = np.concatenate([weight.reshape(d_out, -1).T, bias[None]], axis=0)
        check(rel_l2(flat, solution) <= 1e-8, f"{name}: lstsq kernel vs numpy's: {rel_l2(flat, solution)}")

    # (b) white input: the kernel, its bias b and rel_l2, the layer against it on grid tokens.
    pg = p[:, :, extra:, extra:]
    white, mean_full = white_kernel(pg, m, h, w, k1, k2)
    dumped = np.load(os.path.join(dump_dir, "conv_weight.npy"))
    check(dumped.shape == white.shape and rel_l2(dumped, white) <= 1e-10,
          f"{name}: white-input kernel {dumped.shape} vs recomputed: "
          f"{rel_l2(dumped, white) if dumped.shape == white.shape else white.shape}")
    dumped_b = np.load(os.path.join(dump_dir, "conv_bias.npy"))
    check(dumped_b.shape == b.shape and rel_l2(dumped_b, b) <= 1e-12 and np.abs(dumped_b - b).max() <= 1e-12,
          f"{name}: white-input bias vs W_out b_val + b_out recomputed")
    white_fit = a @ np.concatenate([white.reshape(d_out, -1).T, b[None]])
    check(abs(metrics["rel_l2"] - rel_l2(white_fit, target)) <= 1e-9 * max(1, rel_l2(white_fit, target)),
          f"{name}: rel_l2 {metrics['rel_l2']} vs {rel_l2(white_fit, target)}")

    # The defect: sqrt(sum ||K_q(delta) - mean_q K_q(delta)||^2 / sum ||K_q(delta)||^2), through the Gram matrix
    # of the head maps, ||sum_h a_h M_h||_F^2 = a^T G a.
    gram = np.einsum("hoi,goi->hg", m, m)
    da = pg - mean_full
    varies = np.einsum("hg,hnqk,gnqk->", gram, da.transpose(1, 0, 2, 3), da.transpose(1, 0, 2, 3), optimize=True)
    size = np.einsum("hg,hnqk,gnqk->", gram, pg.transpose(1, 0, 2, 3), pg.transpose(1, 0, 2, 3), optimize=True)
    defect = math.sqrt(max(varies, 0) / size)
    check(abs(metrics["translation_defect"] - defect) <= 1e-9 * max(defect, 1e-3),
          f"{name}: translation_defect {metrics['translation_defect']} vs {defect}")

    # Mean attention distance, masses outside the window and on the extra tokens, per head.
    off = offsets(h, w)
    distance = ((pg * np.sqrt((off ** 2).sum(-1))).sum(-1) / pg.sum(-1)).mean(axis=(0, 2))
    check(np.allclose(metrics["mean_attention_distance"], distance, rtol=1e-10, atol=1e-12),
          f"{name}: mean_attention_distance {metrics['mean_attention_distance']} vs {distance.tolist()}")
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    inside = (-c1 <= off[..., 0]) & (off[..., 0] <= k1 - 1 - c1) & (-c2 <= off[..., 1]) & (off[..., 1] <= k2 - 1 - c2)
    outside = (pg * ~inside).sum(-1).mean(axis=(0, 2))
    check(np.allclose(metrics["head_mass_outside"], outside, rtol=1e-10, atol=1e-12),
          f"{name}: head_mass_outside {metrics['head_mass_outside']} vs {outside.tolist()}")
    on_extra = p[:, :, extra:, :extra].sum(-1).mean(axis=(0, 2)) if extra else np.zeros(heads)
    check(np.allclose(metrics["head_mass_extra"], on_extra, rtol=1e-10, atol=1e-12),
          f"{name}: head_mass_extra {metrics['head_mass_extra']} vs {on_extra.tolist()}")
    check(abs(metrics["mass_outside"] - outside.mean()) <= 1e-10 * max(1, outside.mean())
          and abs(metrics["mass_extra"] - on_extra.mean()) <= 1e-10 * max(1, on_extra.mean()),
          f"{name}: mass_outside {metrics['mass_outside']}, mass_extra {metrics['mass_extra']} vs the heads' means")


def export_and_run(model, x, out, expect_cases, check_case, **kwargs):
    """Exports, runs with --dump-tensors and checks every case with check_case(case, layer_file, dump_dir, entry),
    which returns the numbers it measured; (summary, warnings caught, {case: numbers})."""
    import attnconv_torch  # the caller puts python/ on sys.path
    cli = _cli()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = attnconv_torch.export_attention_layers(model, x, out, **kwargs)
    cli.check(summary["cases"] == expect_cases, f"{out}: {summary['cases']} cases, expected {expect_cases}: {summary}")
    if summary["cases"] == 0:
        return summary, caught, {}
    run = cli.attnconv("run", os.path.join(out, "cases.json"), "--out", os.path.join(out, "report"), "--quiet",
                       "--dump-tensors", os.path.join(out, "dump"))
    cli.check(run.returncode == 0, f"{out}: run exit code {run.returncode}: {run.stderr[-2000:]}")
    found = {}
    if run.returncode != 0:
        return summary, caught, found
    report = {c["name"]: c for c in cli.load(os.path.join(out, "report", "report.json"))["cases"]}
    for case in cli.load(os.path.join(out, "cases.json"))["cases"]:
        if case["name"] not in report:
            cli.check(False, f"{case['name']}: not in the report")
            continue
        found[case["name"]] = check_case(case, os.path.join(out, case["weights"]),
                                         os.path.join(out, "dump", case["name"]), report[case["name"]])
    return summary, caught, found
