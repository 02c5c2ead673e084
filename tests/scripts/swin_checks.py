"""What the Swin end-to-end scripts share (trained_window_attention.py, trained_swin_digits.py): exporting a
model with export_attention_layers, running liu2021.trained_window_attention on it, and recomputing every
number of each case independently in numpy: Swin's attention P step by step as torchvision's
shifted_window_attention states it (pad, roll, windows, bias, mask, softmax, then back to grid
coordinates), the least-squares convolution (numpy.linalg.lstsq, the dumped kernel through
torch.nn.Conv2d(padding='same')), the white-input convolution, the translation-invariance defect,
the masses and the mean attention distances."""
import math
import os
import warnings

import numpy as np
import torch
from torch import nn

from cli_check import attnconv, check, load

import attnconv_torch  # the caller puts python/ on sys.path


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) / max(np.linalg.norm(b.ravel()), 1e-300))


def design(x_grid, h, w, k1, k2):
    """(N*H*W, D*K1*K2 + 1): the zero-padded K1 x K2 neighbourhoods, columns (channel, row, column), then 1."""
    n, _, d = x_grid.shape
    img = x_grid.reshape(n, h, w, d)
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    padded = np.zeros((n, h + k1 - 1, w + k2 - 1, d))
    padded[:, c1:c1 + h, c2:c2 + w] = img
    cols = np.zeros((n, h, w, d, k1, k2))
    for p in range(k1):
        for r in range(k2):
            cols[..., p, r] = padded[:, p:p + h, r:r + w]
    return np.concatenate([cols.reshape(n * h * w, d * k1 * k2), np.ones((n * h * w, 1))], axis=1)


