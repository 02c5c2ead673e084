#!/usr/bin/python3
"""The HTML page at scale (docs/reports.md): size, load time
and sort time in headless chromium (tests/scripts/browser.py) of
  - the page of the whole suite (`run cases --html`), whose screenshot, with a
    case opened, is written to docs/figures/report-html.png with --screenshot;
  - the page of a report of at least 10 000 cases: every case of cases/ swept
    over enough seeds (skipped with --suite-only).
Not a test: it takes a few minutes (the 10 000 cases run).

Usage: bench/html_bench.py ATTNCONV_BINARY WORK_DIR [--screenshot PNG] [--suite-only]
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "scripts"))
from browser import console_errors, start_browser  # noqa: E402

binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
screenshot = sys.argv[sys.argv.index("--screenshot") + 1] if "--screenshot" in sys.argv else None
source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(cases, out, cwd):
    start = time.time()
    subprocess.run([binary, "run", cases, "--out", out, "--html", "--quiet", "--jobs", "2"], check=False, cwd=cwd)
    with open(os.path.join(out, "report.json")) as f:
        count = len(json.load(f)["cases"])
    return count, time.time() - start


def measure(driver, page, label):
    url = "file://" + os.path.abspath(page)
    start = time.time()
    driver.get(url)
    wall = time.time() - start
    js = driver.execute_script
    loaded = js("var t = performance.timing; return t.loadEventEnd - t.navigationStart")
    sort = js("var b = document.querySelector('#cases th:nth-child(5) button'), t = performance.now(); b.click();"
              "return performance.now() - t")
    filter_ms = js("var box = document.getElementById('filter-text'), t = performance.now(); box.value = 'alpha';"
                   "box.dispatchEvent(new Event('input')); return performance.now() - t")
    rows = js("return document.getElementById('cases').tBodies.length")
    errors = console_errors(driver)
    size = os.path.getsize(page)
    print(f"{label}: {rows} cases, page {size / 1e6:.2f} MB, load {loaded} ms (driver.get {wall:.2f} s), "
          f"sort by max_abs {sort:.0f} ms, first filter {filter_ms:.0f} ms, console errors {len(errors)}")
    return size


# The whole suite.
count, seconds = run("cases", os.path.join(work, "suite"), source)
print(f"suite: {count} cases run in {seconds:.1f} s")
driver = start_browser(1280, 1500)
try:
    suite_page = os.path.join(work, "suite", "report.html")
    measure(driver, suite_page, "suite")
    if screenshot:
        driver.get("file://" + os.path.abspath(suite_page))
        driver.execute_script("var box = document.getElementById('filter-text'); box.value = 't1-k3';"
                              "box.dispatchEvent(new Event('input'));"
                              "document.querySelector('#cases > tbody:not([hidden]) tr.row').click();")
        driver.save_screenshot(screenshot)
        print(f"screenshot: {screenshot}, {os.path.getsize(screenshot) / 1e3:.0f} kB")
finally:
    driver.quit()
if "--suite-only" in sys.argv:
    sys.exit(0)

# At least 10 000 cases: every case of the suite over enough seeds (its tensor
# files named by absolute path, in each of the "weights" forms).
big = os.path.join(work, "cases10k")
os.makedirs(big)
cases_dir = os.path.abspath(os.path.join(source, "cases"))
seeds = -(-10000 // count)


def absolute(weights):
    if isinstance(weights, str):
        return os.path.join(cases_dir, weights)
    out = {}
    for k, v in weights.items():
        out[k] = os.path.join(cases_dir, v) if isinstance(v, str) else dict(v, file=os.path.join(cases_dir, v["file"]))
    return out


for name in sorted(os.listdir(cases_dir)):
    if name.endswith(".json") and name != "schema.json":
        with open(os.path.join(cases_dir, name)) as f:
            data = json.load(f)
        for c in data["cases"]:
            c.setdefault("sweep", {})["seed"] = list(range(1, seeds + 1))
            if "weights" in c:
                c["weights"] = absolute(c["weights"])
        with open(os.path.join(big, name), "w") as f:
            json.dump(data, f)
count, seconds = run("cases10k", os.path.join(work, "big"), work)
print(f"10k: {count} cases run in {seconds:.1f} s")
driver = start_browser()
try:
    size = measure(driver, os.path.join(work, "big", "report.html"), "10k")
    print("under 20 MB" if size < 20e6 else "OVER 20 MB")
finally:
    driver.quit()
