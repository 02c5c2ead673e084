#!/usr/bin/python3
"""End-to-end checks of the workflow commands through the attnconv program:
progress lines and --quiet, --junit (parsed as XML), --shard + merge (equal to
the unsharded run apart from timings; refusals), and plot (PNG and SVG files,
an alpha sweep, attention heat maps, a cost table from a synthetic report).

Usage: workflow_cli.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import re
import xml.etree.ElementTree as ET

from cli_check import attnconv, check, finish, load, source, work


probe = {"proof": "cordonnier2020.theorem1",
         "params": {"image": [7, 7], "kernel": 3, "in_channels": 2, "out_channels": 3,
                    "heads": 9, "head_dim": 3, "padding": 1}}
cases = [
    # low alpha fails the tolerance, high alpha holds
    dict(probe, name="holds", sweep={"alpha": [2, 8, 16, 40, 60]}, tolerance={"rel_l2": 1e-10}),
    dict(probe, name='odd <name> & "quotes"', expect="fail"),  # the claim holds: this case fails
    # errors at run time: the dense engine on 4096 pixels and 49 heads takes seconds, over --timeout
    dict(probe, name="too-slow", params={"image": [64, 64], "kernel": 7, "in_channels": 2, "out_channels": 2, "heads": 49, "head_dim": 2, "padding": 3, "engine": "dense"}),
]
suite = os.path.join(work, "suite.json")
with open(suite, "w") as f:
    json.dump({"cases": cases}, f)

# Progress (stderr is a pipe here: plain lines) and the summary line.
run = attnconv("run", suite, "--out", os.path.join(work, "full"), "--junit", os.path.join(work, "junit", "full.xml"),
               "--timeout", "0.5")
check(run.returncode == 1, f"run exit code {run.returncode}, expected 1 (failures and an error)")
lines = run.stderr.strip().splitlines()
progress = [l for l in lines if re.match(r"^\[\d+/7\] .+ (pass|fail|error) \d+\.\d{3} s, ETA \d+:\d\d$", l)]
check(len(progress) == 7, f"expected 7 progress lines, got: {lines}")
check(progress and progress[-1].startswith("[7/7] "), "last progress line is not [7/7]")
check("\r" not in run.stderr, "carriage return in non-terminal progress output")
check(re.match(r"^2 passed, 4 failed, 1 errored in \d+\.\d\d s", lines[-1]), f"summary line: {lines[-1]}")
quiet = attnconv("run", suite, "--out", os.path.join(work, "quiet"), "--quiet", "--timeout", "0.5")
check(len(quiet.stderr.strip().splitlines()) == 1 and "passed" in quiet.stderr, f"--quiet: {quiet.stderr!r}")

# JUnit XML.
report = load(os.path.join(work, "full", "report.json"))
root = ET.parse(os.path.join(work, "junit", "full.xml")).getroot()
testcases = root.findall("./testsuite/testcase")
check(root.tag == "testsuites" and root.get("tests") == "7", f"testsuites tests={root.get('tests')}")
check([t.get("name") for t in testcases] == [c["name"] for c in report["cases"]], "testcase names != case names")
by_name = {t.get("name"): t for t in testcases}
odd = by_name.get('odd <name> & "quotes"')
check(odd is not None and odd.find("failure") is not None, "the failing case has no <failure>")
if odd is not None and odd.find("failure") is not None:
    check(odd.find("failure").get("message") == report["cases"][5]["message"], "failure message differs")
slow = by_name.get("too-slow")
check(slow is not None and slow.find("error") is not None and "timed out" in slow.find("error").get("message"),
      "the errored case has no <error> saying it timed out")
check(by_name["holds[alpha=60]"].find("failure") is None, "a passing case has a <failure>")
check(by_name["holds[alpha=2]"].find("failure") is not None, "a failing sweep point has no <failure>")

# Shards and merge: the union is the unsharded run, case for case apart from timings.
shard_reports = []
for index in (1, 2, 3):
    out = os.path.join(work, f"shard{index}")
    attnconv("run", suite, "--shard", f"{index}/3", "--out", out, "--quiet", "--timeout", "0.5")
    shard_reports.append(os.path.join(out, "report.json"))
names = [c["name"] for p in shard_reports for c in load(p)["cases"]]
check(sorted(names) == sorted(c["name"] for c in report["cases"]), "the shards do not partition the cases")
merged = attnconv("merge", *reversed(shard_reports), "--out", os.path.join(work, "merged"),
                  "--junit", os.path.join(work, "merged.xml"))
check(merged.returncode == 1, f"merge exit code {merged.returncode}, expected 1 (like the run)")
merged_report = load(os.path.join(work, "merged", "report.json"))
strip = lambda r: [{k: v for k, v in c.items() if k not in ("seconds", "peak_memory")} for c in r["cases"]]
check(strip(merged_report) == strip(report), "merged report differs from the unsharded one")
check({k: merged_report["summary"][k] for k in ("total", "passed", "failed", "errored", "verdicts")} ==
      {k: report["summary"][k] for k in ("total", "passed", "failed", "errored", "verdicts")}, "merged summary differs")
check(sum(report["summary"]["verdicts"].values()) == report["summary"]["total"], "the verdicts do not add up")
for args, words in (((shard_reports[0], shard_reports[1]), "missing shard"),
                    ((shard_reports[0], shard_reports[0], shard_reports[1], shard_reports[2]), "overlapping"),
                    ((os.path.join(work, "full", "report.json"),), "not a shard report")):
    refused = attnconv("merge", *args, "--out", os.path.join(work, "refused"))
    check(refused.returncode == 2 and words in refused.stderr, f"merge {args}: {refused.returncode} {refused.stderr}")
check(not os.path.exists(os.path.join(work, "refused")), "a refused merge wrote a report")
bad_shard = attnconv("run", suite, "--shard", "4/3", "--out", os.path.join(work, "bad"))
check(bad_shard.returncode == 2, f"--shard 4/3 exit code {bad_shard.returncode}")


def comparable(r):
    """The report without what differs from run to run: timings, host, the shards' own records."""
    r = json.loads(json.dumps(r))
    for key in ("environment", "merged_from", "shard"):
        r.pop(key, None)
    r["summary"].pop("seconds")
    for c in r["cases"]:
        c.pop("seconds")
        c.pop("peak_memory", None)
    return r


