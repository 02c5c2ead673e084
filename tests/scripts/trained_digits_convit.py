#!/usr/bin/python3
"""A small ConViT trained here on scikit-learn's 8x8 digits (tests/scripts/digits_common.py), exported and
measured: how convolutional did its GPSA and MHSA layers become?

The model (trained_models.digits_convit, convit_checks.ConViT): 2 x 2 patches of the 8 x 8 image, a 4 x 4 grid of 32-wide
tokens, 4 heads; two GPSA blocks with ConViT's local init (locality strength 1), then the class token and
one MHSA block. Trained seeded in float64 on one thread (Adam, 30 epochs; about 30 s of CPU), then exported on the 297
test images and run (and the same model at its init, for comparison); every case must hold (reference_rel_l2 and identity_rel_l2 <= 1e-10) and its
numbers are recomputed in numpy (convit_checks.check_case). Prints the test accuracy and per layer
lstsq_rel_l2, rel_l2, translation_defect, mean_attention_distance and sigma(lambda) per head (the numbers
of docs/trained_attention.md, "Measured: a ConViT trained on digits").

Usage: trained_digits_convit.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import sys

import torch

from cli_check import check, finish, source, work
from convit_checks import check_case
from digits_common import digits
import trained_checks
import trained_models

sys.path.insert(0, os.path.join(source, "python"))

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)  # the same sums in every run: the numbers in the docs are this run's
model, at_init, accuracy = trained_models.digits_convit()
print(f"test accuracy {accuracy:.4f}")
check(accuracy >= 0.85, f"the ConViT learned too little to be measured as trained: accuracy {accuracy}")

_, _, x_test, _ = digits()


def measure(net, out):
    summary, _, found = trained_checks.export_and_run(net, x_test, out, 3, check_case)
    check(summary["not_expressible"] == [], f"export: {summary}")
    for name, values in found.items():
        print(f"{os.path.basename(out)} {name}: " +
              json.dumps({k: (round(v, 4) if isinstance(v, float) else [round(e, 4) for e in v]) for k, v in values.items()}))


measure(model, os.path.join(work, "trained"))
measure(at_init, os.path.join(work, "init"))  # the same model before training, for comparison
finish("trained_digits_convit")
