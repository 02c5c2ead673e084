#!/usr/bin/python3
"""A large report made quickly, for the HTML page at scale (the browser test
tests/scripts/html_scale.py and bench/html_bench.py): runs a template of real
cases once — six files of cases/ and three cases of its own that fail or err —
and repeats its entries until the report has N cases. Copy k of a case is named
NAME~k (its sweep group GROUP~k, so each copy of an alpha sweep is a sweep of
its own, fitted as the template's); the summary is recounted. The entries'
numbers are the template's, as the run measured them.

The template report and a sample of the output (its first two copies, the
summary recounted) are checked against reports/schema.json with jsonschema;
the whole output is checked by `attnconv html`, which validates what it reads.
Runs from SOURCE_DIR (the case files' relative paths resolve there).

Usage: bench/large_report.py ATTNCONV_BINARY SOURCE_DIR OUT_JSON [--cases N]
"""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

TEMPLATE_FILES = ["theorem1_basic.json", "theorem1_alpha_sweep.json", "acmix_cost_table.json",
                  "theorem1_npy_weights.json", "nearest_convolution.json", "lemma1.json"]
# A sweep whose low alphas fail their tolerance, and a case stopped by --timeout (an error).
probe = {"proof": "cordonnier2020.theorem1",
         "params": {"image": [7, 7], "kernel": 3, "in_channels": 2, "out_channels": 3,
                    "heads": 9, "head_dim": 3, "padding": 1}}
OWN_CASES = [
    dict(probe, name="scale-sweep", sweep={"alpha": [2, 8, 16, 40, 60]}, tolerance={"rel_l2": 1e-10}),
    dict(probe, name="scale-tolerance", params=dict(probe["params"], alpha=4), tolerance={"max_abs": 1e-12}),
    dict(probe, name="scale-too-slow", params={"image": [64, 64], "kernel": 7, "in_channels": 2, "out_channels": 2,
                                               "heads": 49, "head_dim": 2, "padding": 3, "engine": "dense"}),
]


def run_cases(binary, source, files, out, *options):
    run = subprocess.run([binary, "run", *files, "--out", out, "--quiet", "--jobs", "2", *options],
                         cwd=source, capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"large_report: the template run exited {run.returncode}: {run.stderr}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def template_report(binary, source, work):
    """The template: the cases of TEMPLATE_FILES and OWN_CASES, run (only the slow one with --timeout)."""
    paths = []
    for k, cases in enumerate([OWN_CASES[:-1], OWN_CASES[-1:]]):
        paths.append(os.path.join(work, f"scale_cases_{k}.json"))
        with open(paths[-1], "w") as f:
            json.dump({"cases": cases}, f)
    files = [os.path.join("cases", name) for name in TEMPLATE_FILES] + paths[:1]
    report = run_cases(binary, source, files, os.path.join(work, "template"))
    slow = run_cases(binary, source, paths[1:], os.path.join(work, "slow"), "--timeout", "0.5")
    report["cases"] += slow["cases"]
    return report


def sweep_label(entry):
    """alpha_sweep_group of src/report/sweep_fit.cpp: the sweep group and the other swept keys."""
    point = entry.get("sweep_point", {})
    if not isinstance(point.get("alpha"), (int, float)):
        return ""
    label = entry.get("sweep_group", "")
    for key, value in point.items():
        if key != "alpha":
            label += f"[{key}={value if isinstance(value, str) else json.dumps(value)}]"
    return label


def summary_of(cases, template):
    summary = {"total": len(cases), "seconds": sum(c.get("seconds", 0) for c in cases)}
    for key, status in [("passed", "pass"), ("failed", "fail"), ("errored", "error")]:
        summary[key] = sum(c["status"] == status for c in cases)
    verdicts = {v: 0 for v in template["summary"].get("verdicts", {})}
    for c in cases:
        if "verdict" in c:
            verdicts[c["verdict"]] = verdicts.get(c["verdict"], 0) + 1
    summary["verdicts"] = verdicts
    return summary


def repeat(template, count):
    """The template's entries repeated to `count` cases, with their fits and a recounted summary."""
    cases, fits = [], []
    fits_of = {}
    for fit in template.get("sweep_fits", []):
        fits_of.setdefault(fit["group"], []).append(fit)
    k = 0
    while len(cases) < count:
        labels = set()
        for entry in template["cases"][:count - len(cases)]:
            c = dict(entry)  # a shallow copy: the nested values are shared, never changed
            c["name"] = f"{entry['name']}~{k}"
            c["sweep_group"] = f"{entry.get('sweep_group', entry['name'])}~{k}"
            old, new = sweep_label(entry), sweep_label(c)
            if old in fits_of and old not in labels:
                labels.add(old)
                fits += [dict(fit, group=new) for fit in fits_of[old]]
            cases.append(c)
        k += 1
    report = {key: value for key, value in template.items() if key not in ("cases", "sweep_fits", "summary")}
    report.update(cases=cases, sweep_fits=fits, summary=summary_of(cases, template))
    return report


def main():
    binary, source, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    count = int(sys.argv[sys.argv.index("--cases") + 1]) if "--cases" in sys.argv else 100000
    with open(os.path.join(source, "reports", "schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    with tempfile.TemporaryDirectory() as work:
        template = template_report(binary, source, work)
    validator.validate(template)
    validator.validate(repeat(template, min(count, 2 * len(template["cases"]))))
    report = repeat(template, count)
    with open(out, "w") as f:
        json.dump(report, f, separators=(",", ":"))
    s = report["summary"]
    print(f"{out}: {s['total']} cases ({s['passed']} passed, {s['failed']} failed, {s['errored']} errored) "
          f"from a template of {len(template['cases'])}, {os.path.getsize(out) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
