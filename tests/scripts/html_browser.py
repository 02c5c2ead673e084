#!/usr/bin/python3
"""The HTML page of a report (run --html, attnconv html) in a real browser:
Debian's chromium through selenium, from file:// with the network off. Checks
that the page makes no request and logs no console error, has one row per
case with the failed and errored cases first, sorts by a clicked column
header, filters by text and by status, opens a row's details by click and by
keyboard, escapes a case name holding markup, and renders a screenshot that is
not blank. If the browser cannot start, the test fails with the reason.

Usage: html_browser.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import html.parser
import json
import os
import time

from cli_check import attnconv, check, finish, load, work
from selenium.webdriver.support.select import Select

from browser import console_errors, png_colours, requests_made, start_browser

probe = {"proof": "cordonnier2020.theorem1",
         "params": {"image": [7, 7], "kernel": 3, "in_channels": 2, "out_channels": 3,
                    "heads": 9, "head_dim": 3, "padding": 1}}
markup = '<img src=x onerror="window.pwned=1"><script>window.pwned=2'
cases = [
    dict(probe, name="sweep", sweep={"alpha": [2, 8, 16, 40, 60]}, tolerance={"rel_l2": 1e-10}),  # low alpha fails
    dict(probe, name=markup),
    dict(probe, name="too-slow", params={"image": [64, 64], "kernel": 7, "in_channels": 2, "out_channels": 2,
                                         "heads": 49, "head_dim": 2, "padding": 3, "engine": "dense"}),
    {"name": "cost", "proof": "acmix2022.cost_table",
     "params": {"image": [14, 14], "in_channels": 8, "out_channels": 16, "heads": 4, "kernel_att": 3, "kernel_conv": 3}},
]
suite = os.path.join(work, "suite.json")
with open(suite, "w") as f:
    json.dump({"cases": cases}, f)
out = os.path.join(work, "out")
run = attnconv("run", suite, "--out", out, "--html", "--timeout", "0.5", "--quiet")
check(run.returncode == 1, f"run --html: exit code {run.returncode} (expected 1: failures and an error): {run.stderr}")
page_path = os.path.join(out, "report.html")
check(os.path.isfile(page_path), "run --html wrote no report.html")
report = load(os.path.join(out, "report.json"))
names = [c["name"] for c in report["cases"]]
statuses = [c["status"] for c in report["cases"]]
check("fail" in statuses and "error" in statuses and "pass" in statuses, f"statuses {statuses}")

# `attnconv html` writes the same page (but for nothing: it is deterministic).
again = attnconv("html", os.path.join(out, "report.json"), "--out", os.path.join(work, "again.html"))
check(again.returncode == 0, f"attnconv html: exit {again.returncode}: {again.stderr}")
with open(page_path, encoding="utf-8") as f:
    page = f.read()
with open(os.path.join(work, "again.html"), encoding="utf-8") as f:
    check(f.read() == page, "attnconv html and run --html wrote different pages")

# Bad input and outputs: exit 2 naming the file, nothing written or overwritten.
missing = attnconv("html", os.path.join(work, "missing.json"))
check(missing.returncode == 2 and "missing.json" in missing.stderr, f"a missing report: {missing.returncode} {missing.stderr}")
check(not os.path.exists(os.path.join(work, "report.html")), "a page written for a missing report")
over = attnconv("html", os.path.join(out, "report.json"), "--out", os.path.join(out, "report.json"))
check(over.returncode == 2 and "report.json" in over.stderr, f"--out over the report: {over.returncode} {over.stderr}")
check(load(os.path.join(out, "report.json")) == report, "--out over the report changed it")
not_report = os.path.join(work, "not_report.json")
with open(not_report, "w") as f:
    json.dump({"cases": [{"name": "x"}]}, f)
bad = attnconv("html", not_report, "--out", page_path)
check(bad.returncode == 2 and "not_report.json" in bad.stderr, f"a file that is not a report: {bad.returncode} {bad.stderr}")
with open(page_path, encoding="utf-8") as f:
    check(f.read() == page, "a refused html command changed the earlier page")

# Without JavaScript: every case and its details are in the HTML.
class Count(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = {}

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1

counter = Count()
counter.feed(page)
check(counter.tags.get("tbody") == len(names), f"{counter.tags.get('tbody')} <tbody> for {len(names)} cases")
check(counter.tags.get("details", 0) >= len(names), "a case without <details>")
check(counter.tags.get("script") == 2 and counter.tags.get("img", 0) == 0, f"markup of a case name parsed: {counter.tags}")
check("http://" not in page and "https://" not in page,
      "the page names a network address")
check(page.count("<svg") >= 2, "the page holds no figure")

try:
    start = time.time()
    driver = start_browser()
except Exception as e:  # the test fails, with the reason
    check(False, f"the browser cannot start: {type(e).__name__}: {e}")
    finish()
try:
    url = "file://" + os.path.abspath(page_path)
    driver.get(url)
    js = driver.execute_script
    check(js("return document.readyState") == "complete", "the page did not load")
    rows = lambda: js("return Array.from(document.querySelectorAll('#cases > tbody:not([hidden])'))"
                      ".map(b => [b.rows[0].cells[0].textContent, b.dataset.status])")
    shown = rows()
    check(len(shown) == len(names), f"{len(shown)} rows for {len(names)} cases")
    check(sorted(n for n, _ in shown) == sorted(names), "the rows' names are not the case names")
    check(markup in [n for n, _ in shown], "the case name with markup is not shown as written")
    check(js("return window.pwned === undefined"), "a case name's markup ran")
    order = [s for _, s in shown]
    first_pass = order.index("pass")
    check(all(s == "pass" for s in order[first_pass:]), f"failed and errored cases not first: {order}")

    # sorting: a click on a header sorts by it, a second click reverses
    button = lambda label: driver.find_element("xpath", f"//table[@id='cases']/thead//button[text()='{label}']")
    button("name").click()
    check([n for n, _ in rows()] == sorted(names, key=str.lower), f"name sort: {[n for n, _ in rows()]}")
    button("name").click()
    check([n for n, _ in rows()] == sorted(names, key=str.lower, reverse=True), "second click does not reverse")
    button("max_abs").click()
    values = js("return Array.from(document.querySelectorAll('#cases > tbody')).map(b => b.rows[0].cells[4].dataset.v)")
    numbers = [float(v) for v in values if v != ""]
    check(numbers == sorted(numbers) and all(v == "" for v in values[len(numbers):]),
          f"max_abs sort (missing last): {values}")
    check(js("return document.querySelector('#cases th[aria-sort]').textContent") == "max_abs", "aria-sort not set")

    # filtering by text and by status
    box = driver.find_element("id", "filter-text")
    box.send_keys("sweep[alpha=4")
    check([n for n, _ in rows()] == ["sweep[alpha=40]"], f"text filter: {rows()}")
    box.clear()
    box.send_keys(" ")  # an input event with an empty filter
    check(len(rows()) == len(names), "clearing the filter does not show every case")
    status = Select(driver.find_element("id", "filter-status"))
    status.select_by_value("fail")
    check(rows() and all(s == "fail" for _, s in rows()) and len(rows()) == statuses.count("fail"),
          f"status filter: {rows()}")
    status.select_by_value("")

    # a row opens its details: by click, and from the keyboard
    first = driver.find_element("css selector", "#cases > tbody tr.row")
    message = driver.find_element("css selector", "#cases > tbody .msg")
    check(not message.is_displayed(), "details shown before the row is opened")
    first.click()
    check(message.is_displayed() and first.get_attribute("aria-expanded") == "true", "a click does not open the row")
    first.click()
    check(not message.is_displayed(), "a second click does not close the row")
    js("arguments[0].focus()", first)
    driver.switch_to.active_element.send_keys("\n")
    check(message.is_displayed(), "Enter on a focused row does not open it")

    shot = os.path.join(work, "page.png")
    driver.save_screenshot(shot)
    colours = png_colours(shot)
    check(colours >= 16, f"the screenshot looks blank: {colours} colours")

    errors = console_errors(driver)
    check(not errors, f"console errors: {errors}")
    others = [u for u in requests_made(driver) if u != url and not u.startswith("data:")]
    check(not others, f"the page made requests: {others}")
    elapsed = time.time() - start
finally:
    driver.quit()
finish(f"{len(names)} cases in the browser, {elapsed:.1f} s, screenshot {colours} colours")
