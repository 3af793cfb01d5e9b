#!/usr/bin/env bash
# fuzz/run.sh [seconds-per-harness] — build and run the libFuzzer harnesses of libexperiment.
#
#   fuzz/run.sh          60 s per harness
#   fuzz/run.sh 10       CI smoke round (~40 s in all)
#
# Steps: build fuzz/fuzz_*.c into .build/fuzz/ with clang -fsanitize=fuzzer,address,undefined linked
# against the release libexperiment.so; replay every file of fuzz/regressions/<harness>/ (fails on any
# crash); then fuzz each harness for the given time, seeded from fuzz/corpus/<harness>/ (read-only) with
# new inputs kept in .build/fuzz/corpus/<harness>/, and print executions, coverage and crashes.
# Exit status: 0 when nothing crashed, 1 when a harness crashed (artifacts in .build/fuzz/artifacts/),
# 2 on a setup problem.
#
# Environment:
#   FUZZ_CC            clang with libFuzzer (default: /opt/swift/usr/bin/clang, else clang on PATH)
#   FUZZ_LIB_DIR       directory holding the libexperiment.so to link (default: .build/release)
#   FUZZ_INSTRUMENTED  1: first build a coverage-instrumented libexperiment.so (swiftc -sanitize=fuzzer)
#                      from a copy of Package.swift/Sources/include into .build-fuzz/ and fuzz that —
#                      coverage then reaches into the library (about 10x more edges), at the price of a
#                      swift build (~1-2 min from scratch, incremental afterwards). Off by default.
#   FUZZ_JOBS          harnesses fuzzed at the same time (default 1; results stay per harness)
#   FUZZ_SEED          libFuzzer -seed (default 1, so a CI round is as repeatable as a timed run can be)
#   FUZZ_HARNESSES     subset to run, e.g. "fuzz_inputs fuzz_options"
#   FUZZ_EXTRA_ARGS    more libFuzzer flags for every harness
#   FUZZ_EXTRA_CFLAGS  more compiler flags for the harnesses (e.g. -DFUZZ_TOLERATE_OPEN_FINDINGS)
set -u -o pipefail

SECONDS_PER_HARNESS="${1:-60}"
case "$SECONDS_PER_HARNESS" in ''|*[!0-9]*) echo "usage: fuzz/run.sh [seconds-per-harness]" >&2; exit 2;; esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/.build/fuzz"
HARNESSES="${FUZZ_HARNESSES:-fuzz_datafile fuzz_options fuzz_inputs}"
SEED="${FUZZ_SEED:-1}"
JOBS="${FUZZ_JOBS:-1}"

# -max_len per harness: datafiles are the big inputs (demo.json is 11.5 KB; leave room to grow),
# options objects are small, the field records of fuzz_inputs must be able to pass the 1024-byte key limit.
max_len() {
    case "$1" in
        fuzz_datafile) echo 32768 ;;
        fuzz_options) echo 4096 ;;
        fuzz_inputs) echo 8192 ;;
        *) echo 4096 ;;
    esac
}

# --- toolchain ----------------------------------------------------------------------------------
CC="${FUZZ_CC:-}"
if [ -z "$CC" ]; then
    if [ -x /opt/swift/usr/bin/clang ]; then CC=/opt/swift/usr/bin/clang; else CC="$(command -v clang || true)"; fi
fi
if [ -z "$CC" ]; then echo "fuzz: no clang found (set FUZZ_CC)" >&2; exit 2; fi

# --- library ------------------------------------------------------------------------------------
LIB_DIR="${FUZZ_LIB_DIR:-$ROOT/.build/release}"
if [ "${FUZZ_INSTRUMENTED:-0}" = 1 ]; then
    SNAP="$ROOT/.build-fuzz/src"
    mkdir -p "$SNAP"
    echo "== building an instrumented libexperiment.so (swiftc -sanitize=fuzzer) in .build-fuzz/"
    # A copy of the package (sources, tests: SwiftPM checks every target's folder), so edits made while
    # it builds cannot break the build; cp -p keeps timestamps, so unchanged files are not recompiled.
    for item in Package.swift Package.resolved Sources Tests include; do
        rm -rf "$SNAP/$item.new"
        [ -e "$ROOT/$item" ] || { rm -rf "$SNAP/$item"; continue; }
        cp -Rp "$ROOT/$item" "$SNAP/$item.new" && rm -rf "$SNAP/$item" && mv "$SNAP/$item.new" "$SNAP/$item" ||
            { echo "fuzz: copying $item failed" >&2; exit 2; }
    done
    # The shipping build's flags (Sources/experiment/shipping.flags: SONAME, exports map, nodelete...).
    (cd "$SNAP" && swift build -c release --product experiment --scratch-path "$ROOT/.build-fuzz/build" \
        $(sed 's/#.*//' Sources/experiment/shipping.flags) \
        -Xswiftc -sanitize=fuzzer -Xswiftc -static-stdlib) > "$ROOT/.build-fuzz/build.log" 2>&1 ||
        { tail -30 "$ROOT/.build-fuzz/build.log" >&2; echo "fuzz: instrumented build failed" >&2; exit 2; }
    LIB_DIR="$ROOT/.build-fuzz/build/release"
    ln -sf libexperiment.so "$LIB_DIR/libexperiment.so.0"
