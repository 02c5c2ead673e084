"""What the end-to-end scripts share: their arguments (ATTNCONV_BINARY
SOURCE_DIR WORK_DIR, the work folder made fresh), running the program, reading
JSON, and collecting failures so that one run reports all of them."""
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def attnconv(*args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)


def load(path):
    with open(path) as f:
        return json.load(f)


def finish(summary=""):
    """Prints the summary and the failure count; exits 1 if any check failed."""
    print(f"{summary}{'; ' if summary else ''}{len(failures)} failures")
    sys.exit(1 if failures else 0)
