#!/usr/bin/python3
"""A small Swin-style model trained here on scikit-learn's 8 x 8 digits (seeded, float64, seconds of
CPU), exported with export_attention_layers and measured by liu2021.trained_window_attention on the
test images: how convolutional did its window attention become? The model (trained_models.DigitSwin):
a 3 x 3 convolution stem (every pixel a 16-wide token: an 8 x 8 grid), LayerNorm, two of torchvision's SwinTransformerBlocks
(2 heads, window 4 x 4; shift 0, then 2), LayerNorm, mean pooling, a linear classifier. Every case must
hold (reference_rel_l2, identity_rel_l2 <= 1e-10) and every number is recomputed independently in numpy
(swin_checks.py); the numbers are printed for docs/trained_attention.md.

Usage: trained_swin_digits.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import sys
import time

import torch

from cli_check import check, finish, source, work

sys.path.insert(0, os.path.join(source, "python"))
import digits_common  # noqa: E402
import swin_checks  # noqa: E402
import trained_models  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)  # the same sums on any machine: the numbers in the docs are this run's

start = time.process_time()
model, accuracy = trained_models.digits_swin()
seconds = time.process_time() - start
print(f"trained in {seconds:.1f} s of CPU: test accuracy {accuracy:.3f}")
check(accuracy >= 0.8, f"the model did not learn the digits: test accuracy {accuracy}")

_, _, x_test, _ = digits_common.digits()
out = os.path.join(work, "digits_swin")
summary, caught, found = swin_checks.export_and_run(model, x_test, out, 2)
check([(l["name"], l["grid"]) for l in summary["layers"]] == [("blocks.0.attn", [8, 8]), ("blocks.1.attn", [8, 8])],
      f"layers: {summary['layers']}")
check(summary["not_expressible"] == [], f"not_expressible: {summary['not_expressible']}")
check([v["effective_shift"] for v in found.values()] == [[0, 0], [2, 2]], f"shifts: {found}")
for name, values in found.items():
    print(f"{name}: {json.dumps(values)}")

finish(f"trained_swin_digits (accuracy {accuracy:.3f})")
