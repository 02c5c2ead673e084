#!/usr/bin/python3
"""A whole torchvision network checked by attnconv, against its own float64 forward pass.

  /usr/bin/python3 bench/whole_network.py [--model resnet50] [--image 224] [--attnconv build/attnconv]
                                          [--work DIR] [--forward-repeats 5] [--table OUT.md]

(Debian packages python3-torch, python3-torchvision, python3-numpy; attnconv built in build/.)

Builds the model with random weights (torch.manual_seed(0); nothing is downloaded),
in eval mode, float64, batch 1 of a seeded image of --image² pixels; exports every
convolution with python/attnconv_torch.py's export_conv_layers (both proofs, as
docs/check_your_network.md does); runs `attnconv run` on the exported cases.json
under /usr/bin/time -v (wall time of the whole process, its peak RSS); times
PyTorch's float64 forward of the same network (best of --forward-repeats, all
cores); measures the dgemm rate in the same run (bench/side_by_side.py's 2048³).
Prints, and with --table writes as Markdown, one row per case: layer, proof,
shape, flops, seconds (the report's per-case time), and seconds / (flops / dgemm
rate) (how far the case is from its arithmetic at the dgemm rate). flops: the
MHSA engine's count where the proof reports one (Theorem 1), else the layer's
convolution (2 multiply-adds' flops per weight and output pixel).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

from side_by_side import DGEMM, blas_environment, timed  # noqa: E402


def build(model_name, image):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)(weights=None).double().eval()
    x = torch.rand((1, 3, image, image), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return model, x


def forward_seconds(model, x, repeats, threads):
    import torch
    torch.set_num_threads(threads)
    best = float("inf")
    with torch.no_grad():
        model(x)
        for _ in range(repeats):
            start = time.perf_counter()
            model(x)
            best = min(best, time.perf_counter() - start)
    return best


def shape_of(params):
    k = params.get("kernel", [1, 1])
    image = params.get("image", ["?", "?"])
    text = "%sx%s %d->%d on %sx%s" % (k[0], k[1], params.get("in_channels", 0), params.get("out_channels", 0),
                                       image[0], image[1])
    stride = params.get("stride", 1)
    if stride not in (1, [1, 1]):
        text += " s%s" % (stride if isinstance(stride, int) else "x".join(map(str, stride)))
    if params.get("groups", 1) != 1:
        text += " g%d" % params["groups"]
    return text


def case_flops(case, layer_flops):
    metrics = case.get("metrics", {})
    if isinstance(metrics.get("flops"), (int, float)):
        return float(metrics["flops"])
    return layer_flops.get(case["name"].rsplit(":", 1)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", help="a torchvision.models builder (resnet50, resnet18, ...)")
    parser.add_argument("--image", type=int, default=224, help="image side in pixels")
    parser.add_argument("--attnconv", default=os.path.join(ROOT, "build", "attnconv"))
    parser.add_argument("--work", help="directory for the export and report (default: a temporary one)")
    parser.add_argument("--forward-repeats", type=int, default=5)
    parser.add_argument("--table", help="also write the per-layer table here (Markdown)")
    parser.add_argument("--attnconv-args", nargs=argparse.REMAINDER, default=[],
                        help="passed to attnconv run after the case file (say --jobs 1)")
    args = parser.parse_args()

    import torch
    import attnconv_torch

    env, core = blas_environment()
    cores = os.cpu_count()
    load_before = os.getloadavg()
    dgemm = float(subprocess.run([sys.executable, "-c", DGEMM], env=env, capture_output=True, text=True,
                                 check=True).stdout) * 1e9

    model, x = build(args.model, args.image)
    work = args.work or tempfile.mkdtemp(prefix="whole_network_")
    net = os.path.join(work, "%s_%d" % (args.model, args.image))
    layer_flops = {}

    def hook(name):
        def record(module, inputs, output):
            k = module.weight.shape[2:]
            per = 2 * (module.in_channels // module.groups)
            for s in k:
                per *= s
            layer_flops[name] = float(per * output.numel())
        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules()
               if isinstance(m, (torch.nn.Conv2d, torch.nn.Conv1d))]
    start = time.perf_counter()
    attnconv_torch.export_conv_layers(model, x, net)
    export_s = time.perf_counter() - start
    for h in handles:
        h.remove()
    forward = forward_seconds(model, x, args.forward_repeats, cores)

    report = os.path.join(net, "report")
    wall, peak_mib, _ = timed([args.attnconv, "run", os.path.join(net, "cases.json"), "--out", report, "--quiet"]
                              + args.attnconv_args, env)
    load_after = os.getloadavg()
    cases = json.load(open(os.path.join(report, "report.json")))["cases"]

    rows = []
    for case in cases:
        flops = case_flops(case, layer_flops)
        floor = flops / dgemm if flops else None
        layer, proof = case["name"].rsplit(":", 1)
        rows.append((layer, proof, shape_of(case.get("params", {})), flops, case.get("seconds"),
                     case["seconds"] / floor if floor and isinstance(case.get("seconds"), (int, float)) else None,
                     case["status"]))
    statuses = {}
    for r in rows:
        statuses[r[6]] = statuses.get(r[6], 0) + 1
    total_case_s = sum(r[4] for r in rows if isinstance(r[4], (int, float)))
    total_flops = sum(r[3] for r in rows if r[3])

    lines = ["%s at %d², batch 1, float64; date %s UTC, %d cores, OpenBLAS kernel %s" %
             (args.model, args.image, time.strftime("%Y-%m-%d %H:%M", time.gmtime()), cores, core),
             "load average before %s, after %s" % (" ".join("%.2f" % v for v in load_before),
                                                   " ".join("%.2f" % v for v in load_after)),
             "dgemm 2048³ float64: %.1f GFLOP/s" % (dgemm / 1e9),
             "export %.1f s; attnconv run %d cases (%s): %.2f s wall, peak RSS %.0f MiB; sum of per-case seconds %.2f s" %
             (export_s, len(rows), ", ".join("%d %s" % (n, s) for s, n in sorted(statuses.items())), wall, peak_mib,
              total_case_s),
             "PyTorch float64 forward, best of %d: %.3f s; attnconv / forward: %.1f×" %
             (args.forward_repeats, forward, wall / forward),
             "all cases' flops %.1f GFLOP, %.2f s at the dgemm rate (attnconv wall / that: %.1f×)" %
             (total_flops / 1e9, total_flops / dgemm, wall / (total_flops / dgemm)),
             "",
             "| layer | proof | shape | GFLOP | seconds | seconds / (flops / dgemm) | status |",
             "|---|---|---|--:|--:|--:|---|"]
    fmt = lambda v, f: f % v if isinstance(v, (int, float)) else "-"
    for r in sorted(rows, key=lambda r: -(r[4] or 0)):
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (r[0], r[1], r[2], fmt(r[3] and r[3] / 1e9, "%.3f"),
                                                            fmt(r[4], "%.3f"), fmt(r[5], "%.1f"), r[6]))
    text = "\n".join(lines)
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text + "\n")
    print("\n(export and report in %s)" % net, file=sys.stderr)


if __name__ == "__main__":
    main()
