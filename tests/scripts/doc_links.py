#!/usr/bin/python3
"""The documentation's links resolve: every relative markdown link in
README.md and docs/*.md names a file of the checkout and, with an #anchor, a
heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces
as hyphens, -1, -2, ... for repeated headings); every citation of a section
of docs/design.md in the sources and docs (`design.md, "Finite alpha"`) names
one of its headings; the README's quick start gives the two commands CI and
users run, `./build.sh verify` and `./build.sh test`, exactly; and the
README's "One case" runs as written and gives the verdicts it states.

Usage: doc_links.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import glob
import os
import re
import unicodedata

from cli_check import attnconv, check, finish, load, source, work


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is None and not line.startswith("    ") and not line.startswith("\t"):
            yield number, line


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"`", "", heading.strip()).lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return text.replace(" ", "-")


def headings(path):
    names, anchors, seen = [], set(), {}
    for _, line in prose_lines(read(path)):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        names.append(m.group(1))
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    return names, anchors


anchor_cache = {}


def anchors_of(path):
    if path not in anchor_cache:
        anchor_cache[path] = headings(path)[1]
    return anchor_cache[path]


pages = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
check(len(pages) > 2, f"no documentation pages found under {source}")
links = 0
for page in pages:
    name = os.path.relpath(page, source)
    for number, line in prose_lines(read(page)):
        line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
        for target in re.findall(r"\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)", line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            links += 1
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
            if not os.path.exists(resolved):
                check(False, f"{name}:{number}: link to {target}: {os.path.relpath(resolved, source)} does not exist")
                continue
            if anchor:
                if not resolved.endswith(".md"):
                    check(False, f"{name}:{number}: link to {target}: an anchor into a file that is not markdown")
                elif anchor not in anchors_of(resolved):
                    check(False, f"{name}:{number}: link to {target}: {os.path.relpath(resolved, source)} has no "
                          f"heading with the anchor #{anchor}")
check(links > 20, f"only {links} relative links found: is the link pattern still right?")

# Citations of docs/design.md's sections by name, as the code's comments and the docs write them.
design = os.path.join(source, "docs", "design.md")
design_headings = set(headings(design)[0])
cited = 0
for folder in ["src", "proofs", "tests", "docs", "python", "bench", "cases"]:
    for path in glob.glob(os.path.join(source, folder, "**", "*"), recursive=True):
        if not path.endswith((".cpp", ".hpp", ".py", ".md", ".json", ".sh", ".txt")) or not os.path.isfile(path):
            continue
        for number, line in enumerate(read(path).splitlines(), 1):
            for section in re.findall(r"design\.md\)?[,:]?\s*\(?\"([^\"]+)\"", line):
                cited += 1
                check(section in design_headings, f"{os.path.relpath(path, source)}:{number}: cites docs/design.md, "
                      f"\"{section}\", which is not a heading of docs/design.md")
for number, line in enumerate(read(os.path.join(source, "README.md")).splitlines(), 1):
    for section in re.findall(r"design\.md\)?[,:]?\s*\(?\"([^\"]+)\"", line):
        cited += 1
        check(section in design_headings, f"README.md:{number}: cites docs/design.md, \"{section}\", which is not a "
              "heading of docs/design.md")
check(cited > 20, f"only {cited} citations of docs/design.md sections found: is the pattern still right?")

# The quick start's two commands, exactly (.ci/run runs the second).
readme = read(os.path.join(source, "README.md"))
quick = re.split(r"\n## Quick start[^\n]*\n", readme, maxsplit=1)
check(len(quick) == 2, "README.md has no '## Quick start' section")
if len(quick) == 2:
    body = quick[1].split("\n## ", 1)[0]
    for command in ["./build.sh verify", "./build.sh test"]:
        check(re.search(r"^    " + re.escape(command) + r"(\s|$)", body, re.M) is not None,
              f"README.md's quick start does not give `{command}` as a command line")

# The README's "One case", as written: its case file, then `run`; the verdicts its text names.
one = re.split(r"\n## One case\n", readme, maxsplit=1)
check(len(one) == 2, "README.md has no '## One case' section")
if len(one) == 2:
    body = one[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", body, re.S)
    check(len(blocks) == 1, f"README.md's 'One case' has {len(blocks)} json blocks, not 1")
    stated = re.search(r"`(\d+) passed, 0 failed, 0 errored in … s; ([^`]*)`", body)
    check(stated is not None, "README.md's 'One case' states no summary line")
    if len(blocks) == 1 and stated:
        with open(os.path.join(work, "my_cases.json"), "w", encoding="utf-8") as f:
            f.write(blocks[0])
        done = attnconv("run", os.path.join(work, "my_cases.json"), "--out", os.path.join(work, "one"), "--quiet")
        check(done.returncode == 0, f"the README's one case: run exit code {done.returncode}: {done.stderr[-800:]}")
        if done.returncode == 0:
            summary = load(os.path.join(work, "one", "report.json"))["summary"]
            got = {verdict: count for verdict, count in summary["verdicts"].items() if count}
            want = {m.group(2): int(m.group(1)) for m in re.finditer(r"(\d+) ([a-z ]+?)(?:,|$)", stated.group(2))}
            check(summary["passed"] == int(stated.group(1)) and got == want,
                  f"the README's one case gives {summary['passed']} passed, {got}; the README states "
                  f"{stated.group(1)} passed, {want}")

finish(f"{len(pages)} pages, {links} relative links, {cited} citations of docs/design.md sections")
