#!/usr/bin/python3
"""dascoli2021.trained_gpsa and ConViT through export_attention_layers end to end (Debian's python3-torch):

 1. a ConViT-style model (tests/scripts/convit_checks.py: two GPSA blocks with ConViT's local init, the
    class token joined after them, one MHSA block; random init, its GPSA gates and positional weights
    moved off the init, float64) is exported with no grid given (read from the model) and run: the
    GPSA layers are trained_gpsa cases on the 4 x 4 patch grid without extra tokens, the MHSA layer a
    trained_attention case (layout timm, no qkv bias) with one extra token; each holds, reproduces its
    module (reference_rel_l2 <= 1e-10, identity_rel_l2 <= 1e-10), and its dumps, attention distances and
    gates agree with numpy's recomputation;
 2. a GPSA with qkv_bias on its own (grid from sqrt(T)), and one with a qk_scale of its own (listed
    under not_expressible, with a warning);
 3. bad input: qk.weight given (D, 2D) and pos_proj.weight given (3, N_h) are exit 2 naming file, case
    and key; a non-square grid is exit 2 naming params.grid; qkv_bias false for a layer with biases
    fails on reference_output;
 4. dascoli2021.convit_gpsa loads ConViT's qk.weight, proj.weight, proj.bias in PyTorch's (out, in)
    layout: its output is a PyTorch GPSA's with the same local init, and a (D, 2D) qk.weight is exit 2.

Usage: trained_gpsa.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import sys

import numpy as np
import torch

from cli_check import attnconv, check, finish, load, source, work
from convit_checks import GPSA, ConViT, check_case

sys.path.insert(0, os.path.join(source, "python"))
import trained_checks  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)


def export_and_run(model, x, out, expect_cases, **kwargs):
    return trained_checks.export_and_run(model, x, out, expect_cases, check_case, **kwargs)


def run_one(out, name, case):
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump({"cases": [case]}, f)
    return path, attnconv("run", path, "--out", os.path.join(out, name), "--quiet")


def perturb(gpsa, scale):
    """Moves a GPSA off ConViT's init, as training does: content weights of a visible size, gates and
    positional weights of their own per head."""
    with torch.no_grad():
        for linear in (gpsa.qk, gpsa.v, gpsa.proj):
            linear.weight.add_(scale * torch.randn_like(linear.weight))
            if linear.bias is not None:
                linear.bias.normal_(0, scale)
        gpsa.pos_proj.weight.add_(0.5 * torch.randn_like(gpsa.pos_proj.weight))
        gpsa.pos_proj.bias.normal_()
        gpsa.gating_param.copy_(torch.linspace(-2, 3, gpsa.num_heads))


# 1. A whole ConViT-style model: GPSA blocks, then the class token and an MHSA block.
model = ConViT(img_size=8, patch_size=2, embed_dim=16, depth=3, num_heads=4, local_up_to_layer=2,
               locality_strength=2.0)
for block in model.blocks[:2]:
    perturb(block.attn, 0.3)
with torch.no_grad():
    model.blocks[2].attn.qkv.weight.normal_(0, 0.3)
model.eval()
out = os.path.join(work, "convit")
summary, caught, found = export_and_run(model, torch.randn(12, 1, 8, 8), out, 3)
layers = {l["name"]: l for l in summary["layers"]}
check(list(layers) == ["blocks.0.attn", "blocks.1.attn", "blocks.2.attn"], f"convit layers: {summary['layers']}")
for name in ("blocks.0.attn", "blocks.1.attn"):
    check(layers.get(name, {}).get("layout") == "gpsa" and layers[name]["grid"] == [4, 4]
          and layers[name]["extra_tokens"] == 0, f"{name}: {layers.get(name)}")
check(layers.get("blocks.2.attn", {}).get("layout") == "timm" and layers["blocks.2.attn"]["extra_tokens"] == 1
      and layers["blocks.2.attn"]["grid"] == [4, 4], f"MHSA: {layers.get('blocks.2.attn')}")
check(summary["not_expressible"] == [], f"convit: not_expressible {summary['not_expressible']}")
cases = {c["name"]: c for c in load(os.path.join(out, "cases.json"))["cases"]}
check(set(cases) == {"blocks.0.attn:trained_gpsa", "blocks.1.attn:trained_gpsa", "blocks.2.attn:trained_attention"},
      f"case names {list(cases)}")
mhsa = cases.get("blocks.2.attn:trained_attention", {})
check(mhsa.get("params", {}).get("bias") is False and mhsa["params"].get("layout") == "timm", f"MHSA case: {mhsa}")
for name, values in found.items():
    print(f"{name}: {json.dumps(values)}")

# 2. A GPSA with qkv_bias alone (its grid: sqrt(T)); one with a qk_scale of its own is not expressible.
class Tokens(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gpsa = GPSA(18, 9, qkv_bias=True, locality_strength=1.5)
        self.scaled = GPSA(18, 9)
        self.scaled.scale = 0.1

    def forward(self, x):
        self.scaled(x)
        return self.gpsa(x)


tokens = Tokens()
perturb(tokens.gpsa, 0.4)
tokens.eval()
out_bias = os.path.join(work, "bias")
summary, caught, found = export_and_run(tokens, torch.randn(5, 25, 18), out_bias, 1)
listed = {e["name"]: e["reason"] for e in summary["not_expressible"]}
check(set(listed) == {"scaled"} and "qk_scale" in listed.get("scaled", ""), f"not_expressible: {listed}")
check(any("scaled (GPSA) is not exported" in str(w.message) for w in caught), "no warning for scaled")
bias_case = load(os.path.join(out_bias, "cases.json"))["cases"][0]
check(bias_case["params"].get("qkv_bias") is True and bias_case["params"]["grid"] == [5, 5], f"bias case: {bias_case}")
for name, values in found.items():
    print(f"{name}: {json.dumps(values)}")

# 3. Bad input. A transposed qk.weight (D, 2D) or pos_proj.weight (3, N_h): exit 2 naming file, case and key.
layer_file = os.path.join(out, "layers", "blocks.0.attn.npz")
data = dict(np.load(layer_file))
gpsa_case = cases["blocks.0.attn:trained_gpsa"]
for key in ("qk.weight", "pos_proj.weight"):
    bad = dict(data)
    bad["blocks.0.attn." + key] = bad["blocks.0.attn." + key].T.copy()
    stem = "bad_" + key.replace(".", "_")
    np.savez(os.path.join(out, stem + ".npz"), **bad)
    path, run = run_one(out, stem, dict(gpsa_case, name=stem, weights=stem + ".npz"))
    check(run.returncode == 2 and os.path.basename(path) in run.stderr and f"case '{stem}'" in run.stderr
          and f"key 'weights.{key}'" in run.stderr, f"{key} transposed: exit {run.returncode}: {run.stderr[-800:]}")
# A non-square grid: exit 2 naming params.grid.
path, run = run_one(out, "oblong", dict(gpsa_case, name="oblong", params=dict(gpsa_case["params"], grid=[2, 8])))
check(run.returncode == 2 and "case 'oblong'" in run.stderr and "grid" in run.stderr and "square" in run.stderr,
      f"a 2x8 grid: exit {run.returncode}: {run.stderr[-800:]}")
# qkv_bias false for a layer with qk.bias and v.bias: the biases are not loaded, and the reference fails.
path, run = run_one(out_bias, "no_bias", dict(bias_case, name="no_bias", params=dict(bias_case["params"], qkv_bias=False)))
check(run.returncode == 1, f"qkv_bias false on a biased layer: exit {run.returncode}, expected 1: {run.stderr[-500:]}")
if run.returncode == 1:
    entry = load(os.path.join(out_bias, "no_bias", "report.json"))["cases"][0]
    check(entry["status"] == "fail" and "reference_output" in entry["message"], f"no_bias: {entry['message']}")

# 4. dascoli2021.convit_gpsa by ConViT's names and layout: a PyTorch GPSA with the same local init, values I.
side, heads, head_dim, strength, gate = 7, 9, 3, 2.5, 1.5
dim = heads * head_dim
reference = GPSA(dim, heads, locality_strength=strength)
with torch.no_grad():
    reference.qk.weight.normal_(0, 0.5)
    reference.proj.weight.normal_(0, 0.5)
    reference.proj.bias.normal_(0, 0.5)
    reference.gating_param.fill_(gate)
image = torch.randn(dim, side, side)
with torch.no_grad():
    y = reference(image.reshape(dim, -1).T[None])[0].T.reshape(dim, side, side)
out_limit = os.path.join(work, "convit_gpsa")
os.makedirs(out_limit)
np.savez(os.path.join(out_limit, "gpsa.npz"), input=image.numpy(),
         **{"attn." + k: v.numpy() for k, v in reference.state_dict().items() if k in ("qk.weight", "proj.weight", "proj.bias")})
limit_case = {"name": "torch-gpsa", "proof": "dascoli2021.convit_gpsa", "expect": "fail", "weights": "gpsa.npz",
              "weights_prefix": "attn.", "params": {"image": [side, side], "heads": heads, "head_dim": head_dim,
                                                    "locality_strength": strength, "gating": gate}}
path = os.path.join(out_limit, "cases.json")
with open(path, "w") as f:
    json.dump({"cases": [limit_case]}, f)
run = attnconv("run", path, "--out", os.path.join(out_limit, "report"), "--quiet", "--dump-tensors",
               os.path.join(out_limit, "dump"))
check(run.returncode == 0, f"convit_gpsa by official names: exit {run.returncode}: {run.stderr[-800:]}")
if run.returncode == 0:
    actual = np.load(os.path.join(out_limit, "dump", "torch-gpsa", "actual.npy"))
    difference = float(np.abs(actual - y.numpy()).max())
    check(difference <= 1e-12 * float(np.abs(y.numpy()).max()),
          f"convit_gpsa's output vs PyTorch's GPSA: max_abs {difference}")
    print(f"convit_gpsa against a PyTorch GPSA (official names, (out, in)): max_abs {difference:.3g}")
bad = dict(np.load(os.path.join(out_limit, "gpsa.npz")))
bad["attn.qk.weight"] = bad["attn.qk.weight"].T.copy()
np.savez(os.path.join(out_limit, "bad.npz"), **bad)
path, run = run_one(out_limit, "bad", dict(limit_case, name="bad-qk", weights="bad.npz"))
check(run.returncode == 2 and "bad.json" in run.stderr and "case 'bad-qk'" in run.stderr
      and "key 'weights.qk.weight'" in run.stderr, f"convit_gpsa, qk (D, 2D): exit {run.returncode}: {run.stderr[-800:]}")

finish("trained_gpsa")
