#!/usr/bin/python3
"""export_attention_layers and cordonnier2020.trained_attention end to end
(Debian's python3-torch, torchvision): a small torchvision VisionTransformer
(random init, seeded, float64) is exported and `attnconv run` measures its
two self-attention layers. Every case must reproduce the module's output
(reference_rel_l2 <= 1e-10); the dumped least-squares convolution, loaded into
torch.nn.Conv2d(padding='same'), must give the least-squares fit recomputed
here in numpy, and the white-input convolution, the mean attention distances,
the masses and the translation-invariance defect must match their
definitions recomputed in numpy (trained_checks.py) from the layer's .npz. A timm-layout
module (qkv, proj) is exported likewise; a wrong mapping (the wrong number of
heads) fails; a tensor of the wrong shape is exit 2 naming file, case and key;
attention-like modules that cannot be mapped are listed, with a warning.

Usage: trained_attention.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

from cli_check import attnconv, check, finish, load, source, work

sys.path.insert(0, os.path.join(source, "python"))
import trained_checks  # noqa: E402
import trained_models  # noqa: E402

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


def torch_attention(state, prefix, layout, heads, x):
    """P (N, heads, T, T), M_h (heads, D_out, D_in) and b = W_out b_val + b_out from the state_dict, in numpy,
    independently of the C++."""
    w = state[prefix + ("in_proj_weight" if layout == "torch" else "qkv.weight")]
    bq = state[prefix + ("in_proj_bias" if layout == "torch" else "qkv.bias")]
    wo = state[prefix + ("out_proj.weight" if layout == "torch" else "proj.weight")]
    bo = state[prefix + ("out_proj.bias" if layout == "torch" else "proj.bias")]
    d = w.shape[1]
    hd = d // heads
    qkv = x @ w.T + bq
    n, t, _ = x.shape
    q, k = (qkv[..., i * d:(i + 1) * d].reshape(n, t, heads, hd).transpose(0, 2, 1, 3) for i in range(2))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = np.exp(s - s.max(-1, keepdims=True))
    p = s / s.sum(-1, keepdims=True)
    wv = w[2 * d:]
    m = np.stack([wo[:, h * hd:(h + 1) * hd] @ wv[h * hd:(h + 1) * hd] for h in range(heads)])
    return p, m, wo @ bq[2 * d:] + bo


def check_case(case, layer_file, dump_dir, entry):
    name, params, metrics = case["name"], case["params"], entry["metrics"]
    trained_checks.check_entry(name, entry)
    data = np.load(layer_file)
    x, y = data["input"], data["reference_output"]
    extra, h, w = (int(v) for v in data["token_grid"])
    check([extra, h, w] == [params["extra_tokens"], *params["grid"]], f"{name}: token_grid {data['token_grid']}")
    p, m, b = torch_attention({k: data[k] for k in data.files}, case["weights_prefix"], params["layout"],
                              params["heads"], x)
    trained_checks.check_identity(name, p, m, b, x, y)
    trained_checks.check_measurement(name, metrics, dump_dir, x, y, p, m, b, (h, w), params["kernel"], extra)
    return {"lstsq_rel_l2": metrics["lstsq_rel_l2"], "rel_l2": metrics["rel_l2"],
            "translation_defect": metrics["translation_defect"],
            "mean_attention_distance": metrics["mean_attention_distance"]}


def export_and_run(model, x, out, expect_cases, **kwargs):
    return trained_checks.export_and_run(model, x, out, expect_cases, check_case, **kwargs)


# 1. torchvision's VisionTransformer: nn.MultiheadAttention, a class token, a 4 x 4 grid, a batch of 16.
vit, images = trained_models.torchvision_vit()
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
