#!/usr/bin/python3
"""float32 never 'holds' where float64 does not (issue 24, B4).

Every case in cases/ whose proof takes a dtype is run twice, as a float32 and
as a float64 twin (the same file, seed and tensors), and the float32 verdict
must not be 'holds' unless the float64 one is. The cases cover the finite-alpha
sweeps (Theorem 1, the absolute encoding, the local proofs), the ConViT gates
and the nearest convolution, where float32's round-off allowance could hide
the claim's own error. A float32 case that holds must say which verdict its
twin had (metric float64_verdict). Added: the issue's examples (Theorem 1 at
alpha = 12 in float32 was 'holds' with its finite-alpha error of 1.1e-4).

Usage: float_twins.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import glob
import json
import os
import shutil

from cli_check import attnconv, check, finish, load, source, work

proofs = {p["id"]: p for p in json.loads(attnconv("proofs", "--json").stdout)}
with_dtype = {pid for pid, p in proofs.items() if "dtype" in p["params"]}

shutil.copytree(os.path.join(source, "cases"), os.path.join(work, "cases"))
os.symlink(os.path.join(source, "tests"), os.path.join(work, "tests"))  # cases name ../tests/fixtures/...
examples = {"cases": [
    {"name": "issue24-t1-alpha12", "proof": "cordonnier2020.theorem1",
     "params": {"image": [8, 8], "kernel": 3, "in_channels": 3, "out_channels": 4, "heads": 9, "head_dim": 4,
                "padding": 1, "seed": 3, "alpha": 12}}]}
with open(os.path.join(work, "cases", "issue24_examples.json"), "w") as f:
    json.dump(examples, f)

originals = sorted(glob.glob(os.path.join(work, "cases", "*.json")))
for dtype in ("float32", "float64"):
    for path in originals:
        if path.endswith("schema.json"):
            continue
        data = load(path)
        for case in data["cases"]:
            # A case reading .npy files keeps their dtype (the harness's own float64 twin of a float32
            # case widens them; cases/ has such cases).
            if case.get("proof") not in with_dtype or "weights" in case:
                continue
            case.setdefault("params", {})["dtype"] = dtype
            case.get("sweep", {}).pop("dtype", None)
            if case.get("sweep") == {}:
                del case["sweep"]
        # Beside the originals, so that the tensors they name resolve as before.
        with open(os.path.join(work, "cases", f"twin_{dtype}_" + os.path.basename(path)), "w") as f:
            json.dump(data, f)

verdicts = {}
for dtype in ("float32", "float64"):
    files = sorted(glob.glob(os.path.join(work, "cases", f"twin_{dtype}_*.json")))
    out = os.path.join(work, "report_" + dtype)
    run = attnconv("run", *files, "--out", out)
    check(run.returncode in (0, 1), f"{dtype}: exit {run.returncode}: {run.stderr[-400:]}")
    report = load(os.path.join(out, "report.json"))
    verdicts[dtype] = {c["name"]: c for c in report["cases"] if c.get("proof") in with_dtype}
    check(all(c["status"] != "error" for c in report["cases"]),
          f"{dtype}: errors: {[c['name'] for c in report['cases'] if c['status'] == 'error'][:5]}")

checked = holds32 = 0
for name, c32 in verdicts["float32"].items():
    c64 = verdicts["float64"].get(name)
    check(c64 is not None, f"{name}: no float64 twin")
    if c64 is None:
        continue
    if c32["params"].get("dtype") != "float32":
        continue  # a case reading float64 files, not twinned here
    checked += 1
    if c32["verdict"] == "holds":
        holds32 += 1
        check(c64["verdict"] == "holds",
              f"{name}: float32 holds but float64 says {c64['verdict']}: {c64['message'][:200]}")
        check(c32["metrics"].get("float64_verdict") == "holds",
              f"{name}: a float32 'holds' without its twin's verdict: {c32['metrics'].get('float64_verdict')}")
    elif c32["metrics"].get("float64_verdict") is not None:
        check(c32["verdict"] in ("bound holds", "fails") and "in float64 the same case is" in c32["message"],
              f"{name}: withheld 'holds' without saying why: {c32['verdict']}: {c32['message'][:200]}")
example = verdicts["float32"].get("issue24-t1-alpha12")
check(example is not None and example["verdict"] == "bound holds",
      f"Theorem 1 at alpha = 12 in float32: {example and example['verdict']}: {example and example['message'][:300]}")
check(checked > 100, f"only {checked} twins compared")
finish(f"{checked} float32/float64 twins, {holds32} float32 holds")