for key in sorted(set(comparable(merged_report)) | set(comparable(report))):
    check(comparable(merged_report).get(key) == comparable(report).get(key),
          f"merged report differs from the unsharded one in {key!r}")
check("sweep_fits" in merged_report and "run" in merged_report, "merged report lacks sweep_fits or run")

# Plot: the alpha sweep, the attention grid, and a cost table from a synthetic report.
figures = os.path.join(work, "figures")
plotted = attnconv("plot", os.path.join(work, "full", "report.json"), "--out", figures, "--filter", "holds*")
check(plotted.returncode == 0, f"plot exit code {plotted.returncode}: {plotted.stderr}")
for name in ("alpha-sweep-holds", "attention-holds_alpha_2_"):
    for ext, magic in (("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<?xml")):
        path = os.path.join(figures, f"{name}.{ext}")
        check(os.path.exists(path) and open(path, "rb").read(8).startswith(magic[:5]), f"{path} missing or not {ext}")
with open(os.path.join(figures, "alpha-sweep-holds.gp")) as f:
    script = f.read()
slope = re.search(r"fitted d ln\(max_abs\)/d alpha = (-?[0-9.e+-]+)", script)
check(slope is not None and -1.3 < float(slope.group(1)) < -0.7, f"fitted slope not near -1: {slope and slope.group(1)}")
ET.parse(os.path.join(figures, "alpha-sweep-holds.svg"))
# The synthetic cost tables are put into a real report (plot validates it against reports/schema.json).
cost_run = attnconv("run", os.path.join(source, "cases", "acmix_cost_table.json"), "--filter", "cost-k7-att7",
                    "--out", os.path.join(work, "cost"), "--quiet")
check(cost_run.returncode == 0, f"cost table run: {cost_run.returncode} {cost_run.stderr}")
synthetic = load(os.path.join(work, "cost", "report.json"))
real = synthetic["cases"][0]
table = {"convolution": {"stage1_multiply_adds": {"measured": 1000000, "paper": 1000000},
                         "stage2_multiply_adds": {"measured": 8000000, "paper": 8000000},
                         "stage1_params": {"measured": 5, "paper": 5}},
         "self_attention": {"stage1_multiply_adds": {"measured": 3000000},
                            "stage2_multiply_adds": {"measured": 2000000}},
         "acmix": {"stage1_multiply_adds": {"measured": 3000000},
                   "stage2_multiply_adds": {"measured": 2500000},
                   "multiply_adds_by_label": {"stage1": 3000000, "stage2.conv.fc": 7}}}
synthetic["cases"] = [dict(real, name="cost-3x3", metrics=dict(real["metrics"], table=table)),
                      dict(real, name="cost-empty", metrics=dict(real["metrics"], table={}))]
synthetic["summary"].update(total=2, passed=2, failed=0, errored=0)
if "verdicts" in synthetic["summary"]:  # cases per verdict: both are copies of the real case
    synthetic["summary"]["verdicts"] = {v: 2 * (v == real.get("verdict")) for v in synthetic["summary"]["verdicts"]}
with open(os.path.join(work, "synthetic.json"), "w") as f:
    json.dump(synthetic, f)
cost = attnconv("plot", os.path.join(work, "synthetic.json"), "--out", figures)
check(cost.returncode == 0, f"cost plot exit code {cost.returncode}: {cost.stderr}")
check(os.path.exists(os.path.join(figures, "cost-cost-3x3.png")), "no cost figure")
with open(os.path.join(figures, "cost-cost-3x3.dat")) as f:
    rows = [l.split() for l in f if not l.startswith("#")]
check(rows == [["acmix", "3000000", "2500000"], ["convolution", "1000000", "8000000"],
               ["self_attention", "3000000", "2000000"]], f"cost rows: {rows}")
check("cost-empty: no figure: its 'table' metric lists no method" in cost.stderr,
      f"no warning for a cost case without stages: {cost.stderr}")
not_report = attnconv("plot", suite, "--out", figures)
check(not_report.returncode == 2, f"plot of a case file: exit {not_report.returncode}")

finish()
