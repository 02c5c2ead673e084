#!/usr/bin/python3
"""End-to-end checks of outputs that must survive any input: JUnit XML that an
XML parser reads whatever the case names and paths hold, and a run whose
stdout/stderr reader went away (SIGPIPE) still writing its report.

Usage: hardening_cli.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

from cli_check import binary, check, finish, load, work

probe = {"proof": "cordonnier2020.theorem1",
         "params": {"image": [6, 6], "kernel": 3, "in_channels": 2, "out_channels": 3,
                    "heads": 9, "head_dim": 3, "padding": 1}}

# JUnit XML for names XML 1.0 cannot hold as they are: U+FFFF, U+FFFE, control
# characters, and a case file path that is not UTF-8.
odd_names = ["noncharacter \uffff and \ufffe", "control \x01\x08\x1b\x7f", "astral \U0001F600 & <ok>"]
folder = os.path.join(os.fsencode(work), b"not-utf8-\xff\xfe")
os.makedirs(folder)
suite = os.path.join(folder, b"odd.json")
with open(suite, "w") as f:
    json.dump({"cases": [dict(probe, name=name) for name in odd_names] +
                        [dict(probe, name="fails \uffff", expect="fail")]}, f)
junit = os.path.join(work, "odd.xml")
run = subprocess.run([binary, "run", suite, "--out", os.path.join(work, "odd"), "--junit", junit, "--quiet"],
                     capture_output=True, timeout=300)
check(run.returncode == 1, f"run exit code {run.returncode}, expected 1: {run.stderr[-2000:]!r}")
try:
    root = ET.parse(junit).getroot()
    testcases = root.findall("./testsuite/testcase")
    check(len(testcases) == 4, f"{len(testcases)} testcases, expected 4")
    names = [t.get("name") for t in testcases]
    check(names[0] == "noncharacter \ufffd and \ufffd", f"U+FFFF/U+FFFE not replaced: {names[0]!r}")
    check(names[1] == "control \ufffd\ufffd\ufffd\x7f", f"control characters not replaced: {names[1]!r}")
    check(names[2] == "astral \U0001F600 & <ok>", f"a valid name changed: {names[2]!r}")
    check(all("not-utf8-\ufffd\ufffd" in t.get("file") for t in testcases), f"file attribute: {testcases[0].get('file')!r}")
    check(testcases[3].find("failure") is not None, "the failing case has no <failure>")
except ET.ParseError as e:
    check(False, f"JUnit XML is not well-formed: {e}")

# SIGPIPE: the reader of stderr and stdout is gone before the run writes a line.
small = os.path.join(work, "small.json")
with open(small, "w") as f:
    json.dump({"cases": [dict(probe, name=f"c{k}") for k in range(3)]}, f)
out = os.path.join(work, "sigpipe")
read_end, write_end = os.pipe()
os.close(read_end)
piped = subprocess.run([binary, "run", small, "--out", out], stdout=write_end, stderr=write_end, timeout=300)
os.close(write_end)
check(piped.returncode == 0, f"run with a closed stdout/stderr: exit {piped.returncode}, expected 0")
report = load(os.path.join(out, "report.json")) if os.path.exists(os.path.join(out, "report.json")) else {}
check(report.get("summary", {}).get("passed") == 3, "run with a closed stdout/stderr wrote no complete report")
read_end, write_end = os.pipe()
os.close(read_end)
listed = subprocess.run([binary, "list", small], stdout=write_end, stderr=write_end, timeout=300)
os.close(write_end)
check(listed.returncode == 3, f"list into a closed pipe: exit {listed.returncode}, expected 3 (output incomplete)")

# The lock on --out between two real processes, and SIGHUP (which `run` does
# not turn into an interrupted report) removing the lock and temporary files.
slow = os.path.join(work, "slow.json")
# About 8 s on 2 quiet cores (the dense engine on 16384 pixels and 49 heads; 64x64 took
# 0.8 s, short enough to end before the second run below looked at the lock); stopped by signals.
with open(slow, "w") as f:
    json.dump({"cases": [dict(probe, name="slow", params={"image": [128, 128], "kernel": 7, "in_channels": 2,
                                                         "out_channels": 2, "heads": 49, "head_dim": 2,
                                                         "padding": 3, "engine": "dense"})]}, f)
out = os.path.join(work, "locked")
lock = os.path.join(out, "report.lock")
first = subprocess.Popen([binary, "run", slow, "--out", out, "--quiet"], stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 20
while not os.path.exists(os.path.join(out, "report.journal.jsonl")) and time.monotonic() < deadline:
    time.sleep(0.001)
second = subprocess.run([binary, "run", small, "--out", out, "--quiet"], capture_output=True, text=True, timeout=300)
check(second.returncode == 2 and f"another attnconv (pid {first.pid})" in second.stderr,
      f"a second run into a live run's folder: exit {second.returncode}: {second.stderr}")
first.send_signal(signal.SIGHUP)
first.wait(timeout=60)
check(first.returncode == -signal.SIGHUP, f"run after SIGHUP: exit {first.returncode}, expected death by SIGHUP")
check(not os.path.exists(lock), "SIGHUP left the lock behind")
check(not [n for n in os.listdir(out) if ".tmp." in n], f"SIGHUP left temporary files: {os.listdir(out)}")
check(os.path.exists(os.path.join(out, "report.journal.jsonl")), "SIGHUP removed the journal (needed by --resume)")

# SIGTERM then SIGINT: the first signal names the interruption (exit 143), the second changes nothing.
out = os.path.join(work, "two_signals")
first = subprocess.Popen([binary, "run", slow, "--out", out, "--quiet"], stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 20
while not os.path.exists(os.path.join(out, "report.journal.jsonl")) and time.monotonic() < deadline:
    time.sleep(0.001)
first.send_signal(signal.SIGTERM)
# Two standard signals pending together are delivered lowest number first (SIGINT before SIGTERM), so
# "first" means first delivered: SIGINT goes once SIGTERM has left the process's pending set.
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        with open(f"/proc/{first.pid}/status") as f:
            pending = int(next(line for line in f if line.startswith("ShdPnd:")).split()[1], 16)
    except (OSError, StopIteration):
        break
    if not pending & (1 << (signal.SIGTERM - 1)):
        break
    time.sleep(0.001)
first.send_signal(signal.SIGINT)
first.wait(timeout=60)
check(first.returncode == 143, f"run after SIGTERM then SIGINT: exit {first.returncode}, expected 143")
interrupted = load(os.path.join(out, "report.json")) if os.path.exists(os.path.join(out, "report.json")) else {}
check(interrupted.get("interrupted_by", "").startswith("SIGTERM"), f"interrupted_by: {interrupted.get('interrupted_by')!r}")

# plot: a figure file that is a FIFO or a link is refused before any figure is drawn (exit 2); nothing is written through it.
sweep = os.path.join(work, "sweep.json")
with open(sweep, "w") as f:
    json.dump({"cases": [dict(probe, name="c1", sweep={"alpha": [8, 16]})]}, f)
swept = subprocess.run([binary, "run", sweep, "--out", os.path.join(work, "swept"), "--quiet"], capture_output=True, timeout=300)
check(swept.returncode == 0, f"the sweep for plot: exit {swept.returncode}")
kept = os.path.join(work, "kept.txt")
with open(kept, "w") as f:
    f.write("kept\n")
for name, make in (("fifo", lambda path: os.mkfifo(path)), ("link", lambda path: os.symlink(kept, path)),
                   ("dangling", lambda path: os.symlink(os.path.join(work, "missing"), path))):
    figures = os.path.join(work, "figures_" + name)
    os.makedirs(figures)
    make(os.path.join(figures, "alpha-sweep-c1.png"))
    plotted = subprocess.run([binary, "plot", os.path.join(work, "swept", "report.json"), "--out", figures],
                             capture_output=True, text=True, timeout=300)
    check(plotted.returncode == 2 and "alpha-sweep-c1.png is a" in plotted.stderr and "written only as a regular file" in plotted.stderr,
          f"plot over a {name}: exit {plotted.returncode}: {plotted.stderr}")
    check(os.listdir(figures) == ["alpha-sweep-c1.png"], f"plot over a {name} wrote {os.listdir(figures)}")
    with open(kept) as f:
        check(f.read() == "kept\n", f"plot over a {name} changed the link's target")

# Out of memory (issue 24, A3): no raw std::bad_alloc text reaches the user; the case is an error naming its
# estimate, and the run goes on to write its report. 512 heads and channels need about 1 GB; the address space
# is limited to 400 MB.
import resource  # noqa: E402
big = os.path.join(work, "big.json")
with open(big, "w") as f:
    json.dump({"cases": [{"name": "big-nc", "proof": "cordonnier2020.nearest_convolution",
                          "params": {"image": [8, 8], "in_channels": 512, "out_channels": 512, "heads": 512,
                                     "head_dim": 64, "padding": "same", "kernel": [3, 3]}}]}, f)
if os.environ.get("ASAN_OPTIONS") is None:  # AddressSanitizer's shadow memory cannot live in 400 MB
    limited = subprocess.run([binary, "run", big, "--out", os.path.join(work, "big_out")], capture_output=True, text=True,
                             timeout=120, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20)))
    entry = load(os.path.join(work, "big_out", "report.json"))["cases"][0]
    check(limited.returncode == 1 and entry["status"] == "error" and entry["message"].startswith("error: out of memory")
          and "estimate was" in entry["message"],
          f"out of memory: exit {limited.returncode}, {entry['status']}: {entry['message'][:200]}")
    check("bad_alloc" not in limited.stdout + limited.stderr + json.dumps(entry), "raw bad_alloc text reached the user")
else:
    print("out of memory: not checked under AddressSanitizer (its shadow memory needs more address space)")

finish()
