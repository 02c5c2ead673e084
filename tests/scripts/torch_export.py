#!/usr/bin/python3
"""python/attnconv_torch.py end to end (Debian's python3-torch): a small CNN
holding every variant (groups, depthwise, a channel multiplier, stride,
dilation, an even kernel, every padding mode, "same"/"valid", no bias, 1D, a
batch of 2) is exported, `attnconv run` checks it, and every case must pass
and agree with PyTorch's own layer output (reference_max_abs); a layer no
proof covers (ConvTranspose2d) is reported, not skipped; max_pixels crops and
recomputes the reference; the two blocks of docs/check_your_network.md
("Export and run", shown again in the README) run as written.

Usage: torch_export.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR [--mobilenet]
(--mobilenet: also a MobileNet-style network, timed; not run by ctest).
"""
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings

import jsonschema
import numpy
import torch
from torch import nn

from cli_check import attnconv, binary, check, finish, load, source, work

sys.path.insert(0, os.path.join(source, "python"))
import attnconv_torch  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)


class PadsInForward(nn.Conv2d):
    """A subclass with its own forward (as timm's Conv2dSame): its parameters say padding 0."""
    def forward(self, x):
        return super().forward(nn.functional.pad(x, (1, 1, 1, 1)))


class EveryVariant(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),                                          # zeros, int padding
            nn.ReLU(inplace=True),                                                  # rewrites that output
            nn.Conv2d(4, 4, 3, padding="same", groups=2, padding_mode="reflect"),  # groups 2
            nn.Conv2d(4, 4, 3, padding=1, groups=4, padding_mode="replicate"),     # depthwise
            nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=4, padding_mode="circular"),  # multiplier 2
            nn.Conv2d(8, 4, (2, 3), stride=2, padding=(0, 1)),                     # even kernel, stride
            nn.Conv2d(4, 3, 1, padding="valid", bias=False))
        self.up = nn.ConvTranspose2d(3, 3, 2, stride=2)                             # no proof for it
        self.unused = nn.Conv2d(3, 3, 1)                                            # never called
        self.padded = PadsInForward(3, 3, 3)                                        # not what its parameters say
        self.sequence = nn.Sequential(
            nn.Conv1d(3, 4, 3, padding="same", padding_mode="reflect"),
            nn.Conv1d(4, 4, 3, stride=2, dilation=2, padding=2, groups=2, padding_mode="circular"),
            nn.Conv1d(4, 4, 2, groups=4, padding="valid", padding_mode="replicate"))

    def forward(self, x):
        y = self.features(x)
        return self.up(y).sum() + self.sequence(y.mean(2)).sum() + self.padded(y).sum()


