#!/usr/bin/env bash
# test_install.sh — installs libexperiment into a fresh temporary prefix and proves that programs build
# against the installed copy through pkg-config and run against it (not against .build/).
#
#   bash tests/install/test_install.sh          (from anywhere; it works from the repository root)
#
# Steps: `make install PREFIX=$tmp`; check the installed files and SONAME links; build examples/c/quickstart.c
# (and examples/cpp/quickstart.cpp with -I bindings/cpp) with the flags pkg-config gives for $tmp; check that
# the installed header was the one compiled and that ldd resolves libexperiment.so.<major> from $tmp/lib; run
# both on the demo datafile. The temporary prefix is removed on exit. Last line on success: "install test: OK".
#
# Environment: MAKE, CC, CXX (defaults make, cc, c++); KEEP_TMP=1 keeps the prefix for inspection.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

MAKE=${MAKE:-make}
CC=${CC:-cc}
CXX=${CXX:-c++}
datafile=examples/datafiles/demo.json

fail() { echo "install test: FAILED: $*" >&2; exit 1; }
step() { echo "==> $*"; }

command -v pkg-config >/dev/null || fail "pkg-config is not installed"

# The version and SONAME major the build should install, from the header (the Makefile reads it there too).
version=$(sed -n 's/^#define EXP_VERSION_STRING "\(.*\)"/\1/p' include/experiment.h)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "cannot read EXP_VERSION_STRING from include/experiment.h"
major=${version%%.*}

# $tmp is the (fresh, empty) install prefix; the test programs are built in $tmp.build next to it.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libexperiment-install.XXXXXX")
build=$tmp.build
cleanup() {
    if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "kept $tmp and $build"; else rm -rf "$tmp" "$build"; fi
}
trap cleanup EXIT
mkdir "$build"
prefix=$tmp
libdir=$prefix/lib

# ------------------------------------------------------------------------------------------------------
step "make install PREFIX=$prefix"
"$MAKE" --no-print-directory install PREFIX="$prefix" || fail "make install failed"

# ------------------------------------------------------------------------------------------------------
step "checking installed files"
for f in "lib/libexperiment.so.$version" include/experiment.h lib/pkgconfig/experiment.pc; do
    [[ -f $prefix/$f && ! -L $prefix/$f ]] || fail "missing regular file $f"
done
[[ -L $libdir/libexperiment.so.$major ]] || fail "lib/libexperiment.so.$major is not a symlink"
[[ -L $libdir/libexperiment.so ]] || fail "lib/libexperiment.so is not a symlink"
# Relative links, so the prefix can be moved (DESTDIR staging) and still resolve.
[[ $(readlink "$libdir/libexperiment.so.$major") == "libexperiment.so.$version" ]] \
    || fail "libexperiment.so.$major -> $(readlink "$libdir/libexperiment.so.$major"), expected libexperiment.so.$version"
[[ $(readlink "$libdir/libexperiment.so") == "libexperiment.so.$major" ]] \
    || fail "libexperiment.so -> $(readlink "$libdir/libexperiment.so"), expected libexperiment.so.$major"
[[ $(readlink -f "$libdir/libexperiment.so") == "$(readlink -f "$libdir/libexperiment.so.$version")" ]] \
    || fail "libexperiment.so does not resolve to libexperiment.so.$version"
[[ -x $libdir/libexperiment.so.$version ]] || fail "libexperiment.so.$version is not executable (mode 0755)"
readelf -d "$libdir/libexperiment.so.$version" | grep -q "Library soname: \[libexperiment.so.$major\]" \
    || fail "installed library's SONAME is not libexperiment.so.$major"
cmp -s include/experiment.h "$prefix/include/experiment.h" || fail "installed header differs from include/experiment.h"
for f in "lib/libexperiment.so" "lib/libexperiment.so.$major" "lib/libexperiment.so.$version" \
         include/experiment.h lib/pkgconfig/experiment.pc; do
    echo "    $f$( [[ -L $prefix/$f ]] && echo " -> $(readlink "$prefix/$f")" )"
done