fi
if [ ! -f "$LIB_DIR/libexperiment.so" ]; then
    echo "fuzz: $LIB_DIR/libexperiment.so is missing: run 'make lib' first" >&2
    exit 2
fi
# The SONAME the harnesses record must resolve next to the library.
[ -e "$LIB_DIR/libexperiment.so.0" ] || ln -sf libexperiment.so "$LIB_DIR/libexperiment.so.0"

# --- build the harnesses ------------------------------------------------------------------------
mkdir -p "$OUT/bin" "$OUT/artifacts" "$OUT/logs"
CFLAGS=(-g -O1 -std=c11 -Wall -Wextra -Werror -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
        -I"$ROOT/include" -DFUZZ_DEMO_DATAFILE="\"$ROOT/examples/datafiles/demo.json\"")
# shellcheck disable=SC2206
CFLAGS+=(${FUZZ_EXTRA_CFLAGS:-})
LDFLAGS=(-L"$LIB_DIR" -lexperiment -Wl,-rpath,"$LIB_DIR")
# json-c: the harnesses compare what the library accepts as JSON with json-c, called as the library calls it.
# shellcheck disable=SC2207
CFLAGS+=($(pkg-config --cflags json-c))
# shellcheck disable=SC2207
LDFLAGS+=($(pkg-config --libs json-c))
# lld avoids gold's warnings about ASan's local symbols; use it when this clang can link with it.
echo 'int main(void){return 0;}' > "$OUT/lld-probe.c"
if "$CC" -fuse-ld=lld "$OUT/lld-probe.c" -o "$OUT/lld-probe" >/dev/null 2>&1; then LDFLAGS+=(-fuse-ld=lld); fi
rm -f "$OUT/lld-probe" "$OUT/lld-probe.c"
for h in $HARNESSES; do
    if ! "$CC" "${CFLAGS[@]}" "$ROOT/fuzz/$h.c" -o "$OUT/bin/$h" "${LDFLAGS[@]}" 2> "$OUT/logs/$h.build.log"; then
        cat "$OUT/logs/$h.build.log" >&2
        echo "fuzz: building $h failed" >&2
        exit 2
    fi
done
echo "== built $HARNESSES with $("$CC" --version | head -1) against $LIB_DIR/libexperiment.so"

