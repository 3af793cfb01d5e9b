#!/usr/bin/env bash
# tools/run_stages.sh TIER STAGE... — runs each make target STAGE in turn, keeps going after a failure so one
# run shows every broken stage, and ends with a table of each stage's time and result (the slowest stage is
# the next one to split or move to the full tier). Exit status 1 when any stage failed.
set -u
tier=$1
shift
make=${MAKE:-make}
results=()
failed=0
started=$(date +%s)
for stage in "$@"; do
    echo "== [$tier] $stage"
    begin=$(date +%s)
    if "$make" --no-print-directory "$stage"; then status=ok; else status=FAILED; failed=1; fi
    results+=("$(printf '%-24s %6ss  %s' "$stage" "$(( $(date +%s) - begin ))" "$status")")
done
echo
echo "== $tier: time per stage"
printf '%s\n' "${results[@]}"
printf '%-24s %6ss\n' "total" "$(( $(date +%s) - started ))"
if [ "$failed" = 1 ]; then
    echo "make $tier: a stage failed (see FAILED above)"
    exit 1
fi
echo "make $tier: all stages passed"
