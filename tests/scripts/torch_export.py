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
