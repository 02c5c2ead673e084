#!/usr/bin/python3
"""export_attention_layers and liu2021.trained_window_attention end to end (Debian's python3-torch,
torchvision): torchvision's SwinTransformer (random init, seeded, float64) on a 16 x 16 image (an 8 x 8
grid: a plain and a shifted block) and on a 10 x 10 image (a 5 x 5 grid padded to 8 x 8), and a model of
microsoft/Swin-Transformer's SwinTransformerBlock (written here from its definition: WindowAttention
called on windows with the block's mask) are exported and `attnconv run` measures every window-attention
layer. Every case must hold with reference_rel_l2 and identity_rel_l2 <= 1e-10, and every number is
recomputed independently in numpy (swin_checks.py). The microsoft blocks' exported tokens and output
must be the block's: norm1's output, and what the block adds before its MLP. A wrong mapping (the shift
or the window of another block) fails; a table of the wrong shape is exit 2 naming file, case and key;
modules that cannot be mapped (Swin V2, dropout that acts, a WindowAttention outside a block, qk_scale)
are listed, with a warning.

Usage: trained_window_attention.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import sys

import numpy as np
import torch
from torch import nn
from torchvision.models.swin_transformer import ShiftedWindowAttention, ShiftedWindowAttentionV2

from cli_check import attnconv, check, finish, load, source, work

sys.path.insert(0, os.path.join(source, "python"))
import swin_checks  # noqa: E402
import trained_checks  # noqa: E402
import trained_models  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)


class WindowAttention(nn.Module):
    """microsoft/Swin-Transformer's WindowAttention, by its names and definition: attention inside one
    window of M1 x M2 tokens, q scaled by head_dim ** -0.5, the relative position bias, the block's mask."""
    def __init__(self, dim, window_size, num_heads, qkv_bias=True, qk_scale=None):
        super().__init__()
        self.dim, self.window_size, self.num_heads = dim, window_size, num_heads
        self.scale = qk_scale or (dim // num_heads) ** -0.5
        m1, m2 = window_size
        self.relative_position_bias_table = nn.Parameter(torch.randn((2 * m1 - 1) * (2 * m2 - 1), num_heads))
        a1, a2 = torch.div(torch.arange(m1 * m2), m2, rounding_mode="floor"), torch.arange(m1 * m2) % m2
        index = (a1[:, None] - a1[None, :] + m1 - 1) * (2 * m2 - 1) + (a2[:, None] - a2[None, :] + m2 - 1)
        self.register_buffer("relative_position_index", index)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x, mask=None):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn + self.relative_position_bias_table[self.relative_position_index.flatten()].reshape(n, n, -1).permute(2, 0, 1)
        if mask is not None:
            windows = mask.shape[0]
            attn = (attn.reshape(b // windows, windows, self.num_heads, n, n) + mask[None, :, None]).reshape(b, self.num_heads, n, n)
        x = (self.attn_drop(attn.softmax(-1)) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj_drop(self.proj(x))


def partition(x, m):
    b, h, w, c = x.shape
    return x.reshape(b, h // m, m, w // m, m, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, m * m, c)


def reverse(windows, m, h, w):
    b = windows.shape[0] // ((h // m) * (w // m))
    return windows.reshape(b, h // m, w // m, m, m, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


class SwinBlock(nn.Module):
    """microsoft/Swin-Transformer's SwinTransformerBlock, by its names and definition (no fused kernel)."""
    def __init__(self, dim, input_resolution, num_heads, window_size=7, shift_size=0, qk_scale=None):
        super().__init__()
        self.input_resolution, self.window_size, self.shift_size = input_resolution, window_size, shift_size
        if min(input_resolution) <= window_size:
            self.shift_size, self.window_size = 0, min(input_resolution)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, (self.window_size, self.window_size), num_heads, qk_scale=qk_scale)
        self.drop_path = nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        mask = None
        if self.shift_size > 0:
            h, w = input_resolution
            m, s = self.window_size, self.shift_size
            img = torch.zeros(1, h, w, 1)
            count = 0
            for rows in (slice(0, -m), slice(-m, -s), slice(-s, None)):
                for cols in (slice(0, -m), slice(-m, -s), slice(-s, None)):
                    img[:, rows, cols, :] = count
                    count += 1
            labels = partition(img, m).reshape(-1, m * m)
            mask = (labels[:, None, :] - labels[:, :, None]).ne(0).double() * -100.0
        self.register_buffer("attn_mask", mask)

    def forward(self, x):
        h, w = self.input_resolution
        b, _, c = x.shape
        shortcut = x
        x = self.norm1(x).reshape(b, h, w, c)
        if self.shift_size:
            x = torch.roll(x, (-self.shift_size, -self.shift_size), (1, 2))
        x = reverse(self.attn(partition(x, self.window_size), mask=self.attn_mask), self.window_size, h, w)
        if self.shift_size:
            x = torch.roll(x, (self.shift_size, self.shift_size), (1, 2))
        x = shortcut + self.drop_path(x.reshape(b, h * w, c))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class MicrosoftModel(nn.Module):
    """Patch embedding, then blocks of microsoft's definition: W-MSA, SW-MSA on 8 x 8, and a 4 x 4 stage
    whose window 7 covers it (so the block sets M = 4 and no shift)."""
    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, 12, 2, 2)
        self.blocks = nn.ModuleList([SwinBlock(12, (8, 8), 3, 4, 0), SwinBlock(12, (8, 8), 3, 4, 2)])
        self.merge = nn.Linear(48, 12)
        self.last = SwinBlock(12, (4, 4), 2, 7, 3)

    def forward(self, image):
        x = self.embed(image).flatten(2).transpose(1, 2)  # (N, 64, 12)
        for block in self.blocks:
            x = block(x)
        n = x.shape[0]
        x = x.reshape(n, 4, 2, 4, 2, 12).permute(0, 1, 3, 2, 4, 5).reshape(n, 16, 48)
        return self.last(self.merge(x))


class Unmappable(nn.Module):
    """Modules the exporter must list: Swin V2, torchvision with attention dropout, a microsoft
    WindowAttention called on its own (no block), one with qk_scale."""
    def __init__(self):
        super().__init__()
        self.v2 = ShiftedWindowAttentionV2(12, [4, 4], [2, 2], 3).double()  # its coordinate table is float32
        self.dropping = ShiftedWindowAttention(12, [4, 4], [0, 0], 3, attention_dropout=0.1)
        self.alone = WindowAttention(12, (4, 4), 3)
        self.scaled = SwinBlock(12, (8, 8), 3, 4, 0, qk_scale=0.3)

    def forward(self, x):  # x (N, 8, 8, 12)
        self.v2(x)
        self.dropping(x)
        self.alone(partition(x, 4))
        self.scaled(x.flatten(1, 2))
        return x


def report_numbers(found):
    for name, values in found.items():
        print(f"{name}: {json.dumps(values)}")


# 1. torchvision's SwinTransformer on 16 x 16 images: an 8 x 8 grid, W-MSA then SW-MSA (shift [2, 2]).
model, images = trained_models.torchvision_swin()
out = os.path.join(work, "torchvision")
summary, caught, found = swin_checks.export_and_run(model, images, out, 2)
check([(l["name"], l["grid"], l["layout"]) for l in summary["layers"]] ==
      [("features.1.0.attn", [8, 8], "torchvision"), ("features.1.1.attn", [8, 8], "torchvision")],
      f"torchvision layers: {summary['layers']}")
check(summary["not_expressible"] == [], f"torchvision: not_expressible {summary['not_expressible']}")
check([v["effective_shift"] for v in found.values()] == [[0, 0], [2, 2]], f"shifts: {found}")
check(all(abs(v["mass_padding"]) <= 1e-12 for v in found.values()), f"no padding on 8 x 8: {found}")
report_numbers(found)

# 2. A wrong mapping fails: the shifted layer read without its shift, or the plain one with a shift.
cases = load(os.path.join(out, "cases.json"))["cases"]
for label, case, shift in (("no-shift", cases[1], [0, 0]), ("shifted", cases[0], [2, 2])):
    wrong = dict(case, params=dict(case["params"], shift=shift), name=label)
    wrong_file = os.path.join(out, label + ".json")
    with open(wrong_file, "w") as f:
        json.dump({"cases": [wrong]}, f)
    run = attnconv("run", wrong_file, "--out", os.path.join(out, label), "--quiet")
    check(run.returncode == 1, f"{label}: exit code {run.returncode}, expected 1: {run.stderr[-500:]}")
    if run.returncode == 1:
        entry = load(os.path.join(out, label, "report.json"))["cases"][0]
        check(entry["status"] == "fail" and "reference_output" in entry["message"], f"{label}: {entry['message']}")

# 3. A table whose shape does not fit (the window of another layer): exit 2 naming the file, the case and the key.
bad = dict(cases[1], params=dict(cases[1]["params"], window=[2, 2], shift=[1, 1]), name="bad-table")
bad_file = os.path.join(out, "bad.json")
with open(bad_file, "w") as f:
    json.dump({"cases": [bad]}, f)
run = attnconv("run", bad_file, "--out", os.path.join(out, "bad"), "--quiet")
check(run.returncode == 2 and "bad.json" in run.stderr and "case 'bad-table'" in run.stderr
      and "relative_position_bias_table" in run.stderr, f"window [2, 2] of a 4 x 4 table: exit {run.returncode}: "
      f"{run.stderr[-800:]}")

# 4. torchvision on 10 x 10 images: a 5 x 5 grid padded with zero tokens to 8 x 8 (their values are b_v).
torch.manual_seed(1)
model = trained_models.tv_swin()
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith("qkv.bias") or name.endswith("relative_position_bias_table"):
            p.normal_()  # a visible b_v and a bias that moves attention onto the padding
summary, caught, found = swin_checks.export_and_run(model, torch.randn(6, 3, 10, 10), os.path.join(work, "padded"), 2)
check(all(l["grid"] == [5, 5] for l in summary["layers"]), f"padded grid: {summary['layers']}")
check(all(v["mass_padding"] > 0.01 for v in found.values()), f"attention on the padding: {found}")
check([v["effective_shift"] for v in found.values()] == [[0, 0], [2, 2]], f"padded shifts: {found}")
report_numbers(found)

# 5. microsoft's blocks: W-MSA, SW-MSA and a block whose window covers its grid.
torch.manual_seed(2)
model = MicrosoftModel().eval()
images = torch.randn(6, 3, 16, 16)
out = os.path.join(work, "microsoft")
summary, caught, found = swin_checks.export_and_run(model, images, out, 3)
check([(l["name"], l["grid"], l["layout"]) for l in summary["layers"]] ==
      [("blocks.0.attn", [8, 8], "microsoft"), ("blocks.1.attn", [8, 8], "microsoft"), ("last.attn", [4, 4], "microsoft")],
      f"microsoft layers: {summary['layers']}")
check(summary["not_expressible"] == [], f"microsoft: not_expressible {summary['not_expressible']}")
check([v["effective_shift"] for v in found.values()] == [[0, 0], [2, 2], [0, 0]], f"microsoft shifts: {found}")
check([c["params"]["window"] for c in load(os.path.join(out, "cases.json"))["cases"]] == [[4, 4], [4, 4], [4, 4]],
      "microsoft windows")
# The exported tokens and output are the block's: norm1(x), and block(x) = x + y + mlp(norm2(x + y)).
seen = {}
hooks = [b.register_forward_pre_hook(lambda mod, args, key=key: seen.__setitem__(key, args[0]))
         for key, b in (("blocks.0", model.blocks[0]), ("blocks.1", model.blocks[1]), ("last", model.last))]
with torch.no_grad():
    model(images)
    for key, block in (("blocks.0", model.blocks[0]), ("blocks.1", model.blocks[1]), ("last", model.last)):
        layer = np.load(os.path.join(out, "layers", key + ".attn.npz"))
        x_in = seen[key]
        y = torch.from_numpy(layer["reference_output"])
        check(torch.equal(torch.from_numpy(layer["input"]), block.norm1(x_in)), f"{key}: input is not norm1(x)")
        z = x_in + y
        z = z + block.mlp(block.norm2(z))
        check(trained_checks.rel_l2(z.numpy(), block(x_in).numpy()) <= 1e-14, f"{key}: the block is not x + y + mlp(norm2(x + y))")
for h in hooks:
    h.remove()
report_numbers(found)

# 6. What cannot be mapped is listed, with a warning, and nothing else is exported.
summary, caught, found = swin_checks.export_and_run(Unmappable().eval(), torch.randn(2, 8, 8, 12),
                                                    os.path.join(work, "unmappable"), 0)
listed = {e["name"]: e["reason"] for e in summary["not_expressible"]}
check(set(listed) == {"v2", "dropping", "alone", "scaled.attn"}, f"unmappable: {listed}")
check("Swin V2" in listed.get("v2", ""), f"v2: {listed.get('v2')}")
check("attention_dropout" in listed.get("dropping", ""), f"dropping: {listed.get('dropping')}")
check("outside a SwinTransformerBlock" in listed.get("alone", ""), f"alone: {listed.get('alone')}")
check("qk_scale" in listed.get("scaled.attn", ""), f"scaled: {listed.get('scaled.attn')}")
check(all(any(f"{name} (" in str(w.message) for w in caught) for name in listed), "a warning for each")

finish("trained_window_attention")
