#!/usr/bin/python3
"""The nearest convolution attnconv dumps is a torch.nn.Conv2d.

Runs cases/nearest_convolution.json with --dump-tensors, loads each case's
conv_weight.npy and conv_bias.npy into torch.nn.Conv2d(padding='same') and
checks, in float64:
  - its output on input.npy is expected.npy (attnconv's convolution) to 1e-12;
  - the trained layer's nearest 3x3 convolution is close to the convolution it
    was trained to imitate (tests/fixtures/nearest_convolution/trained/target_*.npy):
    relative l2 distance of the outputs below 0.05, the case's own tolerance.
Usage: nearest_convolution_torch.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore", message="Using padding='same'")
binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
subprocess.run([binary, "run", os.path.join(source, "cases", "nearest_convolution.json"), "--out",
                os.path.join(work, "r"), "--dump-tensors", os.path.join(work, "d"), "--quiet"], check=True)
report = json.load(open(os.path.join(work, "r", "report.json")))
trained = os.path.join(source, "tests", "fixtures", "nearest_convolution", "trained")
failures = 0
for case in report["cases"]:
    folder = os.path.join(work, "d", case["name"])
    load = lambda name: torch.from_numpy(np.load(os.path.join(folder, name + ".npy")))
    weight, bias, x = load("conv_weight"), load("conv_bias"), load("input")
    conv = torch.nn.Conv2d(weight.shape[1], weight.shape[0], tuple(weight.shape[2:]), padding="same").double()
    with torch.no_grad():
        conv.weight.copy_(weight)
        conv.bias.copy_(bias)
        y = conv(x.unsqueeze(0))[0]
        target = torch.nn.functional.conv2d(x.unsqueeze(0), torch.from_numpy(np.load(os.path.join(trained, "target_weight.npy"))),
                                            torch.from_numpy(np.load(os.path.join(trained, "target_bias.npy"))), padding=1)[0]
    expected = load("expected")
    error = ((y - expected).norm() / expected.norm()).item()
    to_target = ((y - target).norm() / target.norm()).item()
    ok = error < 1e-12 and to_target < 0.05
    failures += not ok
    print(f"{case['name']}: Conv2d {tuple(weight.shape)} vs expected.npy rel_l2 {error:.2e}; "
          f"vs the imitated convolution {to_target:.2e} {'ok' if ok else 'FAILED'}")
sys.exit(1 if failures else 0)
