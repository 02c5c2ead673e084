#!/usr/bin/python3
"""Every registered proof's `expected` and `actual`, recomputed from its dump
folder alone: DIR/<case>/case.json (the resolved parameters, metrics, verdict)
and the .npy files beside it, with numpy and torch (float64) only, each proof's
formula stated here from its paper (docs/tensor_dumps.md says what each file
holds). For the local-attention proofs it reuses the independent PyTorch
statements of tests/fixtures/check_local_dumps.py and make_fixtures.py.

It runs one case of every proof `attnconv proofs --json` lists (the smallest
float64 case of cases/ by memory estimate, a float32 one only when there is no
other) with --dump-tensors, then per case: case.json names the proof, its
params, status, verdict, metrics, the tool's version and commit, and one entry
per .npy of the folder (dtype, shape, source); every tensor a rule recomputes
agrees with its dump within LIMIT (max |recomputed - dumped| / max |recomputed|);
a rule recomputes `expected` and `actual` whenever the proof declares them. A
proof without a rule in RULES fails the test.

Usage: dump_recompute.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from cli_check import attnconv, check, finish, source, work

sys.path.insert(0, os.path.join(source, "tests", "fixtures"))
import check_local_dumps as local  # noqa: E402
import make_fixtures as mf  # noqa: E402

torch.set_default_dtype(torch.float64)

# Two float64 evaluations of one formula in different orders differ by
# round-off (measured: at most 7.1e-16 of the largest output over the cases
# chosen), as check_local_dumps.py and check_dumps_with_torch.py allow; a float32
# dump, recomputed in float64 from its float32 numbers, by float32's.
LIMIT = {"float64": 1e-12, "float32": 1e-5}


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name + ".npy")).astype(np.float64))


def pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def sides(padding, kernel, dilation):
    """(top, bottom, left, right) of a padding parameter (docs/design.md, "Convolution")."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":  # total d (K - 1), the extra one bottom/right, as PyTorch
        out = []
        for k, dil in zip(kernel, dilation):
            out += [dil * (k - 1) // 2, dil * (k - 1) - dil * (k - 1) // 2]
        return tuple(out)
    if isinstance(padding, int):
        return (padding,) * 4
    if len(padding) == 2:
        return (padding[0], padding[0], padding[1], padding[1])
    return tuple(padding)


def pad(x, top, bottom, left, right, mode="zeros"):
    """x (C, H, W) padded; mode as the case's padding_mode."""
    if mode == "zeros":
        return F.pad(x[None], (left, right, top, bottom))[0]
    return F.pad(x[None], (left, right, top, bottom), mode=mode)[0]


def conv2d(x, w, b, padding4, mode, stride, dilation, groups=1):
    """The textbook convolution, (C_out, H_out, W_out): pad, then F.conv2d."""
    return F.conv2d(pad(x, *padding4, mode)[None], w, b, stride=stride, dilation=dilation, groups=groups)[0]


# --- Eq. 8 of Cordonnier et al. (ICLR 2020), the layer every MHSA proof dumps ---

def encoding(name, d1, d2):
    """r_delta of the encoding, (..., D_p)."""
    if name == "quadratic":
        return torch.stack([d1 * d1 + d2 * d2, d1, d2], -1)
    if name == "quadratic_general":
        return torch.stack([d1 * d1, d2 * d2, d1 * d2, d1, d2], -1)
    if name == "quadratic_1d":
        return torch.stack([d2 * d2, d2], -1)
    raise ValueError(name)


def offsets(h, w):
    """delta = k - q (row, column) of every query q and key k of an H x W image, row-major tokens."""
    rows = torch.arange(h).repeat_interleave(w).double()
    cols = torch.arange(w).repeat(h).double()
    return rows[None, :] - rows[:, None], cols[None, :] - cols[:, None]


def mhsa(x, d, enc, tokens=None):
    """Eq. 8 on the (C, H, W) image x with the dumped layer (w_qry, w_key, w_key_hat, u, v, w_val, w_out, b_out):
    A_qk = (X_q W_qry)(X_k W_key)^T + (X_q W_qry).(W^_key r) + u.(X_k W_key) + v.(W^_key r), softmax over all keys,
    concat_h(P X W_val) W_out + b_out; as (D_out, H, W). `tokens` replaces X (the absolute encoding's)."""
    _, h, w = x.shape
    X = x.reshape(x.shape[0], h * w).T if tokens is None else tokens
    r = encoding(enc, *offsets(h, w))                        # (T, T, D_p)
    w_qry, w_key, w_hat, u, v = (load(d, n) for n in ("w_qry", "w_key", "w_key_hat", "u", "v"))
    w_val, w_out, b_out = load(d, "w_val"), load(d, "w_out"), load(d, "b_out")
    heads = []
    for hd in range(w_qry.shape[0]):
        q, k = X @ w_qry[hd], X @ w_key[hd]
        pos = r @ w_hat[hd].T                                 # (T, T, D_k): W^_key r_delta
        score = q @ k.T + torch.einsum("qd,qkd->qk", q, pos) + (k @ u[hd])[None, :] + pos @ v[hd]
        heads.append(torch.softmax(score, -1) @ (X @ w_val[hd]))
    y = torch.cat(heads, 1) @ w_out + b_out
    return y.T.reshape(-1, h, w)


def aligned(y, kernel, stride, dilation, out_shape):
    """The MHSA of the padded image read at (i s1 + c1 d1, j s2 + c2 d2), c = ((K1 - 1) // 2, (K2 - 1) // 2)."""
    c = [(k - 1) // 2 for k in kernel]
    rows = [i * stride[0] + c[0] * dilation[0] for i in range(out_shape[-2])]
    cols = [j * stride[1] + c[1] * dilation[1] for j in range(out_shape[-1])]
    return y[:, rows][:, :, cols]


# --- the rules: proof id -> (case.json, folder) -> {dump name: recomputed tensor} ---

def conv_case(case, d):
    """expected: the case's convolution; the params of proof/conv_case.hpp (and Theorem 1's)."""
    p = case["params"]
    kernel, stride, dilation = pair(p["kernel"]), pair(p["stride"]), pair(p["dilation"])
    padding4 = tuple(case["metrics"].get("padding_resolved") or sides(p["padding"], kernel, dilation))
    x, w = load(d, "input"), load(d, "conv_weight")
    b = load(d, "conv_bias") if p["bias"] else None
    expected = conv2d(x, w, b, padding4, p.get("padding_mode", "zeros"), stride, dilation, p.get("groups", 1))
    return x, w, b, kernel, stride, dilation, padding4, expected


def decomposition(case, d):
    """Pan et al. Eq. (2)-(4): per tap (p, q) a 1x1 convolution of the padded input (Stage I), shifted by
    (p d1, q d2) and subsampled by the stride, summed (Stage II)."""
    x, w, b, kernel, stride, dilation, padding4, expected = conv_case(case, d)
    xp = pad(x, *padding4, case["params"].get("padding_mode", "zeros"))
    groups = case["params"].get("groups", 1)
    out = torch.zeros_like(expected)
    for p_ in range(kernel[0]):
        for q in range(kernel[1]):
            y = F.conv2d(xp[None], w[:, :, p_:p_ + 1, q:q + 1], groups=groups)[0]
            r0, c0 = p_ * dilation[0], q * dilation[1]
            out += y[:, r0:r0 + stride[0] * out.shape[1]:stride[0], c0:c0 + stride[1] * out.shape[2]:stride[1]]
    if b is not None:
        out += b.view(-1, 1, 1)
    return {"expected": expected, "actual": out}


def theorem1(case, d):
    x, w, b, kernel, stride, dilation, padding4, expected = conv_case(case, d)
    enc = case["metrics"]["encoding"]
    y = mhsa(pad(x, *padding4, case["params"].get("padding_mode", "zeros")), d, enc)
    return {"expected": expected, "actual": aligned(y, kernel, stride, dilation, expected.shape)}


def theorem1_1d(case, d):
    p = case["params"]
    x, w = load(d, "input"), load(d, "conv_weight")
    b = load(d, "conv_bias") if p["bias"] else None
    left, right = case["metrics"]["padding_resolved"]
    mode = p.get("padding_mode", "zeros")
    xp = pad(x[:, None, :], 0, 0, left, right, mode)
    expected = F.conv1d(xp[:, 0][None], w, b, stride=p["stride"], dilation=p["dilation"], groups=p.get("groups", 1))[0]
    y = mhsa(xp, d, "quadratic_1d")
    actual = aligned(y, (1, p["kernel"]), (1, p["stride"]), (1, p["dilation"]), (1, expected.shape[-1]))[:, 0]
    return {"expected": expected, "actual": actual}


def padding_remark(case, d):
    p = case["params"]
    x, w = load(d, "input"), load(d, "conv_weight")
    b = load(d, "conv_bias") if p["bias"] else None
    kernel, dilation = pair(p["kernel"]), pair(p["dilation"])
    c = [(k - 1) // 2 for k in kernel]
    padding4 = (c[0] * dilation[0], (kernel[0] - 1 - c[0]) * dilation[0],
                c[1] * dilation[1], (kernel[1] - 1 - c[1]) * dilation[1])
    expected = conv2d(x, w, b, padding4, "zeros", (1, 1), dilation)
    padded = aligned(mhsa(pad(x, *padding4), d, "quadratic"), kernel, (1, 1), dilation, expected.shape)
    return {"expected": expected, "actual": mhsa(x, d, "quadratic"), "actual_padded": padded}


def absolute_encoding(case, d):
    """The same layer of Eq. 8 on the padded image's tokens with P_p = (p1, p2, |p|^2, 1) appended ("reserved")
    or added to the first four channels ("added")."""
    x, w, b, kernel, stride, dilation, padding4, expected = conv_case(case, d)
    xp = pad(x, *padding4, case["params"].get("padding_mode", "zeros"))
    _, h, wd = xp.shape
    rows = torch.arange(h).repeat_interleave(wd).double()
    cols = torch.arange(wd).repeat(h).double()
    positions = torch.stack([rows, cols, rows * rows + cols * cols, torch.ones_like(rows)], 1)
    tokens = xp.reshape(xp.shape[0], -1).T
    if case["params"]["positions"] == "reserved":
        tokens = torch.cat([tokens, positions], 1)
    else:
        tokens = tokens.clone()
        tokens[:, :4] += positions
    y = mhsa(xp, d, "quadratic", tokens)
    return {"expected": expected, "actual": aligned(y, kernel, stride, dilation, expected.shape)}


def nearest_convolution(case, d):
    """actual: Eq. 8 (quadratic_general) on the input, zero-padded "same" first with "padding": "same", cropped;
    expected: the dumped nearest convolution, zero-padded "same"."""
    p = case["params"]
    x, w, b = load(d, "input"), load(d, "conv_weight"), load(d, "conv_bias")
    kernel = case["metrics"]["kernel_resolved"]
    padding4 = sides("same", kernel, (1, 1))
    expected = conv2d(x, w, b, padding4, "zeros", (1, 1), (1, 1))
    if p["padding"] == "same":
        top, bottom, left, right = padding4
        y = mhsa(pad(x, *padding4), d, "quadratic_general")
        actual = y[:, top:y.shape[1] - bottom, left:y.shape[2] - right]
    else:
        actual = mhsa(x, d, "quadratic_general")
    return {"expected": expected, "actual": actual}


def lemma1(case, d):
    x, w_qry, w_key, w_val = (load(d, n) for n in ("input", "w_qry", "w_key", "w_val"))
    w_out, b_out = load(d, "w_out"), load(d, "b_out")
    heads, d_h = w_val.shape[0], w_val.shape[2]
    sa = [torch.softmax((x @ w_qry[h]) @ (x @ w_key[h]).T, -1) @ (x @ w_val[h]) for h in range(heads)]
    summed = sum(sa[h] @ w_out[h * d_h:(h + 1) * d_h] for h in range(heads)) + b_out
    return {"expected": summed, "actual": torch.cat(sa, 1) @ w_out + b_out}


def lightweight(case, d):
    """fairseq's lightweight convolution (kernel softmax(logits_h); head h = c // (C / N_h) in
    LightweightConv1dTBC, c mod N_h in LightweightConv1d; zero padding k on both sides, or padding_l = K - 1
    causal) and the relative-position attention y[c, i] = sum_j softmax_j(beta_h(j - i)) x[c, j], beta the
    logit of tap j - i + padding_l (masked or clipped outside the window); both plus the optional bias."""
    p = case["params"]
    x, logits = load(d, "input"), load(d, "kernel_logits")
    channels, length = x.shape
    heads, taps = logits.shape
    left = taps - 1 if p.get("padding") == "causal" else (taps - 1) // 2
    right = taps - 1 - left
    if p.get("class", "LightweightConv1dTBC") == "LightweightConv1d":
        head_of = torch.arange(channels) % heads
    else:
        head_of = torch.arange(channels) // (channels // heads)
    kernel = torch.softmax(logits, -1)[head_of]                     # (C, K)
    conv = F.conv1d(F.pad(x, (left, right))[None], kernel[:, None, :], groups=channels)[0]
    delta = torch.arange(length)[None, :] - torch.arange(length)[:, None]   # j - i
    tap = (delta + left).clamp(0, taps - 1)
    if p["bias"] == "clipped":
        beta = logits[:, tap]
    else:
        beta = torch.where((delta >= -left) & (delta <= right), logits[:, tap], torch.tensor(-math.inf))
    weights = torch.softmax(beta, -1)                               # (N_h, L, L)
    attention = torch.einsum("cij,cj->ci", weights[head_of], x)
    b = load(d, "conv_bias")[:, None] if p.get("conv_bias") else 0
    return {"expected": conv + b, "actual": attention + b}


def gpsa(case, d):
    """ConViT's GPSA (d'Ascoli et al. Eq. 5), x W layout: A_h = (1 - sigma(lambda_h)) softmax(q.k / sqrt(d_h)) +
    sigma(lambda_h) softmax(v_pos^h . (delta1, delta2, |delta|^2)), renormalised; y = concat_h(A_h X W_val^h) W_proj
    + b_proj; expected the unpadded convolution of limit_kernel with bias b_proj."""
    x = load(d, "input")
    w_qry, w_key, w_val, w_proj, b_proj = (load(d, n) for n in ("w_qry", "w_key", "w_val", "w_proj", "b_proj"))
    v_pos, gating = load(d, "v_pos"), load(d, "gating")
    dim, h, wd = x.shape
    heads = v_pos.shape[0]
    d_h = dim // heads
    X = x.reshape(dim, -1).T
    q, k, v = X @ w_qry, X @ w_key, X @ w_val
    d1, d2 = offsets(h, wd)
    r = torch.stack([d1, d2, d1 * d1 + d2 * d2], -1)
    out = []
    for hd in range(heads):
        cols = slice(hd * d_h, (hd + 1) * d_h)
        patch = torch.softmax(q[:, cols] @ k[:, cols].T / math.sqrt(d_h), -1)
        pos = torch.softmax(r @ v_pos[hd], -1)
        gate = torch.sigmoid(gating[hd])
        a = (1 - gate) * patch + gate * pos
        out.append((a / a.sum(-1, keepdim=True)) @ v[:, cols])
    y = torch.cat(out, 1) @ w_proj + b_proj
    expected = F.conv2d(x[None], load(d, "limit_kernel"), b_proj)[0]
    return {"expected": expected, "actual": y.T.reshape(dim, h, wd)}


def trained_attention(case, d):
    """torch's nn.MultiheadAttention / timm's Attention forward from the dumped w_qkv, b_qkv, w_proj, b_proj;
    expected the white-input convolution (conv_weight, conv_bias, padding 'same') on the grid tokens."""
    p = case["params"]
    x = load(d, "input")
    x = x[None] if x.dim() == 2 else x
    w_qkv, b_qkv, w_proj, b_proj = (load(d, n) for n in ("w_qkv", "b_qkv", "w_proj", "b_proj"))
    n, t, dim = x.shape
    heads = p["heads"]
    d_h = dim // heads
    q, k, v = (x @ w_qkv.T + b_qkv).split(dim, -1)
    split = lambda a: a.reshape(n, t, heads, d_h).transpose(1, 2)   # (N, N_h, T, d_h)
    attention = torch.softmax(split(q) @ split(k).transpose(-1, -2) / math.sqrt(d_h), -1)
    y = (attention @ split(v)).transpose(1, 2).reshape(n, t, dim) @ w_proj.T + b_proj
    gh, gw = p["grid"]
    grid = x[:, p["extra_tokens"]:].reshape(n, gh, gw, dim).permute(0, 3, 1, 2)
    expected = F.conv2d(grid, load(d, "conv_weight"), load(d, "conv_bias"), padding="same")
    expected = expected.permute(0, 2, 3, 1).reshape(n, gh * gw, -1)
    return {"expected": expected, "actual": y if case.get("batch") else y[0], "attention": attention}


def trained_family(case, d):
    """Any trained-attention family from its dumped attention P (N, N_h, T, T), head maps M_h and folded bias b:
    actual y_q = sum_h sum_k P_h(q, k) M_h x_k + b (the identity the kernels are read from; the family's own
    forward is recomputed against its module by the exporter's tests); expected the white-input convolution
    (conv_weight, conv_bias, padding 'same') on the grid tokens."""
    p = case["params"]
    x = load(d, "input")
    x = x[None] if x.dim() == 2 else x
    attention, maps, bias = load(d, "attention"), load(d, "head_maps"), load(d, "folded_bias")
    n, t, dim = x.shape
    y = torch.einsum("nhqk,hoi,nki->nqo", attention, maps, x) + bias
    gh, gw = p["grid"]
    extra = p.get("extra_tokens", 0)
    grid = x[:, extra:].reshape(n, gh, gw, dim).permute(0, 3, 1, 2)
    expected = F.conv2d(grid, load(d, "conv_weight"), load(d, "conv_bias"), padding="same")
    expected = expected.permute(0, 2, 3, 1).reshape(n, gh * gw, -1)
    return {"expected": expected, "actual": y if case.get("batch") else y[0]}


def neighborhood(case, d):
    """check 2 and 3 as check_local_dumps.py states them; check 1 as Eq. 8 with content and v_pos . r_delta on
    the top-left S x S crop (a window as large as the crop is global attention)."""
    p = case["params"]
    x, w, b = load(d, "input"), load(d, "conv_weight"), load(d, "conv_bias")
    kernel, dil = pair(p["kernel"])[0], p["dilation"]
    reach = kernel // 2 * dil
    out = local.neighborhood(p, d)
    out["expected"] = conv2d(x, w, b if p["bias"] else None, (reach,) * 4, "zeros", (1, 1), (dil, dil))
    s = case["metrics"]["global_side"]
    crop = x[:, :s, :s]
    X = crop.reshape(crop.shape[0], -1).T
    w_qry, w_key, v_pos = load(d, "w_qry"), load(d, "w_key"), load(d, "v_pos")
    w_val, w_out, b_out = load(d, "w_val"), load(d, "w_out"), load(d, "b_out")
    r = encoding("quadratic", *offsets(s, s))
    heads = [torch.softmax((X @ w_qry[h]) @ (X @ w_key[h]).T + r @ v_pos[h], -1) @ (X @ w_val[h])
             for h in range(w_val.shape[0])]
    dense = (torch.cat(heads, 1) @ w_out + b_out).T.reshape(-1, s, s)
    out["global_crop_expected"] = dense
    out["global_crop_actual"] = dense
    return out


def swin(case, d):
    """check 2 as check_local_dumps.py states it; check 1 (Han et al.) as Swin's window attention with the
    dumped w_qry, w_key, random_table and the construction's values X W_val^h."""
    p = case["params"]
    x, w, b = load(d, "input"), load(d, "conv_weight"), load(d, "conv_bias")
    k = pair(p["kernel"])[0]
    out = local.swin(p, d)
    out["expected"] = conv2d(x, w, b if p["bias"] else None, (k // 2,) * 4, "zeros", (1, 1), (1, 1))
    m = pair(p["window"])
    shift = tuple(case["metrics"]["shift"])
    if p.get("small_image") == "window_is_image" and min(x.shape[1], x.shape[2]) <= m[0]:
        m = (min(x.shape[1], x.shape[2]),) * 2  # the classification repository's rule: the window is the image
    xp = F.pad(x, (0, -x.shape[2] % m[1], 0, -x.shape[1] % m[0]))
    w_qry, w_key, w_val, table = load(d, "w_qry"), load(d, "w_key"), load(d, "w_val"), load(d, "random_table")
    b_qry, b_key, b_val = (load(d, n)[:, None, None, :] for n in ("b_qry", "b_key", "b_val"))  # zeros without qkv_bias
    q = torch.einsum("chw,ncd->nhwd", xp, w_qry) + b_qry
    kk = torch.einsum("chw,ncd->nhwd", xp, w_key) + b_key
    v = torch.einsum("chw,ncd->nhwd", xp, w_val) + b_val
    for suffix, s in (("", (0, 0)), ("_shifted", shift)):
        windowed = local.lf.swin_window_attention(q, kk, v, table, m, s)
        out["han_windowed" + suffix] = windowed
        out["han_connected" + suffix] = windowed
    return out


def acmix_module(case, d):
    """ACmixFixture (make_fixtures.py) with the dumped state_dict: actual its convolution path; expected the
    convolution of [x; 1] by the dumped derived kernel (zero padding k // 2, the case's stride)."""
    p = case["params"]
    m = mf.ACmixFixture(p["in_channels"], p["out_channels"], p["kernel_att"], p["heads"], p["kernel_conv"],
                        p["stride"], os.path.exists(os.path.join(d, "dep_conv.bias.npy")))
    m.load_state_dict({k: load(d, k) for k in m.state_dict()})
    x = load(d, "input")
    batch = x.dim() == 4
    x = x if batch else x[None]
    att, conv = m.paths(x)
    out = m(x)
    ones = torch.cat([x, torch.ones_like(x[:, :1])], 1)
    derived = F.conv2d(ones, load(d, "conv_weight"), load(d, "conv_bias"), stride=p["stride"],
                       padding=p["kernel_conv"] // 2)
    one = (lambda t: t) if batch else (lambda t: t[0])
    return {"expected": one(derived), "actual": one(conv), "conv_out": one(conv), "attention_out": one(att),
            "output": one(out)}


def window_vs_neighborhood(case, d):
    return local.acmix(case["params"], d)


def cost_table(case, d):
    """Counts only: its dumps hold the input and kernel whose decomposition is counted, no expected/actual."""
    return {}


RULES = {
    "acmix2022.conv_decomposition": decomposition,
    "acmix2022.cost_table": cost_table,
    "acmix2022.module": acmix_module,
    "acmix2022.shift_as_depthwise": decomposition,
    "acmix2022.window_vs_neighborhood": window_vs_neighborhood,
    "chang2021.relative_position_lightweight_conv": lightweight,
    "cordonnier2020.absolute_encoding": absolute_encoding,
    "cordonnier2020.lemma1": lemma1,
    "cordonnier2020.nearest_convolution": nearest_convolution,
    "cordonnier2020.padding_remark": padding_remark,
    "cordonnier2020.theorem1": theorem1,
    "cordonnier2020.theorem1_1d": theorem1_1d,
    "cordonnier2020.trained_attention": trained_attention,
    "cordonnier2020.trained_gaussian_attention": trained_family,
    "dascoli2021.trained_gpsa": trained_family,
    "hassani2023.trained_neighborhood_attention": trained_family,
    "liu2021.trained_window_attention": trained_family,
    "dascoli2021.convit_gpsa": gpsa,
    "hassani2023.neighborhood_attention": neighborhood,
    "liu2021.swin_window_attention": swin,
}


# --- the run ---

def mebibytes(estimate):
    number, unit = estimate.split()
    return float(number) * {"B": 2**-20, "KiB": 2**-10, "MiB": 1, "GiB": 2**10, "TiB": 2**20}[unit]


def float32_case(path, name):
    """Whether the case file gives the case dtype float32 (or sweeps dtype)."""
    with open(path) as f:
        for c in json.load(f)["cases"]:
            if c["name"] == name.split("[")[0]:
                params = c.get("params", {})
                return params.get("dtype") == "float32" or "dtype" in c.get("sweep", {})
    return False


def chosen_cases():
    """proof -> (case name, file): the smallest float64 case of cases/, else the smallest."""
    listing = attnconv("list", os.path.join(source, "cases"))
    check(listing.returncode == 0, f"attnconv list cases exit code {listing.returncode}: {listing.stderr}")
    best = {}
    for line in listing.stdout.splitlines():
        name, proof, path, estimate = line.split("\t")
        key = (float32_case(path, name), mebibytes(estimate))
        if proof not in best or key < best[proof][0]:
            best[proof] = (key, name, path)
    return {proof: (name, path) for proof, (_, name, path) in best.items()}


def check_case_json(proof, case, folder, declared):
    for key in ("name", "proof", "file", "sweep_group", "sweep_point", "params", "expect", "tolerance", "status", "verdict", "metrics", "message",
                "tool", "tensors"):
        check(key in case, f"{proof}: case.json has no '{key}'")
    check(case.get("proof") == proof, f"{proof}: case.json names proof {case.get('proof')}")
    check(all(k in case.get("tool", {}) for k in ("version", "git_commit")), f"{proof}: case.json tool lacks version/commit")
    files = {f for f in os.listdir(folder) if f.endswith(".npy")}
    listed = {t["file"] for t in case.get("tensors", {}).values()}
    check(files == listed, f"{proof}: case.json lists {sorted(listed ^ files)} unlike the folder")
    for name, t in case.get("tensors", {}).items():
        check("source" in t and "dtype" in t and "shape" in t, f"{proof}: case.json tensor {name} lacks source/dtype/shape")
        if name in declared:
            check(t.get("meaning") == declared[name], f"{proof}: case.json's meaning of {name} is not its declaration")


def main():
    run = attnconv("proofs", "--json")
    check(run.returncode == 0, f"attnconv proofs --json exit code {run.returncode}")
    proofs = {p["id"]: {d["name"]: d["meaning"] for d in p["dumps"]} for p in json.loads(run.stdout)}
    cases = chosen_cases()
    worst = {}
    for proof, declared in sorted(proofs.items()):
        if proof not in RULES:
            check(False, f"{proof}: no recompute rule in tests/scripts/dump_recompute.py RULES")
            continue
        if proof not in cases:
            check(False, f"{proof}: no case in cases/ to dump")
            continue
        name, path = cases[proof]
        dump = os.path.join(work, "dump-" + proof)
        run = attnconv("run", path, "--filter", name, "--out", os.path.join(work, "report-" + proof),
                       "--dump-tensors", dump, "--quiet")
        check(run.returncode in (0, 1), f"{proof}: run of {name} exit code {run.returncode}: {run.stderr}")
        folder = os.path.join(dump, name)
        if not os.path.exists(os.path.join(folder, "case.json")):
            check(False, f"{proof} ({name}): no case.json in {folder}")
            continue
        with open(os.path.join(folder, "case.json")) as f:
            case = json.load(f)
        check_case_json(proof, case, folder, declared)
        with torch.no_grad():
            recomputed = RULES[proof](case, folder)
        needed = {"expected", "actual"} & set(declared)
        check(needed <= set(recomputed), f"{proof}: the rule recomputes {sorted(recomputed)}, not {sorted(needed)}")
        dtype = case["params"].get("dtype", "float64")
        errors = []
        for tensor, ref in recomputed.items():
            dumped = np.load(os.path.join(folder, tensor + ".npy")).astype(np.float64)
            ref = ref.numpy()
            if dumped.shape != ref.shape:
                check(False, f"{proof}: {tensor}.npy has shape {dumped.shape}, recomputed {ref.shape}")
                continue
            scale = np.abs(ref).max()
            error = float(np.abs(ref - dumped).max() / scale) if scale > 0 else float(np.abs(dumped).max())
            check(error <= LIMIT[dtype], f"{proof} ({name}): {tensor} differs by {error:.1e} (limit {LIMIT[dtype]})")
            worst[dtype] = max(worst.get(dtype, 0.0), error)
            errors.append(f"{tensor} {error:.1e}")
        print(f"{proof}: {name} ({dtype}, {case['verdict']}): {', '.join(errors) or 'nothing to recompute'}")
    finish(f"{len(proofs)} proofs; worst relative difference " +
           ", ".join(f"{k} {v:.1e}" for k, v in sorted(worst.items())))


main()
