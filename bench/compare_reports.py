#!/usr/bin/python3
"""Two reports of the same cases, metric by metric: every metric of every case identical.

  /usr/bin/python3 bench/compare_reports.py BEFORE/report.json AFTER/report.json

For a change meant not to move any number (issue 27.1: alpha_min and the bound
bit-identical): run `attnconv run cases --out BEFORE` with the old build and
`--out AFTER` with the new one, then this. Numbers are compared as the JSON
holds them (the shortest round-trip decimal of each double, so equal text is
equal bits; NaN and infinities are written as null or strings and compared so).
Also compares each case's status and verdict. Prints each difference and exits 1
when there is one, 0 when the reports agree on every case of both.
"""
import json
import sys


def by_name(report):
    return {case["name"]: case for case in report["cases"]}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        before = by_name(json.load(f))
    with open(argv[2]) as f:
        after = by_name(json.load(f))
    differences = []
    for name in sorted(set(before) | set(after)):
        if name not in after or name not in before:
            differences.append(f"{name}: only in {'the first' if name in before else 'the second'} report")
            continue
        b, a = before[name], after[name]
        for key in ("status", "verdict"):
            if b.get(key) != a.get(key):
                differences.append(f"{name}: {key} {b.get(key)!r} -> {a.get(key)!r}")
        bm, am = b.get("metrics", {}), a.get("metrics", {})
        for metric in sorted(set(bm) | set(am)):
            # json.dumps: 0.1 and 0.1 equal, 1.0 and 1 not (an integer metric turned float is a change)
            if json.dumps(bm.get(metric)) != json.dumps(am.get(metric)):
                differences.append(f"{name}: {metric} {json.dumps(bm.get(metric))} -> {json.dumps(am.get(metric))}")
    for line in differences:
        print(line)
    print(f"{len(before)} and {len(after)} cases, {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
