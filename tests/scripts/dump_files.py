#!/usr/bin/python3
"""Each proof's declared dumps (`attnconv proofs --json`, the source of
docs/tensor_dumps.md) against what --dump-tensors writes: every registered
proof declares its dumps, and a case of each proof (the smallest by memory
estimate in cases/) dumps every file declared for every case, case.json and no
file it does not declare; docs/tensor_dumps.md is the table the registry generates.

Usage: dump_files.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os

from cli_check import attnconv, check, finish, source, work


def declared_dumps():
    """proof -> (files of every case, files only under a condition), from `attnconv proofs --json`."""
    run = attnconv("proofs", "--json")
    check(run.returncode == 0, f"attnconv proofs --json exit code {run.returncode}")
    rows = {}
    for proof in json.loads(run.stdout):
        always = {d["name"] + ".npy" for d in proof["dumps"] if not d["only_when"]}
        sometimes = {d["name"] + ".npy" for d in proof["dumps"] if d["only_when"]}
        rows[proof["id"]] = (always, sometimes)
    return rows


def docs_table_current():
    run = attnconv("proofs", "--dumps-table")
    with open(os.path.join(source, "docs", "tensor_dumps.md"), encoding="utf-8") as f:
        check(f.read() == run.stdout, "docs/tensor_dumps.md differs from `attnconv proofs --dumps-table` (the build "
              "regenerates it: build, then commit it)")


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


table = declared_dumps()
proofs = registered_proofs()
cases = smallest_case_per_proof()
docs_table_current()
for proof in proofs:
    check(table.get(proof, (set(), set()))[0], f"{proof} declares no tensor it dumps")
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
    check("case.json" in dumped, f"{proof} ({name}): no case.json beside its dumps")
    dumped.discard("case.json")
    always, sometimes = table.get(proof, (set(), set()))
    check(always <= dumped, f"{proof} ({name}): declares {sorted(always - dumped)}, not dumped")
    check(dumped <= always | sometimes, f"{proof} ({name}): dumped {sorted(dumped - always - sometimes)}, "
          "not declared in its .dumps")
    print(f"{proof}: {name}: {len(dumped)} files as declared")
finish(f"{len(proofs)} proofs")
