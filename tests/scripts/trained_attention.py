#!/usr/bin/python3
"""export_attention_layers and cordonnier2020.trained_attention end to end
(Debian's python3-torch, torchvision): a small torchvision VisionTransformer
(random init, seeded, float64) is exported and `attnconv run` measures its
two self-attention layers. Every case must reproduce the module's output
(reference_rel_l2 <= 1e-10); the dumped least-squares convolution, loaded into
torch.nn.Conv2d(padding='same'), must give the least-squares fit recomputed
here in numpy, and the white-input convolution, the mean attention distances,
the masses and the translation-invariance defect must match their
definitions recomputed here from torch's own attention. A timm-layout
module (qkv, proj) is exported likewise; a wrong mapping (the wrong number of
heads) fails; a tensor of the wrong shape is exit 2 naming file, case and key;
attention-like modules that cannot be mapped are listed, with a warning.

Usage: trained_attention.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import math
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn
import torchvision

from cli_check import attnconv, check, finish, load, source, work

sys.path.insert(0, os.path.join(source, "python"))
import attnconv_torch  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)


class TimmAttention(nn.Module):
    """timm.models.vision_transformer.Attention (qk_norm off), as timm writes it."""
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        q = q * self.scale
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        x = (self.attn_drop(attn) @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class WithRelativeBias(TimmAttention):
    """A Swin-like module: qkv and proj, and a relative position bias the plain layout does not hold."""
    def __init__(self, dim, num_heads):
        super().__init__(dim, num_heads)
        self.relative_position_bias_table = nn.Parameter(torch.randn(9, num_heads))


class TokenModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, 12)
        self.blocks = nn.ModuleList([TimmAttention(12, 3), TimmAttention(12, 3)])
        self.swin_like = WithRelativeBias(12, 3)
        self.cross = nn.MultiheadAttention(12, 2, batch_first=True)
        self.unused = nn.MultiheadAttention(12, 2, batch_first=True)

    def forward(self, image):  # (N, 3, 5, 6) -> 30 tokens, no class token
        x = self.embed(image.flatten(2).transpose(1, 2))
        for block in self.blocks:
            x = x + block(x)
        self.swin_like(x)
        self.cross(x, x.flip(1), x.flip(1))
        return x


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


def torch_attention(state, prefix, layout, heads, x):
    """P (N, heads, T, T) and M_h (heads, D_out, D_in) from the state_dict, independently of the C++."""
    w = state[prefix + ("in_proj_weight" if layout == "torch" else "qkv.weight")]
    b = state[prefix + ("in_proj_bias" if layout == "torch" else "qkv.bias")]
    wo = state[prefix + ("out_proj.weight" if layout == "torch" else "proj.weight")]
    d = w.shape[1]
    hd = d // heads
    qkv = x @ w.T + b
    n, t, _ = x.shape
    q, k = (qkv[..., i * d:(i + 1) * d].reshape(n, t, heads, hd).transpose(0, 2, 1, 3) for i in range(2))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = np.exp(s - s.max(-1, keepdims=True))
    p = s / s.sum(-1, keepdims=True)
    wv = w[2 * d:]
    m = np.stack([wo[:, h * hd:(h + 1) * hd] @ wv[h * hd:(h + 1) * hd] for h in range(heads)])
    return p, m


def check_case(case, layer_file, dump_dir, case_entry):
    name = case["name"]
    params, prefix = case["params"], case["weights_prefix"]
    metrics = case_entry["metrics"]
    check(case_entry["status"] == "pass" and case_entry["verdict"] == "holds",
          f"{name}: {case_entry['status']} {case_entry['verdict']}: {case_entry['message']}")
    check(metrics.get("reference_rel_l2", 1) <= 1e-10, f"{name}: reference_rel_l2 {metrics.get('reference_rel_l2')}")
    check(metrics.get("identity_rel_l2", 1) <= 1e-10, f"{name}: identity_rel_l2 {metrics.get('identity_rel_l2')}")
    data = np.load(layer_file)
    x, y = data["input"], data["reference_output"]
    extra, h, w = (int(v) for v in data["token_grid"])
    check([extra, h, w] == [params["extra_tokens"], *params["grid"]], f"{name}: token_grid {data['token_grid']}")
    k1, k2 = params["kernel"]
    n, _, d = x.shape
    g = h * w
    xg, yg = x[:, extra:], y[:, extra:]

    # (a) least squares, recomputed in numpy; the dumped kernel through torch.nn.Conv2d(padding='same').
    a = design(xg, h, w, k1, k2)
    target = yg.reshape(n * g, -1)
    solution, _, rank, _ = np.linalg.lstsq(a, target, rcond=None)
    fit = a @ solution
    weight = np.load(os.path.join(dump_dir, "lstsq_conv_weight.npy"))
    bias = np.load(os.path.join(dump_dir, "lstsq_conv_bias.npy"))
    check(weight.shape == (d, d, k1, k2) and bias.shape == (d,), f"{name}: lstsq dumps {weight.shape} {bias.shape}")
    conv = nn.Conv2d(d, d, (k1, k2), padding="same")
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weight))
        conv.bias.copy_(torch.from_numpy(bias))
        out = conv(torch.from_numpy(xg.reshape(n, h, w, d).transpose(0, 3, 1, 2).copy())).numpy()
    by_torch = out.transpose(0, 2, 3, 1).reshape(n * g, d)
    check(rel_l2(by_torch, fit) <= 1e-9, f"{name}: Conv2d of the dumped lstsq kernel vs numpy's fit: {rel_l2(by_torch, fit)}")
    check(abs(metrics["lstsq_rel_l2"] - rel_l2(fit, target)) <= 1e-9 * max(1, rel_l2(fit, target)),
          f"{name}: lstsq_rel_l2 {metrics['lstsq_rel_l2']} vs numpy {rel_l2(fit, target)}")
    check(metrics["lstsq_rank"] == rank and metrics["lstsq_equations"] == n * g
          and metrics["lstsq_unknowns"] == d * k1 * k2 + 1, f"{name}: rank/equations/unknowns {metrics}")
    if rank == d * k1 * k2 + 1:
        flat = np.concatenate([weight.reshape(d, -1).T, bias[None]], axis=0)
        check(rel_l2(flat, solution) <= 1e-8, f"{name}: lstsq kernel vs numpy's: {rel_l2(flat, solution)}")

    # (b) white input, defect, masses and distances from torch's attention.
    p, m = torch_attention({k: data[k] for k in data.files}, prefix, params["layout"], params["heads"], x)
    heads = p.shape[1]
    pg = p[:, :, extra:, extra:].reshape(n, heads, h, w, h, w)
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    mean_p = {}
    for qr in range(h):
        for qc in range(w):
            for kr in range(h):
                for kc in range(w):
                    mean_p.setdefault((kr - qr, kc - qc), []).append(pg[:, :, qr, qc, kr, kc])
    mean_p = {off: np.mean(np.concatenate(v, axis=0), axis=0) for off, v in mean_p.items()}  # per head
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    white = np.zeros((d, d, k1, k2))
    for pp in range(k1):
        for rr in range(k2):
            white[:, :, pp, rr] = np.einsum("h,hoi->oi", mean_p[(pp - c1, rr - c2)], m)
    dumped = np.load(os.path.join(dump_dir, "conv_weight.npy"))
    check(rel_l2(dumped, white) <= 1e-10, f"{name}: white-input kernel vs recomputed: {rel_l2(dumped, white)}")
    gram = np.einsum("hoi,goi->hg", m, m)
    varies = size = 0.0
    distance = np.zeros(heads)
    outside = np.zeros(heads)
    for qr in range(h):
        for qc in range(w):
            on_grid = np.zeros((n, heads))
            dist = np.zeros((n, heads))
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
    extra_mass = p[:, :, extra:, :extra].sum(-1).mean(axis=(0, 2)) if extra else np.zeros(heads)
    check(np.allclose(metrics["head_mass_extra"], extra_mass, rtol=1e-10, atol=1e-12),
          f"{name}: head_mass_extra {metrics['head_mass_extra']} vs {extra_mass.tolist()}")
    defect = math.sqrt(max(varies, 0) / size)
    check(abs(metrics["translation_defect"] - defect) <= 1e-9 * max(defect, 1e-3),
          f"{name}: translation_defect {metrics['translation_defect']} vs {defect}")
    # rel_l2: the layer against the white-input convolution on grid tokens.
    white_fit = a @ np.concatenate([white.reshape(d, -1).T, np.load(os.path.join(dump_dir, "conv_bias.npy"))[None]])
    check(abs(metrics["rel_l2"] - rel_l2(white_fit, target)) <= 1e-9 * max(1, rel_l2(white_fit, target)),
          f"{name}: rel_l2 {metrics['rel_l2']} vs {rel_l2(white_fit, target)}")
    return {"lstsq_rel_l2": metrics["lstsq_rel_l2"], "rel_l2": metrics["rel_l2"],
            "translation_defect": metrics["translation_defect"],
            "mean_attention_distance": metrics["mean_attention_distance"]}


def export_and_run(model, x, out, expect_cases, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = attnconv_torch.export_attention_layers(model, x, out, **kwargs)
    check(summary["cases"] == expect_cases, f"{out}: {summary['cases']} cases, expected {expect_cases}: {summary}")
    run = attnconv("run", os.path.join(out, "cases.json"), "--out", os.path.join(out, "report"), "--quiet",
                   "--dump-tensors", os.path.join(out, "dump"))
    check(run.returncode == 0, f"{out}: run exit code {run.returncode}: {run.stderr[-2000:]}")
    report = {c["name"]: c for c in load(os.path.join(out, "report", "report.json"))["cases"]}
    found = {}
    for case in load(os.path.join(out, "cases.json"))["cases"]:
        if case["name"] not in report:
            check(False, f"{case['name']}: not in the report")
            continue
        found[case["name"]] = check_case(case, os.path.join(out, case["weights"]),
                                         os.path.join(out, "dump", case["name"]), report[case["name"]])
    return summary, caught, found


# 1. torchvision's VisionTransformer: nn.MultiheadAttention, a class token, a 4 x 4 grid, a batch of 16.
vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                           mlp_dim=32).eval()
images = torch.randn(16, 3, 32, 32)
out = os.path.join(work, "vit")
summary, caught, found = export_and_run(vit, images, out, 2)
check([l["name"] for l in summary["layers"]] == ["encoder.layers.encoder_layer_0.self_attention",
                                                 "encoder.layers.encoder_layer_1.self_attention"],
      f"vit layers: {summary['layers']}")
check(all(l["extra_tokens"] == 1 and l["grid"] == [4, 4] for l in summary["layers"]), f"vit grid: {summary['layers']}")
check(summary["not_expressible"] == [], f"vit: not_expressible {summary['not_expressible']}")
for name, values in found.items():
    print(f"{name}: {json.dumps(values)}")

# 2. A wrong mapping fails: the same layer read with 4 heads in place of 2.
cases = load(os.path.join(out, "cases.json"))["cases"]
wrong = dict(cases[0], params=dict(cases[0]["params"], heads=4), name="wrong-heads")
wrong_file = os.path.join(out, "wrong.json")
with open(wrong_file, "w") as f:
    json.dump({"cases": [wrong]}, f)
run = attnconv("run", wrong_file, "--out", os.path.join(out, "wrong"), "--quiet")
check(run.returncode == 1, f"4 heads for a 2-head layer: exit code {run.returncode}, expected 1: {run.stderr[-500:]}")
if run.returncode == 1:
    entry = load(os.path.join(out, "wrong", "report.json"))["cases"][0]
    check(entry["status"] == "fail" and "reference_output" in entry["message"], f"wrong heads: {entry['message']}")

# 3. A tensor whose shape does not fit: exit 2 naming the file, the case and the key.
bad = dict(cases[0], params=dict(cases[0]["params"], embed_dim=8, heads=2), name="bad-shape")
bad_file = os.path.join(out, "bad.json")
with open(bad_file, "w") as f:
    json.dump({"cases": [bad]}, f)
run = attnconv("run", bad_file, "--out", os.path.join(out, "bad"), "--quiet")
check(run.returncode == 2 and "bad.json" in run.stderr and "case 'bad-shape'" in run.stderr
      and "key 'weights." in run.stderr, f"embed_dim 8 of a 16-wide layer: exit {run.returncode}: {run.stderr[-800:]}")

# 4. timm's layout (qkv, proj) on a 5 x 6 grid without class token; unmappable modules listed, with warnings.
model = TokenModel().eval()
out = os.path.join(work, "timm")
summary, caught, found = export_and_run(model, torch.randn(8, 3, 5, 6), out, 2, grid=(5, 6), extra_tokens=0)
listed = {e["name"]: e["reason"] for e in summary["not_expressible"]}
check(set(listed) == {"swin_like", "cross", "unused"}, f"timm not_expressible: {listed}")
check("relative_position_bias_table" in listed.get("swin_like", ""), f"swin_like: {listed.get('swin_like')}")
check("not self-attention" in listed.get("cross", ""), f"cross: {listed.get('cross')}")
check("did not call" in listed.get("unused", ""), f"unused: {listed.get('unused')}")
check(any("swin_like (WithRelativeBias) is not exported" in str(w.message) for w in caught), "no warning for swin_like")
check(all(c["params"]["layout"] == "timm" for c in load(os.path.join(out, "cases.json"))["cases"]), "timm layout")
for name, values in found.items():
    print(f"{name}: {json.dumps(values)}")

finish("trained_attention")
