#!/usr/bin/python3
"""The HTML page of a 100 000-case report (issue 27, item 6): a report made by
bench/large_report.py from a template of real cases, written by `attnconv
html` and loaded in Debian's headless chromium (tests/scripts/browser.py,
network off). Checks that the writer's peak memory is at most 1 GiB and the
page at most 100 MB; that the page has one row per case, failed cases first,
the figures of at most 100 cases (the first of them failed) and a note saying
how many are omitted and how to get them; that the browser shows every row,
filters by status, opens a row and logs no console error and makes no request;
and that a bad --figures or --details is refused with exit 2. Not timed (the
times are bench/html_bench.py's): the ctest label `scale`, because it takes
minutes on a loaded machine.

Usage: html_scale.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR [--cases N]
"""
import os
import re
import subprocess
import sys
import time

from cli_check import attnconv, binary, check, finish, source, work

from browser import console_errors, requests_made, start_browser

cases = int(sys.argv[sys.argv.index("--cases") + 1]) if "--cases" in sys.argv else 100000
report_path = os.path.join(work, "report.json")
make = subprocess.run([sys.executable, os.path.join(source, "bench", "large_report.py"), binary, source, report_path,
                       "--cases", str(cases)], capture_output=True, text=True)
check(make.returncode == 0, f"bench/large_report.py: exit {make.returncode}: {make.stderr}")
if make.returncode:
    finish()
print(make.stdout.strip())
with open(report_path) as f:
    report_text = f.read()
failed = report_text.count('"status":"fail"')

page_path = os.path.join(work, "report.html")
writer = subprocess.Popen([binary, "html", report_path, "--out", page_path], cwd=source,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
_, status, usage = os.wait4(writer.pid, 0)
stderr = writer.stderr.read()
check(os.waitstatus_to_exitcode(status) == 0, f"attnconv html: exit {os.waitstatus_to_exitcode(status)}: {stderr}")
peak = usage.ru_maxrss * 1024  # kilobytes on Linux
check(peak <= 2**30, f"attnconv html: peak RSS {peak / 2**20:.0f} MiB > 1 GiB")
size = os.path.getsize(page_path)
check(size <= 100e6, f"the page is {size / 1e6:.1f} MB > 100 MB")
with open(page_path, encoding="utf-8") as f:
    page = f.read()
check(page.count("<tbody") == cases, f"{page.count('<tbody')} <tbody> for {cases} cases")
figured = [m.start() for m in re.finditer(r"<div class=figs>", page)]
check(0 < len(figured) <= 100, f"{len(figured)} cases with figures (expected 1 to 100)")
first_figured = page.rfind("<tbody", 0, figured[0]) if figured else -1
check(page.startswith('<tbody id=case-', first_figured) and 'data-status="fail"' in page[first_figured:first_figured + 60],
      "the first case with figures is not a failed one")
note = re.search(r'<p class="banner" id="omitted">(.*?)</p>', page)
check(note is not None, "no note saying what the page omits")
if note:
    check(re.search(r"the figures of \d+ cases are drawn, those of \d+ others omitted", note.group(1)) is not None,
          f"the note does not count the omitted figures: {note.group(1)[:300]}")
    check("--figures all --details all" in note.group(1) and "attnconv plot" in note.group(1),
          "the note does not say how to get what is omitted")
del page, report_text

for flag, value in [("--figures", "some"), ("--details", "-1")]:
    bad = attnconv("html", report_path, "--out", os.path.join(work, "bad.html"), flag, value)
    check(bad.returncode == 2 and flag in bad.stderr and not os.path.exists(os.path.join(work, "bad.html")),
          f"{flag} {value}: exit {bad.returncode}: {bad.stderr}")

try:
    driver = start_browser()
except Exception as e:  # the test fails, with the reason
    check(False, f"the browser cannot start: {type(e).__name__}: {e}")
    finish()
try:
    driver.set_page_load_timeout(600)
    driver.set_script_timeout(600)
    url = "file://" + os.path.abspath(page_path)
    start = time.time()
    driver.get(url)
    loaded = time.time() - start
    js = driver.execute_script
    check(js("return document.readyState") == "complete", "the page did not load")
    check(js("return document.getElementById('cases').tBodies.length") == cases, "not every case has a row")
    check(js("return document.getElementById('shown').textContent") == f"{cases} of {cases} cases shown",
          "the count of shown cases is wrong")
    check(js("return document.querySelector('#cases > tbody').dataset.status") == "fail", "the first row has not failed")
    js("var s = document.getElementById('filter-status'); s.value = 'fail'; s.dispatchEvent(new Event('change'))")
    shown = js("return document.querySelectorAll('#cases > tbody:not([hidden])').length")
    check(shown == failed, f"the status filter shows {shown} cases, {failed} failed")
    first = driver.find_element("css selector", "#cases > tbody tr.row")
    first.click()
    check(first.get_attribute("aria-expanded") == "true", "a click does not open the first row")
    errors = console_errors(driver)
    check(not errors, f"console errors: {errors}")
    others = [u for u in requests_made(driver) if u != url and not u.startswith("data:")]
    check(not others, f"the page made requests: {others}")
finally:
    driver.quit()
finish(f"{cases} cases: writer peak {peak / 2**20:.0f} MiB, page {size / 1e6:.1f} MB, "
       f"{len(figured)} cases with figures, loaded in {loaded:.1f} s")
