#!/usr/bin/env bash
# Builds examples/c/segments.c with the strict flags and runs it against a local ODP stand-in
# (tests/odp/odp_server.py on a free 127.0.0.1 port), checking its output and the events ODP received.
#   tests/odp/test_segments_c.sh [path/to/libexperiment-dir]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
libdir=${1:-.build/release}
cc=${CC:-cc}
python=${PYTHON:-python3}
work=$(mktemp -d)
server_pid=""
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

"$cc" -std=c11 -Wall -Wextra -Werror -pedantic -O2 -Iinclude examples/c/segments.c -o "$work/segments" \
    -L"$libdir" -lexperiment -Wl,-rpath,"$PWD/$libdir"

# The stand-in appends every request it receives to received.jsonl (before answering it).
"$python" tests/odp/odp_server.py --url-file "$work/url" --record "$work/received.jsonl" \
    --qualify user-2=seg-b > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url=$(cat "$work/url")

"$work/segments" examples/datafiles/segments.json "$url" test-api-key "$work/state" | tee "$work/out.txt"

expect() { grep -qxF "$1" "$work/out.txt" || { echo "FAIL: expected the line: $1"; exit 1; }; }
expect "decide user-1 segment_flag -> off"
expect "user-1 qualified for seg-a: yes"
expect "decide user-1 segment_flag -> on"
expect "fetch invalid-user: EXP_ERR_INVALID_USER_ID"
expect "async segments user-2: [\"seg-b\"]"
expect "decide user-2 segment_flag -> on"
expect "decide user-3 segment_flag -> on"
grep -qE '^vuid: vuid_[0-9a-f]{27} \(32 characters\)$' "$work/out.txt" || { echo "FAIL: no vuid line"; exit 1; }
grep -qF '\"action\": \"purchased\"' "$work/received.jsonl" || { echo "FAIL: ODP did not receive the purchased event"; exit 1; }
grep -qF '\"action\": \"identified\"' "$work/received.jsonl" || { echo "FAIL: ODP did not receive an identify event"; exit 1; }
echo "segments C example: built with -Werror -pedantic, ran against a local ODP stand-in: OK"
