#!/usr/bin/python3
"""The per-head taps and leaks, kernel "auto" and the figures of the trained-attention proofs (issue 23, item 3;
docs/trained_attention.md, "Taps, leaks and kernel auto"), on epfml/attention-cnn's GaussianSelfAttention
(tests/scripts/local_attention_modules.py) with centres Delta_h set by hand, exported by
attnconv_torch.export_attention_layers and run by cordonnier2020.trained_gaussian_attention:
- tap: the mean offset delta = key - query under each head's attention (over grid keys, renormalised to them,
  averaged over grid queries), rounded; for sharp heads it is the centre Delta_h; leak = 1 - P_h(q, q + tap)
  averaged over grid queries; both recomputed here from the module's own get_attention_probs;
- kernel "auto": the smallest odd K x K window holding kernel_mass of the attention (mean over queries, samples
  and heads): K = 3 for heads at offsets within one step, 5 once a head sits two steps away, recomputed here;
- bad kernel / kernel_mass values are exit 2 naming the file, the case and the key;
- attnconv plot and attnconv html draw each head's attention for the centre query and the two kernels.

Usage: trained_taps.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from torch import nn

from cli_check import attnconv, check, finish, load, source, work
from local_attention_modules import GaussianSelfAttention, gaussian_config, gaussian_probabilities

sys.path.insert(0, os.path.join(source, "python"))
import attnconv_torch  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)
torch.manual_seed(5)

H, W, D = 9, 8, 4


class Heads(nn.Module):
    """One GaussianSelfAttention layer with the given centres and isotropic spread (precision spread^2)."""

    def __init__(self, centres, spread):
        super().__init__()
        self.attention = GaussianSelfAttention(gaussian_config(D, len(centres), isotropic=True))
        with torch.no_grad():
            self.attention.attention_centers.copy_(torch.tensor(centres, dtype=torch.float64))
            self.attention.attention_spreads.fill_(spread)

    def forward(self, x):
        return self.attention(x, None)


def expected(p):
    """From P (N, heads, T, T) on the H x W grid: mean offsets, taps (halves away from zero), leaks, and the
    attention inside the odd K x K window centred on each query for every odd K."""
    n, heads = p.shape[:2]
    pg = p.reshape(n, heads, H, W, H, W)
    rows, cols = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    offset = np.zeros((heads, 2))
    for qr in range(H):
        for qc in range(W):
            a = pg[:, :, qr, qc]  # (n, heads, H, W)
            on_grid = a.sum(axis=(2, 3))
            offset[:, 0] += ((a * (rows - qr)).sum(axis=(2, 3)) / on_grid).sum(0)
            offset[:, 1] += ((a * (cols - qc)).sum(axis=(2, 3)) / on_grid).sum(0)
    offset /= n * H * W
    taps = np.sign(offset) * np.floor(np.abs(offset) + 0.5)
    leak = np.zeros(heads)
    for h in range(heads):
        d1, d2 = int(taps[h, 0]), int(taps[h, 1])
        on_tap = 0.0
        for qr in range(H):
            for qc in range(W):
                if 0 <= qr + d1 < H and 0 <= qc + d2 < W:
                    on_tap += pg[:, h, qr, qc, qr + d1, qc + d2].sum()
        leak[h] = 1 - on_tap / (n * H * W)
    inside = {}
    for k in range(1, min(H, W) + 1, 2):
        r, total = (k - 1) // 2, 0.0
        for qr in range(H):
            for qc in range(W):
                total += pg[:, :, qr, qc, max(0, qr - r):qr + r + 1, max(0, qc - r):qc + r + 1].sum()
        inside[k] = total / (n * heads * H * W)
    return offset, taps.astype(int), leak, inside


def export(name, centres, spread, kernel, kernel_mass=None):
    model = Heads(centres, spread).double().eval()
    out = os.path.join(work, name)
    x = torch.randn(3, H, W, D)
    summary = attnconv_torch.export_attention_layers(model, x, out, kernel=kernel, kernel_mass=kernel_mass)
    check(summary["cases"] == 1, f"{name}: {summary}")
    cases = load(os.path.join(out, "cases.json"))
    check(cases["cases"][0]["params"]["kernel"] == kernel, f"{name}: exported kernel {cases['cases'][0]['params']}")
    with torch.no_grad():
        p = gaussian_probabilities(model.attention, x).numpy()
    return out, cases["cases"][0], p


def run(out):
    r = attnconv("run", os.path.join(out, "cases.json"), "--out", os.path.join(out, "report"), "--quiet")
    check(r.returncode == 0, f"{out}: run exit {r.returncode}: {r.stderr[-1500:]}")
    return load(os.path.join(out, "report", "report.json"))["cases"][0]


# 1. Taps and leaks: sharp heads at known centres (spread 5: precision 25, a head keeps all but ~2e-5 on its
#    centre where that key exists; where it does not, on the nearest keys, which pulls the mean offset inwards:
#    (0, 2) on 8 columns has mean column offset (6 * 2 + 1 + 0) / 8 = 1.625, still nearest 2).
centres = [[1.0, -1.0], [0.0, 2.0], [-2.0, 0.0], [0.0, 0.0]]
out, case, p_taps = export("taps", centres, 5.0, [3, 3])
entry = run(out)
m = entry["metrics"]
offset, taps, leak, inside = expected(p_taps)
check(taps.tolist() == [[1, -1], [0, 2], [-2, 0], [0, 0]], f"numpy's taps {taps.tolist()} are not the centres")
check(m["tap"] == taps.tolist(), f"tap {m['tap']} vs numpy {taps.tolist()} (centres {centres})")
check(np.allclose(m["mean_offset"], offset, rtol=1e-10, atol=1e-12), f"mean_offset {m['mean_offset']} vs {offset.tolist()}")
check(np.allclose(m["leak"], leak, rtol=1e-10, atol=1e-12), f"leak {m['leak']} vs numpy {leak.tolist()}")
# The leak of a sharp head is the share of queries whose q + Delta is off the grid (to ~1e-3).
off_grid = [1 - (H - abs(d1)) * (W - abs(d2)) / (H * W) for d1, d2 in taps.tolist()]
check(np.allclose(m["leak"], off_grid, atol=2e-3), f"leak {m['leak']} vs the off-grid share {off_grid}")
check(m["kernel_resolved"] == [3, 3] and abs(m["kernel_mass_held"] - inside[3]) <= 1e-12,
      f"kernel_resolved {m['kernel_resolved']}, kernel_mass_held {m['kernel_mass_held']} vs {inside[3]}")
check("tap [delta1, delta2] (leak) per head [1, -1]" in entry["message"], f"message: {entry['message']}")
print(f"taps {m['tap']}, leaks {[round(v, 4) for v in m['leak']]}, mean offsets "
      f"{[[round(a, 3) for a in o] for o in m['mean_offset']]}")

# 2. kernel "auto": heads within one step -> K = 3; a head two steps away -> K = 5 (kernel_mass 0.9).
for name, cs, k_known in [("auto3", [[1.0, -1.0], [0.0, 1.0], [-1.0, 0.0], [0.0, 0.0]], 3),
                          ("auto5", [[1.0, -1.0], [0.0, 2.0], [-1.0, 0.0], [0.0, 0.0]], 5)]:
    out, case, p = export(name, cs, 5.0, "auto", 0.9)
    entry = run(out)
    m = entry["metrics"]
    _, _, _, inside = expected(p)
    k_numpy = min(k for k, v in inside.items() if v >= 0.9)
    check(k_numpy == k_known, f"{name}: numpy's smallest odd window {k_numpy}, constructed {k_known}: {inside}")
    check(m["kernel_resolved"] == [k_known, k_known], f"{name}: kernel_resolved {m['kernel_resolved']}, expected {k_known}")
    check(abs(m["kernel_mass_held"] - inside[k_known]) <= 1e-12, f"{name}: held {m['kernel_mass_held']} vs {inside[k_known]}")
    check(m["lstsq_unknowns"] == D * k_known * k_known + 1, f"{name}: lstsq_unknowns {m['lstsq_unknowns']}")
    check(f'kernel "auto": {k_known}x{k_known}, the smallest odd square window' in entry["message"],
          f"{name}: message {entry['message']}")
    print(f"{name}: kernel_resolved {m['kernel_resolved']}, held {m['kernel_mass_held']:.4f}")

# kernel_mass 1 on a broad head (precision 0.25): no odd window short of the grid's holds all of it, so the
# largest odd one that fits, 7 x 7 on 9 x 8, and the message says it falls short.
out, case_broad, p = export("broad", [[0.0, 0.0]], 0.5, "auto", 1.0)
entry = run(out)
m = entry["metrics"]
_, _, _, inside = expected(p)
check(m["kernel_resolved"] == [7, 7] and abs(m["kernel_mass_held"] - inside[7]) <= 1e-12 and inside[7] < 1,
      f"kernel_mass 1: {m['kernel_resolved']} holding {m['kernel_mass_held']} (numpy {inside[7]})")
check("the largest odd square window that fits; it holds only" in entry["message"], f"broad: {entry['message']}")
print(f"broad, kernel_mass 1: kernel_resolved {m['kernel_resolved']}, held {m['kernel_mass_held']:.4f}")

# 3. Bad values: exit 2 naming the file, the case and the key; nothing written.
for key, value in [("kernel_mass", 0), ("kernel_mass", 1.5), ("kernel_mass", "most"), ("kernel", "biggest"),
                   ("kernel", [11, 3])]:
    bad = dict(case, name="bad", params=dict(case["params"], **{key: value}))
    path = os.path.join(work, "taps", "bad.json")
    with open(path, "w") as f:
        json.dump({"cases": [bad]}, f)
    report_dir = os.path.join(work, "taps", "bad-report")
    r = attnconv("run", path, "--out", report_dir, "--quiet")
    check(r.returncode == 2 and "bad.json" in r.stderr and "case 'bad'" in r.stderr and f"params.{key}" in r.stderr,
          f"{key} = {value!r}: exit {r.returncode}: {r.stderr[-600:]}")
    check(not os.path.exists(os.path.join(report_dir, "report.json")), f"{key} = {value!r}: a report was written")

# 4. The figures: attnconv plot writes each head's attention for the centre query and the two kernels; the HTML
#    page embeds them.
report = os.path.join(work, "taps", "report", "report.json")
name = load(report)["cases"][0]["name"]
plots = os.path.join(work, "plots")
r = attnconv("plot", report, "--out", plots)
check(r.returncode == 0, f"plot: exit {r.returncode}: {r.stderr[-800:]}")
made = sorted(os.listdir(plots)) if os.path.isdir(plots) else []
for stem in ("attention", "kernels"):
    check(any(f.startswith(stem + "-") and f.endswith(".dat") for f in made), f"plot: no {stem} figure in {made}")
for f in made:
    if f.startswith("attention-") and f.endswith(".dat"):
        with open(os.path.join(plots, f)) as g:
            text = g.read()
        for h, (d1, d2) in enumerate(taps.tolist()):
            check(f"# head {h}: [{d1}, {d2}], leak" in text, f"plot: head {h}'s panel title missing: {text[:300]}")
        blocks = [b for b in text.split("\n\n\n") if b.strip()]
        check(len(blocks) == len(centres), f"plot: {len(blocks)} attention panels for {len(centres)} heads")
        # The panel of head 0 is its attention for the centre query ((H-1)//2, (W-1)//2) over the grid.
        values = np.array([[float(v) for v in line.split()] for line in blocks[0].splitlines() if not line.startswith("#")])
        q = ((H - 1) // 2) * W + (W - 1) // 2
        check(values.shape == (H, W) and np.allclose(values, p_taps[0, 0, q].reshape(H, W), atol=1e-12),
              f"plot: head 0's panel {values.shape} is not its attention for the centre query")
html = os.path.join(work, "page.html")
r = attnconv("html", report, "--out", html)
check(r.returncode == 0, f"html: exit {r.returncode}: {r.stderr[-800:]}")
page = open(html).read() if os.path.exists(html) else ""
check("head 0: [1, -1], leak" in page and "white input" in page and "least squares on this input" in page,
      "html: the attention and kernel figures are not on the page")
shutil.rmtree(os.path.join(work, "plots"), ignore_errors=True)
finish("trained_taps")