# The harnesses' clients keep their state file (sticky bucketing, queued events) here, never in the user's
# own state directory; the event endpoint is left as a user has it (the default unless the caller set one).
export XDG_STATE_HOME="$OUT/state"
mkdir -p "$XDG_STATE_HOME"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1:symbolize=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/fuzz/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
[ -x "$(dirname "$CC")/llvm-symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$(dirname "$CC")/llvm-symbolizer"

FAILED=0

# --- replay regressions -------------------------------------------------------------------------
# Each file on its own, so every failing one is listed (libFuzzer stops at the first crash). They run on a
# state directory holding events an earlier run left for an endpoint that is down (seed_state.c), so the
# event pipeline's thread retries and logs while each harness runs and closes its client.
REPLAY_STATE="$OUT/replay-state"
rm -rf "$REPLAY_STATE"
if ! "$CC" -O1 -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" "$ROOT/fuzz/seed_state.c" -o "$OUT/bin/seed_state" \
        -L"$LIB_DIR" -lexperiment -Wl,-rpath,"$LIB_DIR" 2> "$OUT/logs/seed_state.build.log" ||
   ! "$OUT/bin/seed_state" "$REPLAY_STATE/libexperiment" "$ROOT/examples/datafiles/demo.json"; then
    cat "$OUT/logs/seed_state.build.log" >&2
    echo "fuzz: seeding the replay state directory failed" >&2
    exit 2
fi
for h in $HARNESSES; do
    dir="$ROOT/fuzz/regressions/$h"
    [ -d "$dir" ] || continue
    passed=0 failed=0
    for file in "$dir"/*; do
        [ -f "$file" ] || continue
        log="$OUT/logs/$h.regression.$(basename "$file").log"
        if XDG_STATE_HOME="$REPLAY_STATE" "$OUT/bin/$h" -runs=1 "$file" > "$log" 2>&1; then
            passed=$((passed + 1)); rm -f "$log"
        else
            failed=$((failed + 1))
            echo "== $h: REGRESSION fuzz/regressions/$h/$(basename "$file") fails (log: ${log#"$ROOT/"})"
            grep -m1 -A2 'CONTRACT VIOLATION\|ERROR: AddressSanitizer\|runtime error\|ERROR: LeakSanitizer\|ERROR: libFuzzer' "$log" |
                cut -c1-240 | sed 's/^/   /'
        fi
    done
    [ $((passed + failed)) -gt 0 ] && echo "== $h: $passed of $((passed + failed)) regression input(s) pass"
    [ "$failed" = 0 ] || FAILED=1
done

# --- fuzz ---------------------------------------------------------------------------------------
run_one() {
    local h="$1" work="$OUT/corpus/$1" seeds="$ROOT/fuzz/corpus/$1" art="$OUT/artifacts/$1/"
    mkdir -p "$work" "$art"
    touch "$OUT/logs/$h.stamp"
    # Timeouts and memory: an input that takes 10 s or a process past 2.5 GB is a finding, not a hang.
    # shellcheck disable=SC2086
    "$OUT/bin/$h" "$work" "$seeds" -dict="$ROOT/fuzz/json.dict" -max_len="$(max_len "$h")" \
        -max_total_time="$SECONDS_PER_HARNESS" -seed="$SEED" -timeout=10 -rss_limit_mb=2560 \
        -artifact_prefix="$art" -print_final_stats=1 ${FUZZ_EXTRA_ARGS:-} > "$OUT/logs/$h.log" 2>&1
    echo $? > "$OUT/logs/$h.rc"
}

echo "== fuzzing $SECONDS_PER_HARNESS s per harness (seed $SEED)"
running=0
for h in $HARNESSES; do
    rm -f "$OUT/logs/$h.rc"
    if [ "$JOBS" -gt 1 ]; then
        run_one "$h" &
        running=$((running + 1))
        if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
    else
        run_one "$h"
    fi
done
wait

printf '%-15s %12s %8s %8s %8s  %s\n' harness executions exec/s cov ft result
for h in $HARNESSES; do
    log="$OUT/logs/$h.log"
    rc="$(cat "$OUT/logs/$h.rc" 2>/dev/null || echo '?')"
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    eps="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
    ft="$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
    # Artifacts written by this run (older ones are left in place, and ignored).
    crashes="$(find "$OUT/artifacts/$h/" -type f -newer "$OUT/logs/$h.stamp" -printf '%f\n' 2>/dev/null |
               grep -E '^(crash|leak|timeout|oom)-' || true)"
    if [ "$rc" = 0 ] && [ -z "$crashes" ]; then
        result="ok, no crashes"
    else
        result="CRASH (exit $rc): see .build/fuzz/logs/$h.log"
        FAILED=1
    fi
    printf '%-15s %12s %8s %8s %8s  %s\n' "$h" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "$result"
    if [ "$result" != "ok, no crashes" ]; then
        grep -m1 -A3 'CONTRACT VIOLATION\|ERROR: AddressSanitizer\|runtime error\|ERROR: LeakSanitizer\|ERROR: libFuzzer' "$log" | cut -c1-240 | sed 's/^/   /'
        for c in $crashes; do echo "   artifact: .build/fuzz/artifacts/$h/$c"; done
    fi
done
if [ "$FAILED" != 0 ]; then
    echo "fuzz: FAILED. Reproduce: .build/fuzz/bin/<harness> <artifact>; minimize: .build/fuzz/bin/<harness> -minimize_crash=1 -runs=10000 <artifact>"
    exit 1
fi
echo "fuzz: all harnesses ran without crashes"
