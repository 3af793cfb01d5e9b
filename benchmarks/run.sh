#!/usr/bin/env bash
# benchmarks/run.sh — builds and runs the C and Python decide benchmarks and the C events benchmark, and prints one summary.
#
#   benchmarks/run.sh [--callgrind] [--quick]
#
#   --callgrind   also count instructions per call with valgrind's callgrind (if valgrind is installed)
#   --quick       fewer users/repeats in the Python benchmark (a smoke run, noisier numbers)
#
# Environment:
#   EXPERIMENT_LIBDIR  directory holding libexperiment.so (default: .build/release; built with
#                      `make lib` when missing there)
#   CC, PYTHON         compiler and interpreter (default: cc, python3)
#
# Output: the benchmarks' own tables as they run, then a summary; raw rows in .build/bench/results.tsv.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

callgrind=0
quick=0
for arg in "$@"; do
    case "$arg" in
        --callgrind) callgrind=1 ;;
        --quick) quick=1 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

# What the comparisons need on a fresh machine: the reference SDK, redis-server and the build's Debian packages
# (make test-deps), and eppo-server-sdk for its row when it installs.
make --no-print-directory test-deps
"${PYTHON:-python3}" -c "import eppo_client" 2>/dev/null || "${PYTHON:-python3}" -m pip install -q eppo-server-sdk==4.4.1 \
    || echo "eppo-server-sdk did not install: its comparison row is skipped"

libdir=${EXPERIMENT_LIBDIR:-.build/release}
cc=${CC:-cc}
python=${PYTHON:-python3}

if [ ! -f "$libdir/libexperiment.so" ]; then
    if [ -n "${EXPERIMENT_LIBDIR:-}" ]; then
        echo "run.sh: $libdir/libexperiment.so not found" >&2
        exit 1
    fi
    echo "== $libdir/libexperiment.so missing: make lib"
    make lib
fi
libdir=$(cd "$libdir" && pwd)

out=.build/bench
mkdir -p "$out"
results=$out/results.tsv
: > "$results"
failed=()

# A state directory of the run's own: clients that use the default one would otherwise resend events left
# there by earlier programs (background retries during the measurements), and leave their own behind.
export XDG_STATE_HOME=$repo/$out/state
rm -rf "$XDG_STATE_HOME"
mkdir -p "$XDG_STATE_HOME"

