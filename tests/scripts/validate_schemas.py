#!/usr/bin/python3
"""cases/schema.json and reports/schema.json: generated from the proof registry,
committed, and checked against what the tool reads and writes.

1. The committed files equal `attnconv schema cases|report` (no drift).
2. Every shipped case file validates against cases/schema.json.
3. The loader and the schema agree on bad input: each broken case below is
   refused by both (schema error, and `attnconv list` exit code 2); each good
   variant is accepted by both.
4. Every report the suite writes validates against reports/schema.json: a full
   run of cases/, a shard report, a merged report, and a report with an
   errored case.

Usage: validate_schemas.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
Needs Debian's python3-jsonschema (run with /usr/bin/python3).
"""
import copy
import glob
import json
import os

import jsonschema

from cli_check import attnconv, check, finish, load, source, work


schemas = {}
for kind, path in (("cases", "cases/schema.json"), ("report", "reports/schema.json")):
    generated = attnconv("schema", kind)
    check(generated.returncode == 0, f"attnconv schema {kind} exits {generated.returncode}: {generated.stderr}")
    committed = load(os.path.join(source, path))
    check(json.loads(generated.stdout) == committed,
          f"{path} differs from `attnconv schema {kind}`; regenerate: attnconv schema {kind} > {path}")
    jsonschema.Draft202012Validator.check_schema(committed)
    schemas[kind] = jsonschema.Draft202012Validator(committed)

# 2. Every shipped case file.
case_files = sorted(p for p in glob.glob(os.path.join(source, "cases", "**", "*.json"), recursive=True)
                    if os.path.basename(p) != "schema.json")
check(case_files, "no case files found")
for path in case_files:
    errors = list(schemas["cases"].iter_errors(load(path)))
    check(not errors, f"{path}: {[e.message for e in errors[:3]]}")

# 3. Loader and schema agree, case by case.
good = {"name": "probe", "proof": "cordonnier2020.theorem1",
        "params": {"image": [8, 8], "kernel": 3, "in_channels": 2, "out_channels": 3,
                   "heads": 9, "head_dim": 3, "padding": 1}}


def variant(edit):
    case = copy.deepcopy(good)
    edit(case)
    return case


bad = {
    "unknown case key": variant(lambda c: c.update(colour="red")),
    "unknown parameter": variant(lambda c: c["params"].update(kernal=3)),
    "missing required parameter": variant(lambda c: c["params"].pop("heads")),
    "missing name": variant(lambda c: c.pop("name")),
    "name with a slash": variant(lambda c: c.update(name="a/b")),
    "unknown proof": variant(lambda c: c.update(proof="nobody2099.lemma")),
    "integer as string": variant(lambda c: c["params"].update(in_channels="2")),
    "float for an integer": variant(lambda c: c["params"].update(in_channels=2.5)),
    "below the minimum": variant(lambda c: c["params"].update(in_channels=0)),
    "alpha not > 0": variant(lambda c: c["params"].update(alpha=0)),
    "bad choice": variant(lambda c: c["params"].update(padding_mode="mirror")),
    "bad padding string": variant(lambda c: c["params"].update(padding="full")),
    "negative padding": variant(lambda c: c["params"].update(padding=[1, -1])),
    "padding of 3 sides": variant(lambda c: c["params"].update(padding=[1, 1, 1])),
    "pair of 3": variant(lambda c: c["params"].update(stride=[1, 1, 1])),
    "bool for int": variant(lambda c: c["params"].update(seed=True)),
    "negative tolerance": variant(lambda c: c.update(tolerance={"max_abs": -1})),
    "tolerance not a number": variant(lambda c: c.update(tolerance={"max_abs": "small"})),
    "tolerance on a metric that is not an error": variant(lambda c: c.update(tolerance={"alpha": 100})),
    "tolerance on an unknown metric": variant(lambda c: c.update(tolerance={"max_ab": 1e-9})),
    "bad expect": variant(lambda c: c.update(expect="maybe")),
    "weights not a path": variant(lambda c: c.update(weights={"input": 3})),
    "sweep of an unknown key": variant(lambda c: c.update(sweep={"alfa": [1, 2]})),
    "empty sweep list": variant(lambda c: c.update(sweep={"alpha": []})),
    "bad sweep value": variant(lambda c: c.update(sweep={"alpha": [1, -2]})),
}
acmix = {"name": "acmix-probe", "proof": "acmix2022.module",
         "params": {"image": [6, 6], "in_channels": 4, "out_channels": 8, "heads": 2}}
