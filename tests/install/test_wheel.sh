#!/usr/bin/env bash
# The wheel `make wheel` built, on its own: installed into a fresh virtual environment and run with the
# system's copies of libcurl, SQLite, hiredis and json-c (and every library they pull in) out of reach.
#
#   tests/install/test_wheel.sh [DIST_DIR]      (default .build/dist; PYTHON as for make wheel)
#
# 1. the wheel's tag is manylinux_2_N; every ELF file of the installed package names its bundled libraries by
#    RPATH $ORIGIN/../libexperiment.libs, and ldd resolves each of its dependencies inside the wheel except
#    the libraries every manylinux system has (glibc, libstdc++, libgcc_s, libz, ...);
# 2. a private mount namespace (unshare -m) binds /dev/null over every system file the wheel bundles a copy
#    of (libcurl, libsqlite3, libhiredis, libssl, libnghttp2, ...; json-c too): loading one of those now fails
#    with "file too short". There the installed package runs decisions with sticky bucketing in SQLite and in
#    a real redis-server (when one is installed), impressions and a conversion posted by the built-in event
#    pipeline (libcurl) to an HTTP server on 127.0.0.1, and checks in /proc/self/maps that libcurl, SQLite and
#    hiredis were mapped from the wheel's libexperiment.libs/;
# 3. EXPERIMENT_LIBRARY still overrides the bundled library.
# Without the privilege to unshare a mount namespace, step 2 runs unmasked (the maps check still proves where
# each library came from) and says so.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dist=${1:-$repo/.build/dist}
python=${PYTHON:-python3}
fail() { echo "wheel test FAILED: $*"; exit 1; }

wheels=("$dist"/libexperiment-*.whl)
[ ${#wheels[@]} = 1 ] && [ -f "${wheels[0]}" ] || fail "expected one wheel in $dist (make wheel)"
wheel=${wheels[0]}
[[ $(basename "$wheel") =~ -manylinux_2_[0-9]+_x86_64\.whl$ ]] || fail "$(basename "$wheel") has no manylinux tag"

work="$repo/.build/wheel-test-$(basename "$dist")"   # one per dist: make -j may run two at once
rm -rf "$work"
mkdir -p "$work/state"
# Run by hand too, the test keeps out of the user's state directory (make sets its own XDG_STATE_HOME).
export XDG_STATE_HOME=${XDG_STATE_HOME:-$work/xdg-state}
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$wheel"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
package="$site/experiment"
bundled=$(readlink -f "$site/libexperiment.libs")
[ -d "$bundled" ] || fail "no libexperiment.libs/ in the installed wheel"

# 1. Run paths and what ldd resolves.
allowed_system='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libmvec\.so\.1|libdl\.so\.2|librt\.so\.1|libpthread\.so\.0|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1|libnsl\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libatomic\.so\.1|libz\.so\.1|libexpat\.so\.1)$'
check_links() {   # an installed ELF file: every dependency from the wheel or from the manylinux base
    local file=$1 dynamic deps name path
    dynamic=$(readelf -d "$file")
    if [ "$(basename "$file")" = libexperiment.so ]; then
        grep -q 'R.*PATH.*\[\$ORIGIN/\.\./libexperiment\.libs\]' <<< "$dynamic" \
            || fail "$file: no run path \$ORIGIN/../libexperiment.libs: $(grep -i path <<< "$dynamic")"
    fi
    deps=$(ldd "$file") || fail "ldd $file"
    while read -r name _ path _; do
        [ -n "$name" ] || continue
        [ "${path:0:1}" = / ] && path=$(readlink -f "$path")
        case "$path" in
            "$bundled"/*) ;;
            "not") fail "$file: $name not found";;
            *) [[ $(basename "$name") =~ $allowed_system ]] || fail "$file: $name resolves outside the wheel ($path)";;
        esac
    done <<< "$deps"
}
elf_files=("$package"/libexperiment.so "$package"/_speedups*.so "$bundled"/*.so*)
for file in "${elf_files[@]}"; do check_links "$file"; done
echo "wheel: $(basename "$wheel"), $(ls "$bundled" | wc -l) libraries bundled, run paths and ldd checked on ${#elf_files[@]} ELF files"

# 2. The system files the wheel has its own copies of (auditwheel names a copy <name>-<8 hex>.<rest>), json-c
# among them (the library's JSON reader); minus what the interpreter itself maps before it imports
# the package (libffi for ctypes): hiding that would test Python, not the wheel.
interpreter_maps=$("$work/venv/bin/python" -c '
import ctypes, http.server, json, threading
print(open("/proc/self/maps").read())')
system_libdir=/usr/lib/x86_64-linux-gnu
masked=()
for copy in "$bundled"/*; do
    original=$(basename "$copy" | sed -E 's/^([^.]*)-[0-9a-f]{8}\./\1./')
    for candidate in "$system_libdir/$original" "$system_libdir"/libjson-c.so.*; do
        [ -e "$candidate" ] || continue
        real=$(readlink -f "$candidate")
        grep -qF "$real" <<< "$interpreter_maps" && continue
        [[ " ${masked[*]-} " == *" $real "* ]] || masked+=("$real")
    done
done
printf '%s\n' "${masked[@]}" > "$work/masked.txt"

cat > "$work/run.sh" <<'EOF'
set -euo pipefail
for file in $(cat "$WORK/masked.txt"); do mount --bind /dev/null "$file"; done
if [ -s "$WORK/masked.txt" ]; then
    # Proof the mask holds: the system's libcurl no longer loads.
    if "$WORK/venv/bin/python" -c 'import ctypes; ctypes.CDLL("libcurl.so.4")' 2> /dev/null; then
        echo "the masked system libcurl still loads"; exit 1
    fi
fi
ldd "$PACKAGE/libexperiment.so" | grep -v 'libexperiment.libs\|linux-vdso' > "$WORK/ldd-system.txt" || true
exec "$WORK/venv/bin/python" "$REPO/tests/install/wheel_smoke.py" "$REPO/examples/datafiles/demo.json" "$WORK/state"
EOF
# A real redis-server for the hiredis copy, started out here: the mask below hides its libraries too.
redis_pid=""
trap '[ -z "$redis_pid" ] || kill "$redis_pid" 2> /dev/null || true' EXIT
if command -v redis-server > /dev/null; then
    port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no > "$work/redis.log" &
    redis_pid=$!
    for _ in $(seq 100); do
        (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
        sleep 0.05
    done
    export WHEEL_TEST_REDIS_PORT=$port
fi

cd "$work"
export WORK="$work" PACKAGE="$package" REPO="$repo"
if unshare -m --propagation private true 2> /dev/null; then
    env -u EXPERIMENT_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH unshare -m --propagation private bash "$work/run.sh"
    echo "ran with ${#masked[@]} system libraries masked by /dev/null in a private mount namespace:" \
        "$(for f in "${masked[@]}"; do basename "$f"; done | tr '\n' ' ')"
else
    printf '' > "$work/masked.txt"
    env -u EXPERIMENT_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH bash "$work/run.sh"
    echo "NOTE: no mount namespace here (needs CAP_SYS_ADMIN): ran unmasked, checked by the mapped paths only"
fi

# 3. The override.
loaded=$(EXPERIMENT_LIBRARY="$repo/.build/release/libexperiment.so" "$work/venv/bin/python" -c '
from experiment import _native; print(_native.lib._name)')
[ "$loaded" = "$repo/.build/release/libexperiment.so" ] || fail "EXPERIMENT_LIBRARY did not override: $loaded"
echo "wheel test: OK"
