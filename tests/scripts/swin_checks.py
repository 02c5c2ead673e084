"""What the Swin end-to-end scripts share (trained_window_attention.py, trained_swin_digits.py): exporting a
model with export_attention_layers, running liu2021.trained_window_attention on it, and recomputing every
number of each case independently in numpy: Swin's attention P step by step as torchvision's
shifted_window_attention states it (pad, roll, windows, bias, mask, softmax, then back to grid
coordinates); from it trained_checks.py recomputes the least-squares convolution (numpy.linalg.lstsq,
the dumped kernel through torch.nn.Conv2d(padding='same')), the white-input convolution, the
translation-invariance defect, the masses and the mean attention distances."""
import math

import numpy as np

from cli_check import check
import trained_checks


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
    trained_checks.check_entry(name, entry)
    data = np.load(layer_file)
    x, y = data["input"], data["reference_output"]
    extra, h, w = (int(v) for v in data["token_grid"])
    check(extra == 0 and [h, w] == params["grid"], f"{name}: token_grid {data['token_grid']} vs {params['grid']}")
    n, g, d = x.shape
    heads = params["heads"]

    # Swin's attention recomputed here; the measurement from it (trained_checks).
    state = {k[len(prefix):]: data[k] for k in data.files if k.startswith(prefix)}
    p, shift = swin_attention(x, state["qkv.weight"], state.get("qkv.bias"), state["relative_position_bias_table"],
                              heads, (h, w), params["window"], params["shift"])
    check(metrics["effective_shift"] == shift, f"{name}: effective_shift {metrics['effective_shift']} vs {shift}")
    wv, wo = state["qkv.weight"][2 * d:], state["proj.weight"]
    hd = d // heads
    m = np.stack([wo[:, i * hd:(i + 1) * hd] @ wv[i * hd:(i + 1) * hd] for i in range(heads)])
    b_v = state["qkv.bias"][2 * d:] if "qkv.bias" in state else np.zeros(d)
    folded = wo @ b_v + state.get("proj.bias", np.zeros(d))
    trained_checks.check_identity(name, p, m, folded, x, y, tolerance=1e-10)
    trained_checks.check_measurement(name, metrics, dump_dir, x, y, p, m, folded, (h, w), params["kernel"])
    padding = (1 - p.sum(-1)).mean(axis=(0, 2))
    check(np.allclose(metrics["head_mass_padding"], padding, rtol=1e-10, atol=1e-12),
          f"{name}: head_mass_padding {metrics['head_mass_padding']} vs {padding.tolist()}")
    return {"lstsq_rel_l2": metrics["lstsq_rel_l2"], "rel_l2": metrics["rel_l2"],
            "translation_defect": metrics["translation_defect"], "mass_outside": metrics["mass_outside"],
            "mass_padding": metrics["mass_padding"], "effective_shift": metrics["effective_shift"],
            "mean_attention_distance": metrics["mean_attention_distance"]}


def export_and_run(model, x, out, expect_cases, **kwargs):
    """Exports, runs with --dump-tensors and checks every case; (summary, warnings caught, {case: numbers})."""
    return trained_checks.export_and_run(model, x, out, expect_cases, check_case, **kwargs)