def swin_attention(x, w_qkv, b_qkv, table, heads, grid, window, shift):
    """P (N, heads, H*W, H*W) between grid tokens, window by window as torchvision's shifted_window_attention
    states it, and the shift applied."""
    n, t, dim = x.shape
    (h, w), (m1, m2) = grid, window
    hp, wp = -(-h // m1) * m1, -(-w // m2) * m2
    s = [0 if m1 >= hp else shift[0], 0 if m2 >= wp else shift[1]]
    where = np.full((hp, wp), -1)
    where[:h, :w] = np.arange(t).reshape(h, w)  # grid index of each padded position, -1 on the padding
    xp = np.zeros((n, hp, wp, dim))
    xp[:, :h, :w] = x.reshape(n, h, w, dim)
    qkv = xp @ w_qkv.T + (b_qkv if b_qkv is not None else 0)
    qkv, where = np.roll(qkv, (-s[0], -s[1]), axis=(1, 2)), np.roll(where, (-s[0], -s[1]), axis=(0, 1))
    labels = np.zeros((hp, wp))
    if sum(s) > 0:
        count = 0
        for rows in (slice(0, -m1), slice(-m1, -s[0]), slice(-s[0], None)):
            for cols in (slice(0, -m2), slice(-m2, -s[1]), slice(-s[1], None)):
                labels[rows, cols] = count
                count += 1
    d = dim // heads
    a1, a2 = np.divmod(np.arange(m1 * m2), m2)
    index = (a1[:, None] - a1[None, :] + m1 - 1) * (2 * m2 - 1) + (a2[:, None] - a2[None, :] + m2 - 1)
    p_grid = np.zeros((n, heads, t, t))
    for r in range(0, hp, m1):
        for c in range(0, wp, m2):
            block = (slice(r, r + m1), slice(c, c + m2))
            tokens = qkv[:, block[0], block[1]].reshape(n, m1 * m2, 3 * dim)
            lab = labels[block].reshape(-1)
            mask = np.where(lab[:, None] != lab[None, :], -100.0, 0.0)
            ids = where[block].reshape(-1)
            for hh in range(heads):
                q = tokens[..., hh * d:(hh + 1) * d]
                k = tokens[..., dim + hh * d:dim + (hh + 1) * d]
                score = q @ k.transpose(0, 2, 1) / math.sqrt(d) + table[index, hh] + mask
                e = np.exp(score - score.max(-1, keepdims=True))
                p = e / e.sum(-1, keepdims=True)
                for a in range(m1 * m2):
                    for b in range(m1 * m2):
                        if ids[a] >= 0 and ids[b] >= 0:
                            p_grid[:, hh, ids[a], ids[b]] = p[:, a, b]
    return p_grid, s


def check_case(case, layer_file, dump_dir, entry):
    """Every number of one case against its independent recomputation; returns the measured numbers."""
    name, params, prefix, metrics = case["name"], case["params"], case["weights_prefix"], entry["metrics"]
    check(entry["status"] == "pass" and entry["verdict"] == "holds",
          f"{name}: {entry['status']} {entry['verdict']}: {entry['message']}")
    check(metrics.get("reference_rel_l2", 1) <= 1e-10, f"{name}: reference_rel_l2 {metrics.get('reference_rel_l2')}")
    check(metrics.get("identity_rel_l2", 1) <= 1e-10, f"{name}: identity_rel_l2 {metrics.get('identity_rel_l2')}")
    data = np.load(layer_file)
    x, y = data["input"], data["reference_output"]
    extra, h, w = (int(v) for v in data["token_grid"])
    check(extra == 0 and [h, w] == params["grid"], f"{name}: token_grid {data['token_grid']} vs {params['grid']}")
    k1, k2 = params["kernel"]
    n, g, d = x.shape
    heads = params["heads"]

    # (a) least squares in numpy; the dumped kernel through torch.nn.Conv2d(padding='same').
    a = design(x, h, w, k1, k2)
    target = y.reshape(n * g, -1)
    solution, _, rank, _ = np.linalg.lstsq(a, target, rcond=None)
    fit = a @ solution
    weight = np.load(os.path.join(dump_dir, "lstsq_conv_weight.npy"))
    bias = np.load(os.path.join(dump_dir, "lstsq_conv_bias.npy"))
    check(weight.shape == (d, d, k1, k2) and bias.shape == (d,), f"{name}: lstsq dumps {weight.shape} {bias.shape}")
    conv = nn.Conv2d(d, d, (k1, k2), padding="same").double()
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weight))
        conv.bias.copy_(torch.from_numpy(bias))
        out = conv(torch.from_numpy(x.reshape(n, h, w, d).transpose(0, 3, 1, 2).copy())).numpy()
    by_torch = out.transpose(0, 2, 3, 1).reshape(n * g, d)
    check(rel_l2(by_torch, fit) <= 1e-9, f"{name}: Conv2d of the dumped lstsq kernel vs numpy's fit: {rel_l2(by_torch, fit)}")
    check(abs(metrics["lstsq_rel_l2"] - rel_l2(fit, target)) <= 1e-9 * max(1, rel_l2(fit, target)),
          f"{name}: lstsq_rel_l2 {metrics['lstsq_rel_l2']} vs numpy {rel_l2(fit, target)}")
    check(metrics["lstsq_rank"] == rank and metrics["lstsq_equations"] == n * g
          and metrics["lstsq_unknowns"] == d * k1 * k2 + 1, f"{name}: rank/equations/unknowns {metrics}")

    # (b) Swin's attention recomputed here; white input, defect, masses, distances from it.
    state = {k[len(prefix):]: data[k] for k in data.files if k.startswith(prefix)}
    p, shift = swin_attention(x, state["qkv.weight"], state.get("qkv.bias"), state["relative_position_bias_table"],
                              heads, (h, w), params["window"], params["shift"])
    check(metrics["effective_shift"] == shift, f"{name}: effective_shift {metrics['effective_shift']} vs {shift}")
    wv, wo = state["qkv.weight"][2 * d:], state["proj.weight"]
    hd = d // heads
    m = np.stack([wo[:, i * hd:(i + 1) * hd] @ wv[i * hd:(i + 1) * hd] for i in range(heads)])
    # The identity the kernels are read from, on the module's own output: y = sum_h M_h sum_k P_h x_k + W_o b_v + b_o.
    b_v = state["qkv.bias"][2 * d:] if "qkv.bias" in state else np.zeros(d)
    folded = wo @ b_v + state.get("proj.bias", np.zeros(d))
    rebuilt = np.einsum("hoi,nhqk,nki->nqo", m, p, x) + folded
    check(rel_l2(rebuilt, y) <= 1e-10, f"{name}: y against sum_h M_h P_h x + b recomputed here: {rel_l2(rebuilt, y)}")
    pg = p.reshape(n, heads, h, w, h, w)
    mean_p = {}
    for qr in range(h):
        for qc in range(w):
            for kr in range(h):
                for kc in range(w):
                    mean_p.setdefault((kr - qr, kc - qc), []).append(pg[:, :, qr, qc, kr, kc])
    mean_p = {off: np.mean(np.concatenate(v, axis=0), axis=0) for off, v in mean_p.items()}
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    white = np.zeros((d, d, k1, k2))
    for pp in range(k1):
        for rr in range(k2):
            white[:, :, pp, rr] = np.einsum("h,hoi->oi", mean_p[(pp - c1, rr - c2)], m)
    dumped = np.load(os.path.join(dump_dir, "conv_weight.npy"))
    check(rel_l2(dumped, white) <= 1e-10, f"{name}: white-input kernel vs recomputed: {rel_l2(dumped, white)}")
    check(rel_l2(np.load(os.path.join(dump_dir, "conv_bias.npy")), folded) <= 1e-12, f"{name}: conv_bias")
    gram = np.einsum("hoi,goi->hg", m, m)
    varies = size = 0.0
    distance, outside = np.zeros(heads), np.zeros(heads)
    for qr in range(h):
        for qc in range(w):
            on_grid, dist = np.zeros((n, heads)), np.zeros((n, heads))
            for kr in range(h):
                for kc in range(w):
                    a_ = pg[:, :, qr, qc, kr, kc]
                    da = a_ - mean_p[(kr - qr, kc - qc)]
                    varies += np.einsum("nh,hg,ng->", da, gram, da)
                    size += np.einsum("nh,hg,ng->", a_, gram, a_)
                    on_grid += a_
                    dist += a_ * math.hypot(kr - qr, kc - qc)
                    if not (-c1 <= kr - qr <= k1 - 1 - c1 and -c2 <= kc - qc <= k2 - 1 - c2):
                        outside += a_.sum(0)
            distance += (dist / on_grid).sum(0)
    distance /= n * g
    outside /= n * g
    check(np.allclose(metrics["mean_attention_distance"], distance, rtol=1e-10, atol=1e-12),
          f"{name}: mean_attention_distance {metrics['mean_attention_distance']} vs {distance.tolist()}")
    check(np.allclose(metrics["head_mass_outside"], outside, rtol=1e-10, atol=1e-12),
          f"{name}: head_mass_outside {metrics['head_mass_outside']} vs {outside.tolist()}")
    padding = (1 - p.sum(-1)).mean(axis=(0, 2))
    check(np.allclose(metrics["head_mass_padding"], padding, rtol=1e-10, atol=1e-12),
          f"{name}: head_mass_padding {metrics['head_mass_padding']} vs {padding.tolist()}")
    defect = math.sqrt(max(varies, 0) / size)
    check(abs(metrics["translation_defect"] - defect) <= 1e-9 * max(defect, 1e-3),
          f"{name}: translation_defect {metrics['translation_defect']} vs {defect}")
    white_fit = a @ np.concatenate([white.reshape(d, -1).T, folded[None]])
    check(abs(metrics["rel_l2"] - rel_l2(white_fit, target)) <= 1e-9 * max(1, rel_l2(white_fit, target)),
          f"{name}: rel_l2 {metrics['rel_l2']} vs {rel_l2(white_fit, target)}")
    return {"lstsq_rel_l2": metrics["lstsq_rel_l2"], "rel_l2": metrics["rel_l2"],
            "translation_defect": metrics["translation_defect"], "mass_outside": metrics["mass_outside"],
            "mass_padding": metrics["mass_padding"], "effective_shift": metrics["effective_shift"],
            "mean_attention_distance": metrics["mean_attention_distance"]}


def export_and_run(model, x, out, expect_cases, **kwargs):
    """Exports, runs with --dump-tensors and checks every case; (summary, warnings caught, {case: numbers})."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = attnconv_torch.export_attention_layers(model, x, out, **kwargs)
    check(summary["cases"] == expect_cases, f"{out}: {summary['cases']} cases, expected {expect_cases}: {summary}")
    if summary["cases"] == 0:
        return summary, caught, {}
    run = attnconv("run", os.path.join(out, "cases.json"), "--out", os.path.join(out, "report"), "--quiet",
                   "--dump-tensors", os.path.join(out, "dump"))
    check(run.returncode == 0, f"{out}: run exit code {run.returncode}: {run.stderr[-2000:]}")
    found = {}
    if run.returncode != 0:
        return summary, caught, found
    report = {c["name"]: c for c in load(os.path.join(out, "report", "report.json"))["cases"]}
    for case in load(os.path.join(out, "cases.json"))["cases"]:
        if case["name"] not in report:
            check(False, f"{case['name']}: not in the report")
            continue
        found[case["name"]] = check_case(case, os.path.join(out, case["weights"]),
                                         os.path.join(out, "dump", case["name"]), report[case["name"]])
    return summary, caught, found
