#!/usr/bin/python3
"""How `attnconv run` scales with the samples of a batch input (issue 27.5).

  /usr/bin/python3 bench/batch_scaling.py [--attnconv build/attnconv] [--samples 16 256]
                                          [--repeats 3] [--format npz|npy] [--image 32] [--channels 16]

Builds, in a temporary folder, one acmix2022.conv_decomposition case per batch
size (3x3, 'same', C -> C channels on an image x image input; the input a batch
(N, C, H, W) of seeded normal numbers, the kernel and bias drawn from the case's
seed), its input an .npz entry ("input", numpy.savez) or an .npy file, and times
`attnconv run` on each: wall time and the CPU time (user + sys) of the process,
the minimum over the repeats (the machine may be shared: CPU time is the steadier
measure). Prints a line per batch size and the ratio of the largest to the
smallest with the ratio of their samples; linear scaling gives a ratio of about
the samples' ratio (a batch read once, each sample a slice of it).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def write_case(folder, samples, args):
    rng = np.random.default_rng(samples)
    x = rng.standard_normal((samples, args.channels, args.image, args.image))
    name = f"batch{samples}"
    if args.format == "npz":
        np.savez(os.path.join(folder, name + ".npz"), input=x)
        source = {"file": name + ".npz", "entry": "input"}
    else:
        np.save(os.path.join(folder, name + ".npy"), x)
        source = name + ".npy"
    case = {
        "name": f"dec-batch-{samples}",
        "proof": "acmix2022.conv_decomposition",
        "params": {"image": [args.image, args.image], "kernel": 3, "in_channels": args.channels,
                   "out_channels": args.channels, "padding": "same", "seed": 1},
        "weights": {"input": source},
    }
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"description": f"a batch of {samples} samples", "cases": [case]}, f)
    return path


def timed_run(binary, case_file, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([binary, "run", case_file, "--out", out], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"attnconv run {case_file} exited {done.returncode}: {done.stderr.strip()}")
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    case = report["cases"][0]
    if case["status"] != "pass":
        sys.exit(f"{case_file}: status {case['status']}: {case.get('message', '')}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, case


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attnconv", default=os.path.join(ROOT, "build", "attnconv"))
    parser.add_argument("--samples", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--format", choices=["npz", "npy"], default="npz")
    parser.add_argument("--image", type=int, default=32)
    parser.add_argument("--channels", type=int, default=16)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; {args.attnconv}")
    print(f"conv_decomposition 3x3 {args.channels}->{args.channels} on {args.image}^2, float64, input an "
          f"{args.format}; min of {args.repeats} runs")
    results = {}
    with tempfile.TemporaryDirectory(prefix="batch_scaling_") as folder:
        for samples in args.samples:
            case_file = write_case(folder, samples, args)
            runs = [timed_run(args.attnconv, case_file, os.path.join(folder, f"out{samples}"))
                    for _ in range(args.repeats)]
            wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
            case = runs[0][2]
            assert case["batch"] == samples, case.get("batch")
            size = os.path.getsize(case_file.replace(".json", "." + args.format))
            results[samples] = (wall, cpu)
            print(f"{samples:6d} samples ({size / 2**20:7.1f} MiB): wall {wall:8.3f} s   cpu {cpu:8.3f} s")
    low, high = min(args.samples), max(args.samples)
    if low != high:
        print(f"{high} against {low} samples ({high / low:g}x): wall {results[high][0] / results[low][0]:.1f}x, "
              f"cpu {results[high][1] / results[low][1]:.1f}x")


if __name__ == "__main__":
    main()
