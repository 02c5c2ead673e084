#!/usr/bin/python3
"""The writer of the HTML page at scale (issue 27, item 6; docs/performance.md,
"The HTML page at scale"): for a report of N cases made by
bench/large_report.py (default 100 000), `attnconv html` REPEAT times, each
with its wall time, CPU time (user + system) and peak RSS (wait4), and the
page's size; with --browser, the page's load time in headless chromium. Not
a test: the numbers depend on the machine and its load (say the load average
with them; compare CPU time when the machine is busy).

Usage: bench/html_scale_bench.py ATTNCONV_BINARY WORK_DIR [--cases N] [--repeat R] [--browser]
"""
import os
import subprocess
import sys
import time

source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
cases = int(sys.argv[sys.argv.index("--cases") + 1]) if "--cases" in sys.argv else 100000
repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
os.makedirs(work, exist_ok=True)
report = os.path.join(work, f"report{cases}.json")
if not os.path.exists(report):
    subprocess.run([sys.executable, os.path.join(source, "bench", "large_report.py"), binary, source, report,
                    "--cases", str(cases)], check=True)
page = os.path.join(work, f"report{cases}.html")
print(f"report: {cases} cases, {os.path.getsize(report) / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f}")
for k in range(repeat):
    start = time.time()
    writer = subprocess.Popen([binary, "html", report, "--out", page], cwd=source, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(writer.pid, 0)
    wall = time.time() - start
    assert os.waitstatus_to_exitcode(status) == 0, "attnconv html failed"
    print(f"run {k + 1}: wall {wall:.1f} s, CPU {usage.ru_utime + usage.ru_stime:.1f} s "
          f"(user {usage.ru_utime:.1f}, system {usage.ru_stime:.1f}), peak RSS {usage.ru_maxrss / 1024:.0f} MiB, "
          f"page {os.path.getsize(page) / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}")
if "--browser" in sys.argv:
    sys.path.insert(0, os.path.join(source, "tests", "scripts"))
    from browser import start_browser
    driver = start_browser()
    try:
        driver.set_page_load_timeout(900)
        start = time.time()
        driver.get("file://" + page)
        loaded = time.time() - start
        rows = driver.execute_script("return document.getElementById('cases').tBodies.length")
        print(f"chromium: loaded in {loaded:.1f} s, {rows} rows")
    finally:
        driver.quit()