bad["number pair of one"] = dict(acmix, params=dict(acmix["params"], rates=[0.5]))
bad["number pair of strings"] = dict(acmix, params=dict(acmix["params"], rates=["a", "b"]))
accepted = {
    "the probe": good,
    "an acmix module with rates": dict(acmix, params=dict(acmix["params"], rates=[0.25, 1.5])),
    "padding same": variant(lambda c: c["params"].update(padding="same")),
    "padding of 4 sides": variant(lambda c: c["params"].update(padding=[1, 0, 2, 1])),
    "sweep": variant(lambda c: c.update(sweep={"alpha": [1, 2.5], "seed": [1, 2]})),
    "tolerance and expect": variant(lambda c: c.update(tolerance={"max_abs": 1e-9}, expect="hold")),
    "tolerance on weight_distance": variant(lambda c: c.update(tolerance={"weight_distance": 1e-9})),
    "description": variant(lambda c: c.update(description="text")),
}
for label, case in list(bad.items()) + list(accepted.items()):
    should_pass = label in accepted
    path = os.path.join(work, "probe.json")
    with open(path, "w") as f:
        json.dump({"cases": [case]}, f)
    schema_ok = schemas["cases"].is_valid({"cases": [case]})
    listed = attnconv("list", path)
    loader_ok = listed.returncode == 0
    check(schema_ok == should_pass, f"schema {'rejects' if should_pass else 'accepts'} {label}: {case}")
    check(loader_ok == should_pass, f"loader {'rejects' if should_pass else 'accepts'} {label} "
                                    f"(exit {listed.returncode}: {listed.stderr.strip()})")
    if not should_pass:
        check(listed.returncode == 2, f"loader exit code for {label} is {listed.returncode}, not 2")

# 4. Reports the suite writes.
reports = []
full = attnconv("run", os.path.join(source, "cases"), "--out", os.path.join(work, "full"), "--quiet")
check(full.returncode in (0, 1), f"run cases/ exits {full.returncode}: {full.stderr}")
reports.append(os.path.join(work, "full", "report.json"))
for index in (1, 2):
    shard = attnconv("run", os.path.join(source, "cases"), "--shard", f"{index}/2", "--out",
                     os.path.join(work, f"shard{index}"), "--quiet")
    check(shard.returncode in (0, 1), f"shard {index}/2 exits {shard.returncode}: {shard.stderr}")
    reports.append(os.path.join(work, f"shard{index}", "report.json"))
merged = attnconv("merge", *reports[1:], "--out", os.path.join(work, "merged"))
check(merged.returncode in (0, 1), f"merge exits {merged.returncode}: {merged.stderr}")
reports.append(os.path.join(work, "merged", "report.json"))
# An errored case: one that runs past --timeout (the dense engine on 4096 pixels and 49 heads takes seconds).
errored_case = {"name": "too-slow", "proof": "cordonnier2020.theorem1", "params": {"image": [64, 64], "kernel": 7, "in_channels": 2, "out_channels": 2, "heads": 49, "head_dim": 2, "padding": 3, "engine": "dense"}}
with open(os.path.join(work, "errored.json"), "w") as f:
    json.dump({"cases": [errored_case]}, f)
errored = attnconv("run", os.path.join(work, "errored.json"), "--out", os.path.join(work, "errored"), "--quiet",
                   "--timeout", "0.5")
check(errored.returncode == 1, f"errored run exits {errored.returncode}, expected 1")
reports.append(os.path.join(work, "errored", "report.json"))
errored_report = load(reports[-1])
check(errored_report["cases"][0]["status"] == "error", "the case past --timeout did not error")

for path in reports:
    if not os.path.exists(path):
        check(False, f"{path} was not written")
        continue
    errors = list(schemas["report"].iter_errors(load(path)))
    check(not errors, f"{path}: {[(list(e.absolute_path), e.message) for e in errors[:3]]}")

# The report schema is strict: an undeclared metric, a missing verdict or an unknown one is refused.
full_report = load(reports[0])
for label, spoil in {"an undeclared metric": lambda c: c["metrics"].update(not_declared=1.0),
                     "no verdict": lambda c: c.pop("verdict"),
                     "an unknown verdict": lambda c: c.update(verdict="mostly holds")}.items():
    spoiled = json.loads(json.dumps(full_report))
    spoil(spoiled["cases"][0])
    check(not schemas["report"].is_valid(spoiled), f"the report schema accepts a case with {label}")

finish(f"{len(case_files)} case files, {len(bad) + len(accepted)} loader/schema probes, {len(reports)} reports checked")