# Programs linked with -lexperiment record the SONAME (libexperiment.so.0), so the loader needs a file of
# that name next to the rpath. A build directory that has only libexperiment.so gets a private link here.
linkdir=$libdir
soname=$(readelf -d "$libdir/libexperiment.so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ -n "$soname" ] && [ ! -e "$libdir/$soname" ]; then
    linkdir=$repo/$out/lib
    mkdir -p "$linkdir"
    ln -sf "$libdir/libexperiment.so" "$linkdir/libexperiment.so"
    ln -sf "$libdir/libexperiment.so" "$linkdir/$soname"
    echo "note: $libdir has no $soname (the SONAME); linking through $linkdir"
fi

echo "== compiling benchmarks/c/bench_decide.c against $libdir"
"$cc" -O2 -std=gnu11 -Wall -Wextra -Iinclude benchmarks/c/bench_decide.c -o "$out/bench_decide" \
    -L"$linkdir" -lexperiment -Wl,-rpath,"$linkdir"

# The sticky-bucketing scenarios: a private redis-server for a-redis (unless BENCH_REDIS_URL names one).
redis_pid=""
if [ -z "${BENCH_REDIS_URL:-}" ] && command -v redis-server >/dev/null 2>&1; then
    redis_port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no > "$out/redis.log" 2>&1 &
    redis_pid=$!
    trap '[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true' EXIT
    for _ in $(seq 50); do
        redis-cli -p "$redis_port" ping > /dev/null 2>&1 && break
        sleep 0.1
    done
    export BENCH_REDIS_URL="redis://127.0.0.1:$redis_port/0"
fi

echo "== C benchmark"
"$out/bench_decide" --data-dir benchmarks/data --results "$results" || failed+=("C benchmark (exit status $?)")
if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; redis_pid=""; fi

echo
echo "== C threads: one client, 1/2/4/8 deciding threads, datafile replaced every 100 ms"
"$cc" -O2 -std=gnu11 -Wall -Wextra -Iinclude benchmarks/c/bench_threads.c -o "$out/bench_threads" \
    -L"$linkdir" -lexperiment -Wl,-rpath,"$linkdir" -lpthread
"$out/bench_threads" benchmarks/data/bench_ab_rollout.json || failed+=("C threads benchmark (exit status $?)")

echo
echo "== C datafile load: ~10 KB, 1 MB, 10 MB datafiles (generated), against json-c's parse of the same bytes"
"$python" benchmarks/data/make_bench_datafiles.py --load-sizes "$out" > /dev/null
"$cc" -O2 -std=gnu11 -Wall -Wextra -Iinclude $(pkg-config --cflags json-c) benchmarks/c/bench_load.c \
    -o "$out/bench_load" -L"$linkdir" -lexperiment -Wl,-rpath,"$linkdir" $(pkg-config --libs json-c)
"$out/bench_load" "$out/load_10k.json" "$out/load_1m.json" "$out/load_10m.json" \
    || failed+=("C datafile load benchmark (exit status $?)")
echo "== C events: exp_track with the durable queue, sustained delivery to a local HTTP server"
"$cc" -O2 -std=gnu11 -Wall -Wextra -Iinclude -Itests/support benchmarks/c/bench_events.c -o "$out/bench_events" \
    -L"$linkdir" -lexperiment -Wl,-rpath,"$linkdir" -lpthread
"$out/bench_events" --data-dir benchmarks/data --results "$results" || failed+=("C events benchmark (exit status $?)")

echo
echo "== Python benchmark"
py_args=(--results "$results")
if [ "$quick" = 1 ]; then py_args+=(--users 300 --all-users 30 --repeats 3); fi
if ! EXPERIMENT_LIBRARY="$libdir/libexperiment.so" PYTHONPATH="$repo/bindings/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$python" benchmarks/python/bench_decide.py "${py_args[@]}"; then
    failed+=("Python benchmark")
fi

# Instruction counts: exactly N calls inside bench_measured_calls(), nothing else collected.
declare -A instructions=()
if [ "$callgrind" = 1 ]; then
    if command -v valgrind >/dev/null 2>&1; then
        echo
        echo "== callgrind"
        for spec in a:100000 a-context:100000 b:2000; do
            scenario=${spec%%:*}
            calls=${spec##*:}
            file=$out/callgrind.$scenario.out
            if ! valgrind --tool=callgrind --callgrind-out-file="$file" --toggle-collect=bench_measured_calls \
                "$out/bench_decide" --calls "$calls" --scenario "$scenario" --data-dir benchmarks/data \
                2> "$out/callgrind.$scenario.log"; then
                failed+=("callgrind scenario $scenario (see $out/callgrind.$scenario.log)")
                continue
            fi
            total=$(awk '/^(summary|totals):/ {print $2; exit}' "$file")
            instructions[$scenario]=$(awk -v t="$total" -v n="$calls" 'BEGIN {printf "%.0f", t / n}')
            echo "scenario $scenario: $total instructions / $calls calls = ${instructions[$scenario]} per call"
            printf 'cg\t%s\t%s\n' "$scenario" "${instructions[$scenario]}" >> "$results"
        done
    else
        echo "run.sh: --callgrind: valgrind not found, skipping instruction counts" >&2
    fi
fi

# ---------------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------------
cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
lib_version=$("$python" -c 'import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); l.exp_version.restype = ctypes.c_char_p; print(l.exp_version().decode())' "$libdir/libexperiment.so" 2>/dev/null || echo "?")
sdk_version=$("$python" -c 'from optimizely.version import __version__; print(__version__)' 2>/dev/null || echo "?")

echo
echo "=================================================================================================="
echo "libexperiment $lib_version benchmarks — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(hostname), $(nproc) CPUs, ${cpu:-unknown CPU}, $(uname -sr)"
echo "tools:   $("$cc" --version | head -1); $("$python" --version 2>&1); optimizely-sdk $sdk_version"
echo "--------------------------------------------------------------------------------------------------"
{
    printf 'C scenario\tmedian ns\tp99 ns\tdecisions/s\tallocs/call\tbytes/call\tinstr/call\n'
    awk -F'\t' -v a="${instructions[a]:-}" -v b="${instructions[b]:-}" '
        $1 == "c" {
            ir = ($2 == "a") ? a : ($2 == "b") ? b : ""
            printf "%s (%s)\t%s\t%s\t%.2f M\t%s\t%s\t%s\n", $2, $3, $4, $5, $6 / 1e6, $7, $8, (ir == "" ? "-" : ir)
        }' "$results"
} | column -t -s $'\t'
echo "--------------------------------------------------------------------------------------------------"
{
    printf 'Events (durable queue)\tvalue\n'
    awk -F'\t' '$1 == "ev" { printf "%s\t%s %s\n", $2, $3, $4 }' "$results"
} | column -t -s $'\t'
echo "--------------------------------------------------------------------------------------------------"
{
    printf 'Python\tµs/call\tspeedup vs optimizely (new context)\t(reused context)\n'
    awk -F'\t' '$1 == "py" { printf "%s (%s)\t%s\t%s\t%s\n", $2, $3, $4, ($5 == "" ? "-" : $5), ($6 == "" ? "-" : $6) }' "$results"
} | column -t -s $'\t'
echo "=================================================================================================="
if [ "${#failed[@]}" -gt 0 ]; then
    printf 'FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
