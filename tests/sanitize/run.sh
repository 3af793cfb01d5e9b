#!/usr/bin/env bash
# tests/sanitize/run.sh [address] [thread] — builds the library with each sanitizer named (default: both;
# separate scratch builds), runs the multithreaded stress programs against each, and fails on any report.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
clang=${SANITIZE_CC:-/opt/swift/usr/bin/clang}
runtime=$(dirname "$(dirname "$(command -v swift)")")/lib/swift/linux   # libdispatch, BlocksRuntime
out=.build/sanitize
mkdir -p "$out"

sanitizers=("$@")
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(thread address)

for sanitizer in "${sanitizers[@]}"; do
    case "$sanitizer" in thread|address) ;; *) echo "unknown sanitizer: $sanitizer" >&2; exit 2;; esac
    scratch=.build-$sanitizer
    echo "== libexperiment.so with -sanitize=$sanitizer ($scratch)"
    # The shipping build's flags (Sources/experiment/shipping.flags), without the static Swift stdlib.
    swift build -c release --product experiment --scratch-path "$scratch" $(sed 's/#.*//' Sources/experiment/shipping.flags) \
        -Xswiftc -sanitize=$sanitizer \
        2>&1 | tail -1
    lib=$repo/$scratch/release
    ln -sf libexperiment.so "$lib/libexperiment.so.0"
    flags=(-fsanitize=$sanitizer -g -O1)
    [ "$sanitizer" = address ] && flags=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -g -O1)
    "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude tests/sanitize/stress.c -o "$out/stress-$sanitizer" \
        -L"$lib" -lexperiment -Wl,-rpath,"$lib" -L"$runtime" -ldispatch -lBlocksRuntime -Wl,-rpath,"$runtime" -lpthread
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" ASAN_OPTIONS="detect_leaks=1" \
        "$out/stress-$sanitizer" > "$out/stress-$sanitizer.log" 2>&1 || {
            echo "stress under $sanitizer sanitizer failed:"; grep -v "rejected datafile" "$out/stress-$sanitizer.log" | head -60; exit 1; }
    if grep -q "ThreadSanitizer\|AddressSanitizer\|LeakSanitizer\|runtime error" "$out/stress-$sanitizer.log"; then
        echo "sanitizer report under $sanitizer:"; grep -v "rejected datafile" "$out/stress-$sanitizer.log" | head -60; exit 1
    fi
    echo "   4 deciding threads + 1 swapping thread: no $sanitizer sanitizer report"
    # Hot swap consistency: deciders while exp_client_start and the datafile manager (start_async, refresh
    # over file://) swap two revisions hundreds of times; every decision must come from one revision.
    "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude tests/sanitize/swap.c -o "$out/swap-$sanitizer" \
        -L"$lib" -lexperiment -Wl,-rpath,"$lib" -L"$runtime" -ldispatch -lBlocksRuntime -Wl,-rpath,"$runtime" -lpthread
    scratch_dir=$(mktemp -d)
    EXPERIMENT_TEST_SECOND_MS=5 TSAN_OPTIONS="halt_on_error=1 exitcode=66" ASAN_OPTIONS="detect_leaks=1" \
        "$out/swap-$sanitizer" tests/sanitize/data/swap_a.json tests/sanitize/data/swap_b.json "$scratch_dir" \
        > "$out/swap-$sanitizer.log" 2>&1 || {
            echo "swap test under $sanitizer sanitizer failed:"; head -60 "$out/swap-$sanitizer.log"; rm -rf "$scratch_dir"; exit 1; }
    rm -rf "$scratch_dir"
    if grep -q "ThreadSanitizer\|AddressSanitizer\|LeakSanitizer\|runtime error" "$out/swap-$sanitizer.log"; then
        echo "sanitizer report under $sanitizer (swap):"; head -60 "$out/swap-$sanitizer.log"; exit 1
    fi
    echo "   $(tail -1 "$out/swap-$sanitizer.log"): consistent, no $sanitizer sanitizer report"
    # Real-time segments: async/sync fetches, segments, ODP events and the VUID from 4 threads, then close.
    "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude tests/sanitize/odp_stress.c -o "$out/odp-stress-$sanitizer" \
        -L"$lib" -lexperiment -Wl,-rpath,"$lib" -L"$runtime" -ldispatch -lBlocksRuntime -Wl,-rpath,"$runtime" -lpthread
    rm -rf "$out/odp-state-$sanitizer"
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" ASAN_OPTIONS="detect_leaks=1" \
        "$out/odp-stress-$sanitizer" examples/datafiles/segments.json "$out/odp-state-$sanitizer" \
        > "$out/odp-stress-$sanitizer.log" 2>&1 || {
            echo "ODP stress under $sanitizer sanitizer failed:"; head -60 "$out/odp-stress-$sanitizer.log"; exit 1; }
    if grep -q "ThreadSanitizer\|AddressSanitizer\|LeakSanitizer\|runtime error" "$out/odp-stress-$sanitizer.log"; then
        echo "sanitizer report under $sanitizer (ODP stress):"; head -60 "$out/odp-stress-$sanitizer.log"; exit 1
    fi
    echo "   real-time segments from 4 threads, close with fetches in flight: no $sanitizer sanitizer report"
    # The event pipeline: 4 tracking threads + flush/stats, a 127.0.0.1 server failing every third POST.
    "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude -Itests/support tests/sanitize/events.c -o "$out/events-$sanitizer" \
        -L"$lib" -lexperiment -Wl,-rpath,"$lib" -L"$runtime" -ldispatch -lBlocksRuntime -Wl,-rpath,"$runtime" -lpthread
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" ASAN_OPTIONS="detect_leaks=1" \
        "$out/events-$sanitizer" examples/datafiles/demo.json > "$out/events-$sanitizer.log" 2>&1 || {
            echo "event pipeline under $sanitizer sanitizer failed:"; head -60 "$out/events-$sanitizer.log"; exit 1; }
    if grep -q "ThreadSanitizer\|AddressSanitizer\|LeakSanitizer\|runtime error" "$out/events-$sanitizer.log"; then
        echo "sanitizer report in the event pipeline under $sanitizer:"; head -60 "$out/events-$sanitizer.log"; exit 1
    fi
    echo "   event pipeline ($(grep -o '[0-9]* accepted, [0-9]* received' "$out/events-$sanitizer.log")): no $sanitizer sanitizer report"
    # fork() with the library's threads running (issue 33): parent and child track, each event received once.
    # AddressSanitizer only: ThreadSanitizer does not support a child that goes on running threads after a
    # fork of a multithreaded process (it reports or deadlocks inside its own runtime).
    if [ "$sanitizer" = address ]; then
        "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude tests/events/fork_events.c -o "$out/fork-events-$sanitizer" \
            -L"$lib" -lexperiment -Wl,-rpath,"$lib" -L"$runtime" -ldispatch -lBlocksRuntime -Wl,-rpath,"$runtime" -lpthread
        state=$(mktemp -d)
        ASAN_OPTIONS="detect_leaks=0" "$out/fork-events-$sanitizer" examples/datafiles/demo.json "$state" \
            > "$out/fork-events-$sanitizer.log" 2>&1 || {
                echo "fork test under $sanitizer sanitizer failed:"; head -60 "$out/fork-events-$sanitizer.log"; exit 1; }
        rm -rf "$state"
        if grep -q "AddressSanitizer\|runtime error" "$out/fork-events-$sanitizer.log"; then
            echo "sanitizer report in the fork test under $sanitizer:"; head -60 "$out/fork-events-$sanitizer.log"; exit 1
        fi
        echo "   fork with threads running ($(grep -o 'received [0-9]*' "$out/fork-events-$sanitizer.log")): no $sanitizer sanitizer report"
    fi
    # Kameleoon's asynchronous calls: run-when-ready waiters, conversions with completion callbacks and
    # asynchronous flushes from 4 threads, the client closed with callbacks pending.
    "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude -Itests/support tests/sanitize/callbacks.c -o "$out/callbacks-$sanitizer" \
        -L"$lib" -lexperiment -Wl,-rpath,"$lib" -L"$runtime" -ldispatch -lBlocksRuntime -Wl,-rpath,"$runtime" -lpthread
    rm -rf "$out/callbacks-state-$sanitizer" && mkdir -p "$out/callbacks-state-$sanitizer"
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" ASAN_OPTIONS="detect_leaks=1" \
        "$out/callbacks-$sanitizer" examples/datafiles/demo.json "$out/callbacks-state-$sanitizer" \
        > "$out/callbacks-$sanitizer.log" 2>&1 || {
            echo "callbacks under $sanitizer sanitizer failed:"; head -60 "$out/callbacks-$sanitizer.log"; exit 1; }
    if grep -q "ThreadSanitizer\|AddressSanitizer\|LeakSanitizer\|runtime error" "$out/callbacks-$sanitizer.log"; then
        echo "sanitizer report in the callbacks under $sanitizer:"; head -60 "$out/callbacks-$sanitizer.log"; exit 1
    fi
    echo "   callbacks ($(tail -1 "$out/callbacks-$sanitizer.log")): no $sanitizer sanitizer report"
    if [ "$sanitizer" = address ]; then
        "$clang" "${flags[@]}" -fuse-ld=lld -Iinclude tests/sanitize/lifecycle.c -o "$out/lifecycle" \
            -L"$lib" -lexperiment -Wl,-rpath,"$lib"
        ASAN_OPTIONS="detect_leaks=1" "$out/lifecycle" examples/datafiles/demo.json > "$out/lifecycle.log" 2>&1 || {
            echo "create/close 10,000 times under ASan/LSan failed:"; head -60 "$out/lifecycle.log"; exit 1; }
        echo "   $(tail -1 "$out/lifecycle.log"); no leak reported"
    fi
done
echo "sanitizer tests: OK"
