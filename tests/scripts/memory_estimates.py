#!/usr/bin/python3
"""Memory estimates against measured peaks (issue 24, A3).

  memory_estimates.py ATTNCONV SOURCE_DIR WORK_DIR

1. Runs every case of cases/ once (`attnconv run cases --jobs 2`) and checks,
   for each, that its report entry's memory_estimate (what --max-memory and
   `attnconv list` use) is at least its peak_memory (the case's process's peak
   resident set less the run's, measured with wait4) and at most
   max(4 x peak, peak + SLACK): SLACK = 64 MiB for tiny cases, whose estimate
   is mostly the process's own 16 MiB (src/proof/memory.hpp) and whose peak
   is a few MiB. Prints the worst ratios per proof.
2. The issue's two examples are refused before anything runs (exit 2, file,
   case, key and estimate named, no report written, within seconds: nothing
   allocated): ConViT's under the default --max-memory and 4G, the nearest
   convolution's under 4G and 1G.

Under AddressSanitizer (ASAN_OPTIONS set, .ci/sanitize.sh) a process's resident
set holds the sanitizer's shadow memory and quarantine, which no estimate counts:
part 1 then runs one case file and checks only that the fields are there.
"""
import json
import os
import subprocess
import time

from cli_check import binary as attnconv, check, finish, load, source, work

MiB = 2**20
SLACK = 64 * MiB


# 1. Every case of cases/, its estimate against its peak.
sanitized = "ASAN_OPTIONS" in os.environ
out = os.path.join(work, "all")
cases = os.path.join(source, "cases", "lemma1.json") if sanitized else os.path.join(source, "cases")
if sanitized:
    print("AddressSanitizer: peaks include its shadow memory; checking only that the fields are recorded")
run = subprocess.run([attnconv, "run", cases, "--jobs", "2", "--out", out, "--quiet"],
                     capture_output=True, text=True)
check(run.returncode in (0, 1), f"attnconv run cases: exit {run.returncode}: {run.stderr[-2000:]}")
report = load(os.path.join(out, "report.json"))
worst = {}
for case in report["cases"]:
    name, proof = case["name"], case["proof"]
    if "peak_memory" not in case or "memory_estimate" not in case:
        check(False, f"{name}: no peak_memory or memory_estimate in its entry ({case['status']})")
        continue
    peak, estimate = case["peak_memory"], case["memory_estimate"]
    check(peak > 0 and estimate > 0, f"{name}: peak_memory {peak}, memory_estimate {estimate}")
    if sanitized:
        continue
    check(estimate >= peak, f"{name} ({proof}): estimate {estimate / MiB:.1f} MiB below the peak {peak / MiB:.1f} MiB")
    check(estimate <= max(4 * peak, peak + SLACK),
          f"{name} ({proof}): estimate {estimate / MiB:.1f} MiB above max(4 x peak, peak + 64 MiB), "
          f"peak {peak / MiB:.1f} MiB")
    ratio = estimate / max(peak, 1.0)
    w = worst.setdefault(proof, {"cases": 0, "low": (float("inf"), ""), "high": (0.0, ""), "peak": 0.0})
    w["cases"] += 1
    w["low"] = min(w["low"], (ratio, name))
    w["high"] = max(w["high"], (ratio, name))
    w["peak"] = max(w["peak"], peak)
print(f"{'proof':48} {'cases':>5} {'min est/peak':>12} {'max est/peak':>12} {'largest peak MiB':>16}")
for proof in sorted(worst):
    w = worst[proof]
    print(f"{proof:48} {w['cases']:5d} {w['low'][0]:12.2f} {w['high'][0]:12.2f} {w['peak'] / MiB:16.1f}")

# The estimate `list` prints is the report's.
listed = subprocess.run([attnconv, "list", os.path.join(source, "cases", "convit_gpsa.json")], capture_output=True, text=True)
check(listed.returncode == 0 and listed.stdout.count("\n") >= 1, f"attnconv list: {listed.returncode} {listed.stderr}")

# 2. The issue's examples: refused before they run.
examples = {"cases": [
    # measured: 300 heads, channels and head_dim peak at 1.8 GiB (estimate 2.2 GiB); 400 at about 4.5 GiB
    ({"name": "nearest-400-heads", "proof": "cordonnier2020.nearest_convolution",
      "params": {"image": [8, 8], "in_channels": 400, "out_channels": 400, "heads": 400, "head_dim": 400,
                 "padding": "same", "kernel": "auto"}}, [["--max-memory", "4G"], ["--max-memory", "1G"]]),
    # the equivalent kernel alone is D^2 H W = 16384^2 x 4096 doubles (8 TiB)
    ({"name": "gpsa-256-heads", "proof": "dascoli2021.convit_gpsa",
      "params": {"image": [64, 64], "heads": 256, "head_dim": 64}}, [[], ["--max-memory", "4G"]]),
]}
for case, limits in examples["cases"]:
    path = os.path.join(work, case["name"] + ".json")
    with open(path, "w") as f:
        json.dump({"cases": [case]}, f)
    for limit in limits:
        refused_out = os.path.join(work, "refused-" + case["name"])
        start = time.monotonic()
        refused = subprocess.run([attnconv, "run", path, "--out", refused_out] + limit, capture_output=True, text=True)
        seconds = time.monotonic() - start
        words = [path, f"case '{case['name']}'", "key 'params'", "estimated", "--max-memory", "nothing was run"]
        check(refused.returncode == 2 and all(w in refused.stderr for w in words),
              f"{case['name']} {limit}: exit {refused.returncode}, {refused.stderr[:400]!r}")
        check("bad_alloc" not in refused.stderr, f"{case['name']}: raw bad_alloc text: {refused.stderr[:400]!r}")
        check(not os.path.exists(os.path.join(refused_out, "report.json")), f"{case['name']} {limit}: a report was written")
        check(seconds < 5, f"{case['name']} {limit}: took {seconds:.1f} s to refuse")

finish(f"{len(report['cases'])} cases")
