#!/usr/bin/env bash
# Submits an attnconv verification run to Slurm as N shards plus a merge job:
#
#   slurm/submit.sh N [CASE FILES/FOLDERS...]      (default: cases/)
#
# Prints "ARRAY_JOB_ID MERGE_JOB_ID OUT_DIR". The merged report appears in
# OUT_DIR/merged/report.json (JUnit in OUT_DIR/merged/junit.xml) once the
# merge job has run. Extra sbatch options (partition, account, ...) go in
# $SBATCH_OPTIONS, e.g. SBATCH_OPTIONS="--partition=short --account=proj".
# Environment: ATTNCONV (program, default build/attnconv), ATTNCONV_OUT
# (default reports/slurm-<timestamp>).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards="${1:?usage: $0 N [CASE FILES/FOLDERS...]}"
shift
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: N must be a positive integer, got '$shards'" >&2; exit 2; }
export ATTNCONV="$(realpath "${ATTNCONV:-build/attnconv}")"
export ATTNCONV_OUT="$(realpath -m "${ATTNCONV_OUT:-reports/slurm-$(date -u +%Y%m%dT%H%M%SZ)}")"
export ATTNCONV_SHARDS="$shards"
[ -x "$ATTNCONV" ] || { echo "submit.sh: $ATTNCONV is not an executable (build first, or set ATTNCONV)" >&2; exit 2; }
mkdir -p "$ATTNCONV_OUT"
paths=()
for p in "${@:-cases}"; do paths+=("$(realpath "$p")"); done
# shellcheck disable=SC2086  # SBATCH_OPTIONS is a list of options
array_job=$(sbatch --parsable ${SBATCH_OPTIONS:-} --array="1-$shards" --export=ALL \
  --output="$ATTNCONV_OUT/shard-%a.log" "$here/attnconv-array.sbatch" "${paths[@]}")
array_job="${array_job%%;*}"
# shellcheck disable=SC2086
merge_job=$(sbatch --parsable ${SBATCH_OPTIONS:-} --dependency="afterany:$array_job" --export=ALL \
  --output="$ATTNCONV_OUT/merge.log" "$here/attnconv-merge.sbatch")
merge_job="${merge_job%%;*}"
echo "$array_job $merge_job $ATTNCONV_OUT"
