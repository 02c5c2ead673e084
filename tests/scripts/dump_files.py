#!/usr/bin/python3
"""The README table "Tensor dumps" against what --dump-tensors writes: every
registered proof (`attnconv proofs`) has a row, and a case of each proof (the
smallest by memory estimate in cases/) dumps every file of its row's "every
case" column and no file outside its two columns.

Usage: dump_files.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import os
import re

from cli_check import attnconv, check, finish, source, work


def readme_table():
    """proof -> (files of every case, files only under a condition), parsed from README.md."""
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n### Tensor dumps\n", 1)
    check(len(section) == 2, "README.md has no section '### Tensor dumps'")
    rows = {}
    for line in section[-1].split("\n#", 1)[0].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        files = [set(re.findall(r"`([^`]+\.npy)`", cell)) for cell in cells[1:]]
        rows[cells[0].strip("`")] = (files[0], files[1])
    return rows


def registered_proofs():
    run = attnconv("proofs")
    check(run.returncode == 0, f"attnconv proofs exit code {run.returncode}")
    return [line for line in run.stdout.splitlines() if line and not line[0].isspace()]


def mebibytes(estimate):
    number, unit = estimate.split()
    return float(number) * {"B": 2**-20, "KiB": 2**-10, "MiB": 1, "GiB": 2**10, "TiB": 2**20}[unit]


def smallest_case_per_proof():
    """proof -> (case name, case file) of the smallest listed case of cases/."""
    listing = attnconv("list", os.path.join(source, "cases"))
    check(listing.returncode == 0, f"attnconv list cases exit code {listing.returncode}: {listing.stderr}")
    best = {}
    for line in listing.stdout.splitlines():
        name, proof, path, estimate = line.split("\t")
        if proof not in best or mebibytes(estimate) < best[proof][0]:
            best[proof] = (mebibytes(estimate), name, path)
    return {proof: (name, path) for proof, (_, name, path) in best.items()}


table = readme_table()
proofs = registered_proofs()
cases = smallest_case_per_proof()
check(set(table) == set(proofs),
      f"README 'Tensor dumps' rows {sorted(table)} differ from the registered proofs {sorted(proofs)}")
for proof in proofs:
    if proof not in cases:
        check(False, f"no case of {proof} in cases/ to dump")
        continue
    name, path = cases[proof]
    dump = os.path.join(work, "dump-" + proof)
    run = attnconv("run", path, "--filter", name, "--out", os.path.join(work, "report-" + proof),
                   "--dump-tensors", dump, "--quiet")
    check(run.returncode in (0, 1), f"{proof}: run of {name} exit code {run.returncode}: {run.stderr}")
    dumped = set(os.listdir(os.path.join(dump, name))) if os.path.isdir(os.path.join(dump, name)) else set()
    always, sometimes = table.get(proof, (set(), set()))
    check(always <= dumped, f"{proof} ({name}): README lists {sorted(always - dumped)}, not dumped")
    check(dumped <= always | sometimes, f"{proof} ({name}): dumped {sorted(dumped - always - sometimes)}, "
          "not in the README table")
    print(f"{proof}: {name}: {len(dumped)} files as in the README")
finish(f"{len(proofs)} proofs")
