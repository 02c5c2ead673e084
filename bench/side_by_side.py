#!/usr/bin/python3
"""attnconv against its PyTorch peers, one after the other in one invocation.

  /usr/bin/python3 bench/side_by_side.py [--attnconv build/attnconv] [--repeats 3] [--cases NAME ...]

(Debian packages python3-torch and python3-numpy; attnconv built in build/.)

For each case of bench/cases/ (the targets of docs/performance.md): `attnconv run`
on the case file (wall time of the whole process, as a user runs it) and the
PyTorch peers of bench/torch_peers.py (conv2d alone, the naive dense check, the best
separable check; in-process times, without Python's start and torch's import),
each in its own process under /usr/bin/time -v for its peak memory. Prints the
median of the repeats, the ratios to attnconv, the peak RSS, the executed
GFLOP/s of attnconv's MHSA engine over the whole case, and the dgemm rate of the
same run (2048^3, float64, numpy on the OpenBLAS kernel attnconv uses, all cores).
Also the machine's load average, since the numbers mean little under load.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name, case file, peers to run (the naive dense peer holds (HW)^2 doubles per head:
# only where that fits in memory)
CASES = [
    ("128 K7 64->64 auto", "t1_128_k7_c64_auto.json", ["conv2d", "separable"]),
    ("256 K7 64->64 auto", "t1_256_k7_c64_auto.json", ["conv2d", "separable"]),
    ("512 K7 64->64 auto", "t1_512_k7_c64_auto.json", ["conv2d", "separable"]),
    ("150 K7 s2 3->32 auto", "t1_150_k7_s2_c3_32_auto.json", ["conv2d", "separable"]),
    ("64 K3 32->32 dense", "t1_64_k3_c32.json", ["conv2d", "dense", "separable"]),
]


def blas_environment():
    """The environment attnconv runs its products in (parallel/blas_kernel.hpp): OpenBLAS
    on the kernel the CPU can run when OpenBLAS fell back to its generic one."""
    env = dict(os.environ)
    if "OPENBLAS_CORETYPE" in env:
        return env, env["OPENBLAS_CORETYPE"]
    lib = ctypes.CDLL("libopenblas.so.0")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    core = lib.openblas_get_corename().decode()
    if core == "Prescott":
        flags = set(open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split())
        if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags:
            core = "SkylakeX"
        elif {"avx2", "fma"} <= flags:
            core = "Haswell"
        env["OPENBLAS_CORETYPE"] = core
    return env, core


def timed(command, env):
    """Runs command under /usr/bin/time -v: (wall seconds, peak RSS in MiB, stdout)."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v"] + command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit("side_by_side.py: %s failed (exit %d):\n%s" % (" ".join(command), done.returncode, done.stderr))
    peak = next(int(line.split(":")[1]) for line in done.stderr.splitlines() if "Maximum resident set size" in line)
    return wall, peak / 1024, done.stdout


DGEMM = """
import numpy, time
n = 2048
a, b = numpy.random.default_rng(1).random((n, n)), numpy.random.default_rng(2).random((n, n))
a @ b
best = min((lambda t: (a @ b, time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(3))
print(2 * n ** 3 / best / 1e9)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnconv", default=os.path.join(ROOT, "build", "attnconv"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="*", help="run only the cases whose file name contains one of these")
    args = parser.parse_args()
    env, core = blas_environment()
    cores = os.cpu_count()
    print("date %s UTC, %d cores, load average %s, OpenBLAS kernel %s" %
          (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), cores, " ".join("%.1f" % v for v in os.getloadavg()), core))
    dgemm = float(subprocess.run([sys.executable, "-c", DGEMM], env=env, capture_output=True, text=True,
                                 check=True).stdout)
    print("dgemm 2048^3 float64 (numpy, %d threads): %.1f GFLOP/s\n" % (cores, dgemm))

    rows = []
    with tempfile.TemporaryDirectory(prefix="side_by_side_") as out:
        for name, file, peers in CASES:
            if args.cases and not any(s in file for s in args.cases):
                continue
            path = os.path.join(HERE, "cases", file)
            walls, peaks = [], []
            for repeat in range(args.repeats):
                report_dir = os.path.join(out, "%s-%d" % (file, repeat))
                wall, peak, _ = timed([args.attnconv, "run", path, "--out", report_dir, "--quiet"], env)
                walls.append(wall)
                peaks.append(peak)
            case = json.load(open(os.path.join(report_dir, "report.json")))["cases"][0]
            if case["status"] != "pass":
                sys.exit("side_by_side.py: attnconv did not pass %s: %s" % (file, case["message"]))
            metrics = case["metrics"]
            executed = metrics["flops"] - metrics["flops_skipped"]
            ours = statistics.median(walls)
            row = {"case": name, "attnconv_s": ours, "attnconv_MiB": max(peaks), "engine": metrics["engine"],
                   "executed_GFLOPs": executed / ours / 1e9, "max_abs": metrics["max_abs"]}
            for peer in peers:
                seconds, peak_mib = [], 0.0
                for _ in range(args.repeats):
                    _, peak, stdout = timed([sys.executable, os.path.join(HERE, "torch_peers.py"), peer, path,
                                             "--repeats", "1", "--threads", str(cores)], env)
                    seconds += json.loads(stdout)["seconds"]
                    peak_mib = max(peak_mib, peak)
                row[peer + "_s"] = statistics.median(seconds)
                row[peer + "_MiB"] = peak_mib
            rows.append(row)
            print(json.dumps(row), flush=True)

    def cell(row, key, fmt):
        return fmt % row[key] if key in row else "-"

    print("\n| case | attnconv s | peak MiB | torch separable s | ratio | torch dense s | ratio | torch conv2d s | "
          "attnconv / conv2d | engine GFLOP/s (whole case) | of dgemm |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        ratio = lambda peer: "%.1f×" % (r[peer + "_s"] / r["attnconv_s"]) if peer + "_s" in r else "-"
        print("| %s | %.3f | %.0f | %s | %s | %s | %s | %s | %.1f | %.1f | %.0f %% |" % (
            r["case"], r["attnconv_s"], r["attnconv_MiB"], cell(r, "separable_s", "%.3f"), ratio("separable"),
            cell(r, "dense_s", "%.3f"), ratio("dense"), cell(r, "conv2d_s", "%.3f"),
            r["attnconv_s"] / r["conv2d_s"], r["executed_GFLOPs"], 100 * r["executed_GFLOPs"] / dgemm))
    print("\n(torch peak MiB: %s)" % ", ".join("%s %s" % (r["case"], "/".join(
        "%s %.0f" % (p, r[p + "_MiB"]) for p in ("separable", "dense", "conv2d") if p + "_MiB" in r)) for r in rows))


if __name__ == "__main__":
    main()