# ------------------------------------------------------------------------------------------------------
step "checking pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pkg-config --exists experiment || fail "pkg-config does not find experiment in $PKG_CONFIG_PATH"
[[ $(pkg-config --modversion experiment) == "$version" ]] \
    || fail "pkg-config version $(pkg-config --modversion experiment), expected $version"
[[ $(pkg-config --variable=libdir experiment) == "$libdir" ]] || fail "pkg-config libdir is not $libdir"
[[ $(pkg-config --variable=includedir experiment) == "$prefix/include" ]] || fail "pkg-config includedir is not $prefix/include"
cflags=$(pkg-config --cflags experiment)
libs=$(pkg-config --libs experiment)
echo "    cflags: $cflags"
echo "    libs:   $libs"

# The binaries must find the library through their RUNPATH only.
unset LD_LIBRARY_PATH LD_PRELOAD

# Checks that `binary` needs libexperiment.so.<major>, that ldd resolves it inside $libdir, and that it ran.
check_binary() {
    local binary=$1 resolved
    readelf -d "$binary" | grep -q "NEEDED.*\[libexperiment.so.$major\]" \
        || fail "$(basename "$binary") does not record libexperiment.so.$major as NEEDED"
    resolved=$(ldd "$binary" | awk -v so="libexperiment.so.$major" '$1 == so { print $3 }')
    [[ $resolved == "$libdir/libexperiment.so.$major" ]] \
        || fail "$(basename "$binary"): ldd resolves libexperiment.so.$major to '${resolved:-nothing}', expected $libdir/libexperiment.so.$major"
    echo "    ldd: libexperiment.so.$major => $resolved"
}

# Checks that compiling `source` with `flags...` reads the installed header, not the repository's copy.
check_header() {
    local compiler=$1 source=$2; shift 2
    local deps
    deps=$("$compiler" "$@" -M "$source" | tr -s ' \\\n' '\n')
    grep -qx "$prefix/include/experiment.h" <<<"$deps" || fail "$source did not compile against $prefix/include/experiment.h"
    if grep -q "^include/experiment.h$\|^$repo/include/experiment.h$" <<<"$deps"; then
        fail "$source compiled against the repository's include/experiment.h"
    fi
}

# ------------------------------------------------------------------------------------------------------
step "building examples/c/quickstart.c against the installed copy"
# shellcheck disable=SC2086  # pkg-config output is a list of flags
check_header "$CC" examples/c/quickstart.c -std=c11 $cflags
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Werror -o "$build/quickstart-c" examples/c/quickstart.c \
    $(pkg-config --cflags --libs experiment) -Wl,-rpath,"$libdir" || fail "examples/c/quickstart.c did not build"
check_binary "$build/quickstart-c"
"$build/quickstart-c" "$datafile" > "$build/quickstart-c.out" || { cat "$build/quickstart-c.out"; fail "C quickstart failed"; }
grep -q "Done\." "$build/quickstart-c.out" || fail "C quickstart did not finish"
echo "    ran: $(tail -n 1 "$build/quickstart-c.out")"

# ------------------------------------------------------------------------------------------------------
step "building examples/cpp/quickstart.cpp (bindings/cpp) against the installed copy"
# shellcheck disable=SC2086
check_header "$CXX" examples/cpp/quickstart.cpp -std=c++17 -I bindings/cpp $cflags
# shellcheck disable=SC2086
"$CXX" -std=c++17 -Wall -Wextra -Werror -pedantic -I bindings/cpp -o "$build/quickstart-cpp" examples/cpp/quickstart.cpp \
    $(pkg-config --cflags --libs experiment) -Wl,-rpath,"$libdir" || fail "examples/cpp/quickstart.cpp did not build"
check_binary "$build/quickstart-cpp"
"$build/quickstart-cpp" "$datafile" > "$build/quickstart-cpp.out" || { cat "$build/quickstart-cpp.out"; fail "C++ quickstart failed"; }
grep -q "Done\." "$build/quickstart-cpp.out" || fail "C++ quickstart did not finish"
echo "    ran: $(tail -n 1 "$build/quickstart-cpp.out")"

echo "install test: OK"
