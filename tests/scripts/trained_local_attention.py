#!/usr/bin/python3
"""export_attention_layers end to end for the NAT and Gaussian families (issue 23; Debian's python3-torch,
python3-sklearn): NATTEN 0.17's NeighborhoodAttention2D and epfml/attention-cnn's GaussianSelfAttention, stated
in tests/scripts/local_attention_modules.py from the official definitions, in small random models and in a
Gaussian model trained here on scikit-learn's 8x8 digits (seeded, seconds of CPU). Every case must hold with
reference_rel_l2 <= 1e-10 and identity_rel_l2 <= 1e-10; the dumps are recomputed here in numpy from the
modules' own attention (the attention itself, both convolutions, lstsq_rel_l2, rel_l2, the defect, the masses,
the mean attention distances). Modules that cannot be mapped are listed, with a warning; a wrong mapping
fails; a tensor of the wrong shape is exit 2 naming file, case and key. For Gaussian heads, the white-input
convolution of cordonnier2020.trained_gaussian_attention equals cordonnier2020.nearest_convolution's where the
attention is the same for every query, and otherwise differs by what the border does to the attention,
recomputed here; the trained proof's kernel K_q at the centre query, the one nearest_convolution reads, equals
nearest_convolution's for any heads.

Usage: trained_local_attention.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
from torch import nn

from cli_check import attnconv, check, finish, load, source, work
from digits_common import digits
from local_attention_modules import (GaussianSelfAttention, NeighborhoodAttention2D, gaussian_config,
                                     gaussian_head_maps, gaussian_probabilities, neighborhood_head_maps,
                                     neighborhood_probabilities)
import trained_checks
import trained_models

sys.path.insert(0, os.path.join(source, "python"))

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)  # the same numbers on any machine, and no oversubscription beside ctest -j
torch.manual_seed(0)


def check_case(name, entry, layer_file, dump_dir, params, p, m, b):
    """The case's report entry and dumps against numpy's recomputation from P (N, heads, T, T), M_h and b."""
    metrics = entry["metrics"]
    trained_checks.check_entry(name, entry)
    data = np.load(layer_file)
    x, y = data["input"], data["reference_output"]
    h, w = params["grid"]
    check(list(data["token_grid"]) == [0, h, w], f"{name}: token_grid {data['token_grid']}")
    dumped_p = np.load(os.path.join(dump_dir, "attention.npy"))
    check(dumped_p.shape == p.shape and np.abs(dumped_p - p).max() <= 1e-12,
          f"{name}: dumped attention vs the module's: {np.abs(dumped_p - p).max() if dumped_p.shape == p.shape else dumped_p.shape}")
    trained_checks.check_identity(name, p, m, b, x, y, tolerance=1e-10)
    trained_checks.check_measurement(name, metrics, dump_dir, x, y, p, m, b, (h, w), params["kernel"])
    return {"lstsq_rel_l2": metrics["lstsq_rel_l2"], "rel_l2": metrics["rel_l2"],
            "translation_defect": metrics["translation_defect"],
            "mean_attention_distance": [round(v, 4) for v in metrics["mean_attention_distance"]]}


def export_and_run(model, x, out, expect_cases, statement, **kwargs):
    """Exports, runs and checks every case; statement(module, tokens (N, H, W, D) float64 tensor) gives P, M, b."""
    modules = dict(model.named_modules())

    def check_one(case, layer_file, dump_dir, entry):
        tokens = torch.from_numpy(np.load(layer_file)["input"])
        h, w = case["params"]["grid"]
        with torch.no_grad():
            p, m, b = statement(modules[case["weights_prefix"][:-1]], tokens.reshape(tokens.shape[0], h, w, -1))
        return check_case(case["name"], entry, layer_file, dump_dir, case["params"],
                          p.detach().numpy(), m.detach().numpy(), b.detach().numpy())

    return trained_checks.export_and_run(model, x, out, expect_cases, check_one, **kwargs)


def nat_statement(module, x):
    return (neighborhood_probabilities(module, x), *neighborhood_head_maps(module))


def gaussian_statement(module, x):
    return (gaussian_probabilities(module, x), *gaussian_head_maps(module))


def show(found):
    for name, values in found.items():
        print(f"{name}: {json.dumps(values)}")


# 1. NAT: clamped windows, dilation, rpb or not, qkv bias or not, on an 8 x 8 grid, a batch of 6.
class TinyNat(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, 16, 2, stride=2)
        self.levels = nn.ModuleList([NeighborhoodAttention2D(16, 2, 3, rel_pos_bias=True),
                                     NeighborhoodAttention2D(16, 4, 3, dilation=2, rel_pos_bias=True, qkv_bias=False),
                                     NeighborhoodAttention2D(16, 2, 5)])
        self.norms = nn.ModuleList([nn.LayerNorm(16) for _ in self.levels])
        self.oblong = NeighborhoodAttention2D(16, 2, (3, 5), rel_pos_bias=True)
        with torch.no_grad():
            for level in [*self.levels, self.oblong]:
                if level.rpb is not None:
                    level.rpb.normal_(0, 1)  # a bias far from its initialisation, so that its indexing matters

    def forward(self, image):
        x = self.embed(image).permute(0, 2, 3, 1)
        for level, norm in zip(self.levels, self.norms):
            x = x + level(norm(x))
        self.oblong(x)
        return x


started = time.time()
nat = TinyNat().eval()
out = os.path.join(work, "nat")
summary, caught, found = export_and_run(nat, torch.randn(6, 3, 16, 16), out, 3, nat_statement)
listed = {e["name"]: e["reason"] for e in summary["not_expressible"]}
check(set(listed) == {"oblong"} and "kernel_size (3, 5)" in listed["oblong"], f"nat not_expressible: {listed}")
check(any("oblong (NeighborhoodAttention2D) is not exported" in str(w.message) for w in caught), "no warning for oblong")
check([l["name"] for l in summary["layers"]] == ["levels.0", "levels.1", "levels.2"], f"nat layers {summary['layers']}")
show(found)
nat_cases = load(os.path.join(out, "cases.json"))["cases"]
check(nat_cases[1]["params"]["dilation"] == 2 and not nat_cases[1]["params"]["qkv_bias"]
      and not nat_cases[2]["params"]["rel_pos_bias"], f"nat params {[c['params'] for c in nat_cases]}")

# A wrong mapping fails: the dilated layer read with dilation 1.
wrong = dict(nat_cases[1], params=dict(nat_cases[1]["params"], dilation=1), name="wrong-dilation")
with open(os.path.join(out, "wrong.json"), "w") as f:
    json.dump({"cases": [wrong]}, f)
run = attnconv("run", os.path.join(out, "wrong.json"), "--out", os.path.join(out, "wrong"), "--quiet")
check(run.returncode == 1, f"dilation 1 for a dilation-2 layer: exit {run.returncode}, expected 1: {run.stderr[-500:]}")
# A tensor whose shape does not fit: exit 2 naming the file, the case and the key.
bad = dict(nat_cases[0], params=dict(nat_cases[0]["params"], kernel_size=5), name="bad-rpb")
with open(os.path.join(out, "bad.json"), "w") as f:
    json.dump({"cases": [bad]}, f)
run = attnconv("run", os.path.join(out, "bad.json"), "--out", os.path.join(out, "bad"), "--quiet")
check(run.returncode == 2 and "bad.json" in run.stderr and "case 'bad-rpb'" in run.stderr
      and "rpb" in run.stderr, f"kernel_size 5 for a 3x3 rpb: exit {run.returncode}: {run.stderr[-800:]}")
print(f"nat: {time.time() - started:.1f} s")


# 2. Gaussian, random: full spreads; isotropic, returning its attention too; the blur trick (not expressible).
class TinyGaussian(nn.Module):
    def __init__(self):
        super().__init__()
        self.full = GaussianSelfAttention(gaussian_config(6, 4, mu_std=1.5, sigma_std=0.3))
        self.isotropic = GaussianSelfAttention(gaussian_config(6, 3, isotropic=True, mu_std=1.0, sigma_std=0.3),
                                               output_attentions=True)
        self.blur = GaussianSelfAttention(gaussian_config(6, 2, blur=True))

    def forward(self, x):  # (N, W, H, C)
        x = x + self.full(x, None)
        x = x + self.isotropic(x, None)[0]
        self.blur(x, None)
        return x


started = time.time()
gaussian = TinyGaussian().double().eval()
out = os.path.join(work, "gaussian")
summary, caught, found = export_and_run(gaussian, torch.randn(5, 7, 6, 6), out, 2, gaussian_statement)
listed = {e["name"]: e["reason"] for e in summary["not_expressible"]}
check(set(listed) == {"blur"} and "blur_trick" in listed["blur"], f"gaussian not_expressible: {listed}")
check(any("blur (GaussianSelfAttention) is not exported" in str(w.message) for w in caught), "no warning for blur")
gaussian_cases = load(os.path.join(out, "cases.json"))["cases"]
check([c["params"]["isotropic"] for c in gaussian_cases] == [False, True] and gaussian_cases[0]["params"]["grid"] == [7, 6],
      f"gaussian params {[c['params'] for c in gaussian_cases]}")
show(found)
bad = dict(gaussian_cases[0], params=dict(gaussian_cases[0]["params"], isotropic=True), name="bad-spreads")
with open(os.path.join(out, "bad.json"), "w") as f:
    json.dump({"cases": [bad]}, f)
run = attnconv("run", os.path.join(out, "bad.json"), "--out", os.path.join(out, "bad"), "--quiet")
check(run.returncode == 2 and "bad.json" in run.stderr and "case 'bad-spreads'" in run.stderr
      and "attention_spreads" in run.stderr, f"isotropic for 2x2 spreads: exit {run.returncode}: {run.stderr[-800:]}")
print(f"gaussian: {time.time() - started:.1f} s")


# 3. A Gaussian model trained here on the 8x8 digits (trained_models.GaussianDigits): pixels embedded, two
#    blocks of GaussianSelfAttention (9 heads, Cordonnier et al.'s quadratic encoding, full spreads), residual,
#    LayerNorm and MLP as in BERT's blocks, a linear classifier on the flattened grid.
started = time.process_time()
model, accuracy = trained_models.digits_gaussian()
trained_for = time.process_time() - started
print(f"gaussian digits: test accuracy {accuracy:.3f} after {trained_for:.1f} s of CPU")
check(accuracy >= 0.85, f"the Gaussian digits model reached only {accuracy:.3f} test accuracy")
x_test = digits()[2][:32]
out = os.path.join(work, "digits")
summary, caught, found = export_and_run(model, x_test, out, 2, gaussian_statement)
check(summary["not_expressible"] == [], f"digits not_expressible {summary['not_expressible']}")
show(found)
for name in found:
    layer = name.split(":")[0]
    centres = np.load(os.path.join(out, "layers", layer + ".npz"))[layer + ".attention_centers"]
    print(f"{name}: centres {np.round(centres, 2).tolist()}")


# 4. The white-input convolution against cordonnier2020.nearest_convolution, for the same heads. Where every
#    query sees the same attention (uniform heads, A_h = 0; or heads at the origin so sharp that the rest of
#    the grid gets exp(-60)), the two must agree to round-off; otherwise the white-input one averages the
#    attention of every query, the border's too, and the gap is what numpy's recomputation of it says.
def both_proofs(name, centers, spreads, value_weight, value_bias, image, kernel=(3, 3)):
    """Runs both proofs on the same heads; returns (white-input weight, nearest_convolution's weight, P)."""
    heads, c = centers.shape[0], value_bias.shape[0]
    h, w = image.shape[1:]
    folder = os.path.join(work, "white", name)
    os.makedirs(folder, exist_ok=True)
    inverse = np.einsum("hij,hkj->hik", spreads, spreads)
    tensors = {"attention_centers": centers, "attention_spreads": spreads, "value.weight": value_weight,
               "value.bias": value_bias, "centers": centers, "precisions": inverse / 2,
               "w_val": np.repeat(np.eye(c)[None], heads, axis=0), "w_out": value_weight.T.copy(), "b_out": value_bias,
               "input": image.reshape(c, h * w).T.copy(), "image": image}
    for key, t in tensors.items():
        np.save(os.path.join(folder, key.replace(".", "_") + ".npy"), t)
    path = lambda key: key.replace(".", "_") + ".npy"  # noqa: E731
    trained = {"name": "trained", "proof": "cordonnier2020.trained_gaussian_attention",
               "params": {"hidden_size": c, "heads": heads, "grid": [h, w], "kernel": list(kernel)},
               "weights": {k: path(k) for k in ("attention_centers", "attention_spreads", "value.weight", "value.bias",
                                                "input")}}
    analytic = {"name": "analytic", "proof": "cordonnier2020.nearest_convolution",
                "params": {"image": [h, w], "in_channels": c, "out_channels": c, "heads": heads, "head_dim": c,
                           "padding": "none", "kernel": list(kernel)},
                "weights": {**{k: path(k) for k in ("centers", "precisions", "w_val", "w_out", "b_out")},
                            "input": path("image")}}
    with open(os.path.join(folder, "cases.json"), "w") as f:
        json.dump({"cases": [trained, analytic]}, f)
    run = attnconv("run", os.path.join(folder, "cases.json"), "--out", os.path.join(folder, "report"), "--quiet",
                   "--dump-tensors", os.path.join(folder, "dump"))
    check(run.returncode in (0, 1), f"white/{name}: exit {run.returncode}: {run.stderr[-800:]}")
    white = np.load(os.path.join(folder, "dump", "trained", "conv_weight.npy"))
    nearest = np.load(os.path.join(folder, "dump", "analytic", "conv_weight.npy"))
    p = np.load(os.path.join(folder, "dump", "trained", "attention.npy"))
    check(np.abs(np.load(os.path.join(folder, "dump", "trained", "conv_bias.npy"))
                 - np.load(os.path.join(folder, "dump", "analytic", "conv_bias.npy"))).max() == 0, f"white/{name}: biases")
    return white, nearest, p


rng = np.random.default_rng(23)
heads, c, h, w = 4, 3, 7, 6
value_weight, value_bias = rng.normal(size=(c, heads * c)), rng.normal(size=c)
image = rng.normal(size=(c, h, w))
centers = rng.normal(size=(heads, 2))
exact = {"uniform": np.zeros((heads, 2, 2)),  # A_h = 0: centres irrelevant, every query uniform over the grid
         "sharp-at-origin": np.repeat(np.eye(2)[None] * math.sqrt(120.0), heads, axis=0)}  # A_h = 60 I, Delta_h = 0
for name, spreads in exact.items():
    white, nearest, _ = both_proofs(name, centers if name == "uniform" else np.zeros((heads, 2)), spreads,
                                    value_weight, value_bias, image)
    gap = np.abs(white - nearest).max()
    print(f"white-input vs nearest_convolution, {name}: max |difference| {gap:.3g} (kernel max {np.abs(nearest).max():.3g})")
    check(gap <= 1e-14 * max(1.0, np.abs(nearest).max()), f"white/{name}: the two kernels differ by {gap}")
spreads = np.repeat(np.eye(2)[None], heads, axis=0) * 1.2
white, nearest, p = both_proofs("off-centre", centers, spreads, value_weight, value_bias, image)
m = np.stack([value_weight[:, i * c:(i + 1) * c] for i in range(heads)])
recomputed, _ = trained_checks.white_kernel(p, m, h, w, 3, 3)
check(trained_checks.rel_l2(white, recomputed) <= 1e-12,
      f"white/off-centre: white kernel vs numpy {trained_checks.rel_l2(white, recomputed)}")
# nearest_convolution reads the attention of one query, the image's centre ((H-1)/2, (W-1)/2): the trained
# proof's own K_q at that query, from its dumped attention, is the analytic kernel to round-off for any heads.
qc1, qc2 = (h - 1) // 2, (w - 1) // 2
centre = np.zeros_like(nearest)
for a in range(3):
    for b in range(3):
        key = (qc1 + a - 1) * w + (qc2 + b - 1)
        centre[:, :, a, b] = np.einsum("h,hoi->oi", p[0, :, qc1 * w + qc2, key], m)
centre_gap = np.abs(centre - nearest).max()
print(f"K_q at the centre query vs nearest_convolution, off-centre heads: max |difference| {centre_gap:.3g}")
check(centre_gap <= 1e-14 * max(1.0, np.abs(nearest).max()),
      f"white/off-centre: K_q at the centre query differs from nearest_convolution's kernel by {centre_gap}")
gap = trained_checks.rel_l2(white, nearest)
print(f"white-input vs nearest_convolution, off-centre heads on a {h}x{w} grid: rel_l2 {gap:.3g} (a finding: the "
      "border queries' attention is renormalised over fewer keys)")
check(gap > 1e-6, f"white/off-centre: the border changes nothing ({gap})? the comparison would not be a test")

finish("trained_local_attention")