def run_export(model, x, out, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = attnconv_torch.export_conv_layers(model, x, out, **options)
    return summary, [str(w.message) for w in caught]


def check_run(out, expect_cases, limit):
    """Runs out/cases.json; every case passes and its reference_max_abs is within limit."""
    run = attnconv("run", os.path.join(out, "cases.json"), "--out", os.path.join(out, "report"), "--quiet")
    check(run.returncode == 0, f"{out}: run exit code {run.returncode}: {run.stderr[-2000:]}")
    if run.returncode not in (0, 1):
        return []
    cases = load(os.path.join(out, "report", "report.json"))["cases"]
    check(len(cases) == expect_cases, f"{out}: {len(cases)} cases, expected {expect_cases}")
    for case in cases:
        metrics = case.get("metrics", {})
        check(case["status"] == "pass", f"{case['name']}: {case['status']}: {case.get('message')}")
        check(metrics.get("reference_max_abs", float("inf")) <= limit,
              f"{case['name']}: reference_max_abs {metrics.get('reference_max_abs')} > {limit}")
    return cases


model = EveryVariant()
x = torch.randn(2, 3, 8, 16)
out = os.path.join(work, "every_variant")
summary, caught = run_export(model, x, out)
conv_layers = [m for m in model.modules()
               if isinstance(m, (nn.Conv1d, nn.Conv2d)) and m is not model.unused and m is not model.padded]
check(len(summary["layers"]) == len(conv_layers), f"{len(summary['layers'])} layers exported of {len(conv_layers)}")
check([e["name"] for e in summary["not_expressible"]] == ["up", "padded", "unused"],
      f"not_expressible: {summary['not_expressible']}")
check(any("up (ConvTranspose2d) is not exported" in w for w in caught), f"no warning for 'up': {caught}")
check(any("unused (Conv2d) is not exported: the forward pass" in w for w in caught), f"no warning for 'unused': {caught}")

# The case file against the generated schema and the layer's own geometry.
schema = json.loads(attnconv("schema", "cases").stdout)
cases_file = load(os.path.join(out, "cases.json"))
try:
    jsonschema.Draft202012Validator(schema).validate(cases_file)
except jsonschema.ValidationError as error:
    check(False, f"cases.json against attnconv schema cases: {error.message}")
by_name = {c["name"]: c for c in cases_file["cases"]}
grouped = by_name.get("features.4:theorem1", {}).get("params", {})
check(grouped.get("groups") == 4 and grouped.get("dilation") == [2, 2] and grouped.get("padding_mode") == "circular"
      and grouped.get("heads") == 9 and grouped.get("head_dim") == 4, f"features.4:theorem1 params: {grouped}")
check(by_name.get("sequence.0:theorem1_1d", {}).get("proof") == "cordonnier2020.theorem1_1d",
      "a Conv1d is not checked by cordonnier2020.theorem1_1d")
check(by_name.get("sequence.0:conv_decomposition", {}).get("params", {}).get("image") == [1, 8],
      "a Conv1d is not decomposed as a 1 x L image")
check(by_name.get("features.2:theorem1", {}).get("params", {}).get("padding") == "same", "'same' not kept")
reported = check_run(out, 2 * len(conv_layers), 1e-12)
print(f"every variant: {len(conv_layers)} layers, {len(reported)} cases, worst reference_max_abs "
      f"{max((c['metrics'].get('reference_max_abs', 0) for c in reported), default=float('nan')):.1e}")

# A case that misdescribes its layer (zeros for reflect: same shapes, the theorem holds for
# the convolution it describes) fails on the layer's own output.
wrong = os.path.join(work, "misdescribed")
run_export(nn.Sequential(nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect")), torch.randn(1, 2, 6, 6), wrong)
check_run(wrong, 2, 1e-12)
misdescribed = load(os.path.join(wrong, "cases.json"))
for case in misdescribed["cases"]:
    case["params"]["padding_mode"] = "zeros"
with open(os.path.join(wrong, "cases.json"), "w") as f:
    json.dump(misdescribed, f)
run = attnconv("run", os.path.join(wrong, "cases.json"), "--out", os.path.join(wrong, "zeros"), "--quiet")
check(run.returncode == 1, f"a case with the wrong padding_mode: exit code {run.returncode}, expected 1")
if run.returncode == 1:
    for case in load(os.path.join(wrong, "zeros", "report.json"))["cases"]:
        check(case["status"] == "fail" and case["metrics"]["reference_max_abs"] > 1e-3,
              f"{case['name']} with the wrong padding_mode: {case['status']}, {case['metrics'].get('reference_max_abs')}")

# max_pixels: the input is cropped around its centre and the reference recomputed on the crop.
cropped = os.path.join(work, "cropped")
summary, _ = run_export(model, x, cropped, max_pixels=24)
pixels = [(l["name"], math.prod(l["input_shape"][2:])) for l in summary["layers"]]
check(all(n <= 24 for _, n in pixels), f"a crop exceeds 24 pixels: {pixels}")
check(summary["layers"][0]["cropped"] and summary["layers"][0]["input_shape"][2:] == [3, 8],
      f"the first layer's 8 x 16 input is not cropped to 3 x 8: {summary['layers'][0]}")
check_run(cropped, 2 * len(conv_layers), 1e-12)

# docs/check_your_network.md, "Export and run", as written (model and x given by the reader); the
# README's "Check your own network" shows the same two blocks.
def section_blocks(page, heading):
    text = open(os.path.join(source, page), encoding="utf-8").read()
    section = text.split(f"\n## {heading}\n", 1)
    check(len(section) == 2, f"{page} has no section '## {heading}'")
    if len(section) != 2:
        return []
    body = section[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(python|sh)\n(.*?)```", body, re.S)
    check([b[0] for b in blocks] == ["python", "sh"], f"{page} section '{heading}' blocks: {[b[0] for b in blocks]}")
    return blocks


blocks = section_blocks(os.path.join("docs", "check_your_network.md"), "Export and run")
check(section_blocks("README.md", "Check your own network") == blocks,
      "README.md's 'Check your own network' blocks differ from docs/check_your_network.md's 'Export and run'")
if len(blocks) == 2:
    # A checkout's root as the reader has it: python/ and build/attnconv.
    readme_dir = os.path.join(work, "readme")
    os.makedirs(os.path.join(readme_dir, "build"))
    os.symlink(os.path.abspath(os.path.join(source, "python")), os.path.join(readme_dir, "python"))
    os.symlink(os.path.abspath(binary), os.path.join(readme_dir, "build", "attnconv"))
    user_model = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),\n"
                  "                            torch.nn.Conv2d(4, 2, 3, stride=2))\nx = torch.randn(1, 3, 9, 9)\n")
    for kind, code in blocks:
        if kind == "python":
            with open(os.path.join(readme_dir, "user.py"), "w") as f:
                f.write(user_model + code)
            done = subprocess.run(["/usr/bin/python3", "user.py"], cwd=readme_dir, capture_output=True, text=True)
        else:
            done = subprocess.run(["sh", "-ec", code], cwd=readme_dir, capture_output=True, text=True)
        check(done.returncode == 0, f"docs/check_your_network.md {kind} block exit code {done.returncode}: {done.stderr[-1500:]}")
    report = os.path.join(readme_dir, "my_net", "report", "report.json")
    if os.path.exists(report):
        check(load(report)["summary"]["passed"] == 4, f"docs/check_your_network.md example: {load(report)['summary']}")


# Issue 24 D: what the exporter cannot export is listed or refused, never silent, and never half-written.
def tree(folder):
    """{relative path: bytes} of every file under folder."""
    files = {}
    for root, _, names in os.walk(folder):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                files[os.path.relpath(os.path.join(root, n), folder)] = f.read()
    return files


def refused(call, error_type, text):
    """call() raises error_type with text in its message."""
    try:
        call()
    except error_type as error:
        check(text in str(error), f"{error_type.__name__} without {text!r}: {error}")
        return
    except Exception as error:  # noqa: BLE001 - any other type is the failure reported
        check(False, f"expected {error_type.__name__} with {text!r}, got {type(error).__name__}: {error}")
        return
    check(False, f"expected {error_type.__name__} with {text!r}, nothing raised")


def reasons(summary):
    return {e["name"]: e["reason"] for e in summary["not_expressible"]}


small = nn.Sequential(nn.Conv2d(2, 2, 3, padding=1), nn.ReLU(), nn.Conv2d(2, 2, 3))
xs = torch.randn(1, 2, 6, 6)

# 14. TorchScript: a scripted or traced model is refused; a scripted submodule's convolutions are listed.
for label, scripted_model in (("torch.jit.script", torch.jit.script(small)), ("torch.jit.trace", torch.jit.trace(small, xs))):
    target = os.path.join(work, "scripted-" + label)
    refused(lambda: attnconv_torch.export_conv_layers(scripted_model, xs, target), ValueError, "TorchScript module")
    check(not os.path.exists(target), f"{label}: a refused export wrote {target}")


class WithScripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.eager = nn.Conv2d(2, 2, 3, padding=1)
        self.block = torch.jit.script(nn.Sequential(nn.Conv2d(2, 2, 1), nn.ReLU()))
        self.traced = torch.jit.trace(nn.Conv2d(2, 2, 3, padding=1), xs)

    def forward(self, x):
        return self.traced(self.block(self.eager(x)))


summary, caught = run_export(WithScripted(), xs, os.path.join(work, "with-scripted"))
check([l["name"] for l in summary["layers"]] == ["eager"], f"with scripted submodules: layers {summary['layers']}")
check(set(reasons(summary)) == {"block.0", "traced"} and all("TorchScript" in r for r in reasons(summary).values()),
      f"scripted submodules: not_expressible {summary['not_expressible']}")
check(any("block.0 (Conv2d (TorchScript" in w and "is not exported" in w for w in caught),
      f"no warning for the scripted block.0: {caught}")

# 15. An interrupted re-export leaves the previous export as it was; a finished one replaces it whole.
two = nn.ModuleDict({"a": nn.Conv2d(2, 2, 3), "b": nn.Conv2d(2, 2, 1)})
two.forward = lambda x: two["a"](x) + two["b"](x)[..., 1:-1, 1:-1]
other = nn.ModuleDict({"a": nn.Conv2d(2, 2, 3, padding=1), "c": nn.Conv2d(2, 2, 1)})
other.forward = lambda x: other["a"](x) + other["c"](x)
again = os.path.join(work, "re-export")
run_export(two, xs, again)
os.makedirs(os.path.join(again, "report"))
with open(os.path.join(again, "report", "mine.txt"), "w") as f:
    f.write("a file of the user's")
before = tree(again)
save_npz = attnconv_torch._save_npz
saved = []


def interrupted_save(path, tensors):
    if saved:
        raise KeyboardInterrupt
    saved.append(path)
    save_npz(path, tensors)


attnconv_torch._save_npz = interrupted_save
refused(lambda: attnconv_torch.export_conv_layers(other, xs, again), KeyboardInterrupt, "")
attnconv_torch._save_npz = save_npz
check(tree(again) == before, "an interrupted re-export changed the previous export")
check(not [n for n in os.listdir(work) if ".attnconv-" in n], f"an interrupted export left {os.listdir(work)}")
killer = ("import os, signal, sys, torch\nsys.path.insert(0, sys.argv[1])\nimport attnconv_torch\n"
          "torch.set_default_dtype(torch.float64)\nsave, calls = attnconv_torch._save_npz, []\n"
          "def killed(path, tensors):\n    calls.append(path)\n    save(path, tensors)\n"
          "    if len(calls) == 2: os.kill(os.getpid(), signal.SIGKILL)\n"
          "attnconv_torch._save_npz = killed\n"
          "m = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3), torch.nn.Conv2d(2, 2, 1), torch.nn.Conv2d(2, 2, 1))\n"
          "attnconv_torch.export_conv_layers(m, torch.randn(1, 2, 6, 6), sys.argv[2])\n")
killed = subprocess.run(["/usr/bin/python3", "-c", killer, os.path.join(source, "python"), again],
                        capture_output=True, text=True)
check(killed.returncode == -9, f"the killed export: exit code {killed.returncode}: {killed.stderr[-500:]}")
check(tree(again) == before, "an export killed half-way changed the previous export")
summary, _ = run_export(other, xs, again)
after = tree(again)
check(sorted(p for p in after if p.startswith("layers")) == ["layers/a.npz", "layers/c.npz"],
      f"the re-export's layers: {sorted(after)}")
check(after.get("report/mine.txt") == b"a file of the user's", "a re-export lost the entries it does not write")
check_run(again, 4, 1e-12)
not_an_export = os.path.join(work, "not-an-export")
os.makedirs(not_an_export)
with open(os.path.join(not_an_export, "thesis.tex"), "w") as f:
    f.write("mine")
refused(lambda: attnconv_torch.export_conv_layers(small, xs, not_an_export), ValueError, "holds no export.json")
check(tree(not_an_export) == {"thesis.tex": b"mine"}, "a refused export changed a folder that is not an export")

# 16. Complex layers are listed, not exported as their real part.
complex_conv = nn.Sequential(nn.Conv2d(2, 2, 3, dtype=torch.complex128))
summary, caught = run_export(complex_conv, torch.randn(1, 2, 6, 6, dtype=torch.complex128), os.path.join(work, "complex"))
check(summary["layers"] == [] and "complex weights or activations" in reasons(summary).get("0", ""),
      f"a complex layer: {summary}")
check(any("0 (Conv2d) is not exported: complex" in w for w in caught), f"no warning for a complex layer: {caught}")


# 17. The right reason, never a raw error.
class StdConv(nn.Conv2d):
    """Weight standardisation (timm's StdConv2d): it convolves with a standardised copy of its weight."""
    def _conv_forward(self, x, weight, bias):
        flat = weight.flatten(1)
        standard = (flat - flat.mean(1, keepdim=True)) / (flat.std(1, keepdim=True) + 1e-5)
        return super()._conv_forward(x, standard.view_as(weight), bias)


for label, value in (("NaN", float("nan")), ("inf", float("inf"))):
    bad = xs.clone()
    bad[0, 0, 2, 2] = value
    summary, _ = run_export(nn.Sequential(nn.Conv2d(2, 2, 3)), bad, os.path.join(work, "non-finite"))
    check(summary["layers"] == [] and reasons(summary) == {"0": "non-finite input/output"},
          f"a {label} activation: {summary['not_expressible']}")
summary, _ = run_export(nn.Sequential(StdConv(2, 2, 3)), xs, os.path.join(work, "std-conv"))
check(summary["layers"] == [] and "overrides _conv_forward" in reasons(summary).get("0", ""),
      f"a weight-standardised conv: {summary['not_expressible']}")

nan_weight = nn.Sequential(nn.Conv2d(2, 2, 3))
nan_weight[0].weight.data[0, 0, 0, 0] = float("nan")
summary, _ = run_export(nan_weight, xs, os.path.join(work, "non-finite-weight"))
check(reasons(summary) == {"0": "non-finite weight/bias"}, f"a NaN weight: {summary['not_expressible']}")

normed = nn.Sequential(torch.nn.utils.parametrizations.spectral_norm(nn.Conv2d(2, 2, 3)), nn.BatchNorm2d(2),
                       nn.Dropout(0.5))
state = {k: v.clone() for k, v in normed.state_dict().items()}
random_state = torch.get_rng_state()
summary, caught = run_export(normed.train(), xs, os.path.join(work, "spectral-norm"))
check(torch.equal(random_state, torch.get_rng_state()), "a training-mode export (dropout) changed torch's random state")
check("recomputed on every access in training mode" in reasons(summary).get("0", ""),
      f"a spectral-normed conv in training mode: {summary['not_expressible']}")
check(any("the model is in training mode" in w and "1.running_mean" in w for w in caught),
      f"no warning for a training-mode export: {caught}")
check(all(torch.equal(v, normed.state_dict()[k]) for k, v in state.items()),
      "a training-mode export changed the model's buffers (running statistics, u, v)")
summary, caught = run_export(normed.eval(), xs, os.path.join(work, "spectral-norm-eval"))
check([l["name"] for l in summary["layers"]] == ["0"] and not any("training mode" in w for w in caught),
      f"a spectral-normed conv in eval mode: {summary}, {caught}")


class Named(nn.Module):
    """Keyword calls and module names no file system takes as file names."""
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleDict({"x" * 260: nn.Conv2d(2, 2, 3, padding=1), "y" * 1100: nn.Conv1d(2, 2, 3),
                                    "ü ∕ name": nn.Conv2d(2, 2, 1), "Aa": nn.Conv2d(2, 2, 1), "aA": nn.Conv2d(2, 2, 1)})

    def forward(self, x):
        y = self.convs["x" * 260](input=x)
        y = y + self.convs["ü ∕ name"](y) + self.convs["Aa"](y) + self.convs["aA"](input=y)
        return y.sum() + self.convs["y" * 1100](input=y.mean(2)).sum()


names = os.path.join(work, "names")
summary, _ = run_export(Named(), xs, names)
exported = {l["name"]: l["file"] for l in summary["layers"]}
check(len(exported) == 5 and summary["not_expressible"] == [], f"keyword calls and odd names: {summary}")
check("convs." + "x" * 260 in exported and "convs.ü ∕ name" in exported, f"case names are not the module names: {exported}")
check(all(len(os.path.basename(f)) <= 100 for f in exported.values())
      and len({f.lower() for f in exported.values()}) == 5, f"layer file names: {list(exported.values())}")
check(any(n.startswith("convs.yyyy") and len(n) <= 1000 for n in exported), "a 1100-character name is not clipped")
check_run(names, 10, 1e-12)

summary, _ = run_export(small, xs, os.path.join(work, "numpy-alpha"), alpha=numpy.float32(8), max_pixels=numpy.int64(36))
check(summary["cases"] == 4, f"numpy alpha and max_pixels: {summary}")
for value in (float("nan"), float("inf"), 0.0, -1.0, True, "60", numpy.float64("nan")):
    target = os.path.join(work, "bad-alpha")
    refused(lambda: attnconv_torch.export_conv_layers(small, xs, target, alpha=value), ValueError, "alpha must be")
    check(not os.path.exists(target), f"alpha={value!r}: a refused export wrote {target}")
refused(lambda: attnconv_torch.export_conv_layers(small, xs, os.path.join(work, "p"), proofs=attnconv_torch.THEOREM1),
        ValueError, "proofs must be a list")
refused(lambda: attnconv_torch.export_conv_layers(small, xs, os.path.join(work, "p"), max_pixels=True),
        ValueError, "max_pixels must be")


def mobilenet_check():
    """A MobileNet-style stack (depthwise-separable blocks, stride 2), float32 weights, timed."""
    def block(c_in, c_out, stride):
        return [nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False), nn.BatchNorm2d(c_in), nn.ReLU6(),
                nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU6()]
    layers = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()]
    for c_in, c_out, stride in [(16, 24, 1), (24, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1)]:
        layers += block(c_in, c_out, stride)
    net = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).float().eval()
    x = torch.randn(1, 3, 224, 224, dtype=torch.float32)
    for label, options in (("max_pixels 4096", {"max_pixels": 4096}),
                           ("full resolution, both proofs", {})):
        start = time.time()
        mb = os.path.join(work, "mobilenet-" + label.split()[0])
        summary, _ = run_export(net, x, mb, **options)
        exported = time.time()
        reported = check_run(mb, len(summary["layers"]) * len(options.get("proofs", attnconv_torch.PROOFS)), 1e-4)
        worst = {key: max((c["metrics"].get(key, 0) for c in reported), default=float("nan"))
                 for key in ("reference_max_abs", "reference_rel_l2", "max_abs")}
        print(f"mobilenet-style (float32, 224 x 224, {label}): {len(summary['layers'])} layers, {len(reported)} cases, "
              f"worst against PyTorch: max_abs {worst['reference_max_abs']:.2e}, rel_l2 {worst['reference_rel_l2']:.2e}; "
              f"worst claim max_abs {worst['max_abs']:.2e}; export {exported - start:.1f} s, "
              f"attnconv run {time.time() - exported:.1f} s")


if "--mobilenet" in sys.argv[4:]:
    mobilenet_check()
finish("torch export")
