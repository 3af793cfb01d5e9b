#!/usr/bin/env bash
# test_install.sh — installs libexperiment into a fresh temporary prefix and proves that programs build
# against the installed copy through pkg-config and run against it (not against .build/).
#
#   bash tests/install/test_install.sh          (from anywhere; it works from the repository root)
#
# Steps: `make install PREFIX=$tmp`; check the installed files, SONAME links, that the library is stripped (its
# debug info in lib/.debug, linked by .gnu_debuglink) and has no RUNPATH, and that experiment.pc is
# ${prefix}-relative; build examples/c/quickstart.c and examples/cpp/quickstart.cpp with the flags pkg-config
# gives for $tmp (the installed experiment.hpp, no repository include path); check that the installed headers
# were the ones compiled and that ldd resolves libexperiment.so.<major> from $tmp/lib; build the C++ quickstart
# again with CMake (find_package(experiment CONFIG), target experiment::experiment, experiment_DATA_DIR); run
# all three on the installed demo datafile (share/libexperiment/demo.json, named by pkg-config's pkgdatadir, as
# the README's quick starts find it); run the installed experiment-cli. Then stage a second install with DESTDIR (same files, a
# relocatable CMake package and pkg-config file) and `make uninstall` both: nothing of libexperiment is left.
# The temporary prefix is removed on exit. Last line on success: "install test: OK".
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
LIB_BUILT=$repo/.build/release/libexperiment.so
prefix=$tmp
libdir=$prefix/lib

# ------------------------------------------------------------------------------------------------------
step "make install PREFIX=$prefix"
"$MAKE" --no-print-directory install PREFIX="$prefix" || fail "make install failed"

# ------------------------------------------------------------------------------------------------------
step "checking installed files"
expected_files=(
    "lib/libexperiment.so.$version" "lib/.debug/libexperiment.so.$version.debug"
    include/experiment.h include/experiment.hpp lib/pkgconfig/experiment.pc
    lib/cmake/experiment/experimentConfig.cmake lib/cmake/experiment/experimentConfigVersion.cmake
    bin/experiment-cli
    share/doc/libexperiment/LICENSE share/doc/libexperiment/NOTICE share/doc/libexperiment/CHANGELOG.md
    share/doc/libexperiment/README.md share/doc/libexperiment/api-c.md share/doc/libexperiment/api-python.md
    share/libexperiment/demo.json
)
for f in "${expected_files[@]}"; do
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
grep -q "Library soname: \[libexperiment.so.$major\]" <<<"$(readelf -d "$libdir/libexperiment.so.$version")" \
    || fail "installed library's SONAME is not libexperiment.so.$major"
cmp -s examples/datafiles/demo.json "$prefix/share/libexperiment/demo.json" || fail "installed demo.json differs from examples/datafiles/demo.json"
cmp -s include/experiment.h "$prefix/include/experiment.h" || fail "installed header differs from include/experiment.h"
cmp -s bindings/cpp/experiment.hpp "$prefix/include/experiment.hpp" || fail "installed experiment.hpp differs from bindings/cpp/experiment.hpp"
# Stripped, debug info apart (gdb finds it through the debuglink), no run path, only the libraries it needs.
installed_lib=$libdir/libexperiment.so.$version
# (readelf's output is read whole before grep -q: with pipefail, grep leaving early would fail the pipe)
sections=$(readelf -S "$installed_lib")
dynamic=$(readelf -d "$installed_lib")
debug_sections=$(readelf -S "$libdir/.debug/libexperiment.so.$version.debug")
grep -q '\.debug_info' <<<"$sections" && fail "the installed library is not stripped (.debug_info present)"
grep -q '\.symtab' <<<"$sections" && fail "the installed library is not stripped (.symtab present)"
grep -q '\.gnu_debuglink' <<<"$sections" || fail "the installed library has no .gnu_debuglink"
grep -q '\.debug_info' <<<"$debug_sections" && grep -q '\.symtab' <<<"$debug_sections" \
    || fail "lib/.debug/libexperiment.so.$version.debug holds no debug information"
grep -q 'RPATH\|RUNPATH' <<<"$dynamic" && fail "the installed library has a run path: $(grep -i path <<<"$dynamic")"
[[ $(nm -D --defined-only "$installed_lib" | grep -c ' exp_') -eq $(nm -D --defined-only "$LIB_BUILT" | grep -c ' exp_') ]] \
    || fail "stripping changed the exported exp_* symbols"
echo "    library: $(( $(stat -c %s "$installed_lib") / 1024 )) KiB stripped (build: $(( $(stat -c %s "$LIB_BUILT") / 1024 )) KiB)"
# experiment.pc relative to ${prefix}: moving the tree means editing one line.
grep -qx "prefix=$prefix" "$libdir/pkgconfig/experiment.pc" || fail "experiment.pc: prefix is not $prefix"
grep -qx 'libdir=${prefix}/lib' "$libdir/pkgconfig/experiment.pc" || fail 'experiment.pc: libdir is not ${prefix}/lib'
grep -qx 'includedir=${prefix}/include' "$libdir/pkgconfig/experiment.pc" || fail 'experiment.pc: includedir is not ${prefix}/include'
grep -q "$prefix/" "$libdir/pkgconfig/experiment.pc" && fail "experiment.pc repeats the prefix outside prefix="
grep -qx 'License: Apache-2.0' "$libdir/pkgconfig/experiment.pc" || fail "experiment.pc has no License field"
grep -qx 'pkgdatadir=${prefix}/share/libexperiment' "$libdir/pkgconfig/experiment.pc" || fail 'experiment.pc: pkgdatadir is not ${prefix}/share/libexperiment'
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
# The README's quick starts find the demo datafile through pkg-config; the programs below run on that copy.
[[ $(pkg-config --variable=pkgdatadir experiment) == "$prefix/share/libexperiment" ]] \
    || fail "pkg-config pkgdatadir is not $prefix/share/libexperiment"
datafile=$(pkg-config --variable=pkgdatadir experiment)/demo.json
cflags=$(pkg-config --cflags experiment)
libs=$(pkg-config --libs experiment)
echo "    cflags: $cflags"
echo "    libs:   $libs"

# The binaries must find the library through their RUNPATH only.
unset LD_LIBRARY_PATH LD_PRELOAD

# Checks that `binary` needs libexperiment.so.<major>, that ldd resolves it inside $libdir, and that it ran.
check_binary() {
    local binary=$1 resolved
    grep -q "NEEDED.*\[libexperiment.so.$major\]" <<<"$(readelf -d "$binary")" \
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
step "building examples/cpp/quickstart.cpp against the installed copy (experiment.hpp from the prefix)"
# shellcheck disable=SC2086
check_header "$CXX" examples/cpp/quickstart.cpp -std=c++17 $cflags
# shellcheck disable=SC2086
grep -qx "$prefix/include/experiment.hpp" <<<"$("$CXX" -std=c++17 $cflags -M examples/cpp/quickstart.cpp | tr -s ' \\\n' '\n')" \
    || fail "examples/cpp/quickstart.cpp did not compile against $prefix/include/experiment.hpp"
# shellcheck disable=SC2086
"$CXX" -std=c++17 -Wall -Wextra -Werror -pedantic -o "$build/quickstart-cpp" examples/cpp/quickstart.cpp \
    $(pkg-config --cflags --libs experiment) -Wl,-rpath,"$libdir" || fail "examples/cpp/quickstart.cpp did not build"
check_binary "$build/quickstart-cpp"
"$build/quickstart-cpp" "$datafile" > "$build/quickstart-cpp.out" || { cat "$build/quickstart-cpp.out"; fail "C++ quickstart failed"; }
grep -q "Done\." "$build/quickstart-cpp.out" || fail "C++ quickstart did not finish"
echo "    ran: $(tail -n 1 "$build/quickstart-cpp.out")"

# ------------------------------------------------------------------------------------------------------
step "building examples/cpp/quickstart.cpp with CMake: find_package(experiment CONFIG), experiment::experiment"
command -v cmake >/dev/null || fail "cmake is not installed (make test-deps installs it)"
mkdir -p "$build/cmake-project"
cat > "$build/cmake-project/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(quickstart_cmake CXX)
find_package(experiment $version CONFIG REQUIRED)
add_executable(quickstart-cmake "$repo/examples/cpp/quickstart.cpp")
target_compile_features(quickstart-cmake PRIVATE cxx_std_17)
target_compile_options(quickstart-cmake PRIVATE -Wall -Wextra -Werror -pedantic)
target_link_libraries(quickstart-cmake PRIVATE experiment::experiment)
if(NOT EXISTS "\${experiment_DATA_DIR}/demo.json")
    message(FATAL_ERROR "experiment_DATA_DIR (\${experiment_DATA_DIR}) has no demo.json")
endif()
EOF
cmake -S "$build/cmake-project" -B "$build/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    > "$build/cmake.log" 2>&1 || { cat "$build/cmake.log"; fail "cmake could not configure against $prefix"; }
cmake --build "$build/cmake-build" > "$build/cmake-build.log" 2>&1 || { cat "$build/cmake-build.log"; fail "cmake build failed"; }
check_binary "$build/cmake-build/quickstart-cmake"
"$build/cmake-build/quickstart-cmake" "$datafile" > "$build/quickstart-cmake.out" \
    || { cat "$build/quickstart-cmake.out"; fail "the CMake-built quickstart failed"; }
grep -q "Done\." "$build/quickstart-cmake.out" || fail "the CMake-built quickstart did not finish"
echo "    ran: $(tail -n 1 "$build/quickstart-cmake.out")"
# A version the package does not satisfy is refused.
sed -i "s/find_package(experiment $version /find_package(experiment $((major + 1)).0 /" "$build/cmake-project/CMakeLists.txt"
if cmake -S "$build/cmake-project" -B "$build/cmake-build-wrong" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null 2>&1; then
    fail "find_package(experiment $((major + 1)).0) accepted version $version"
fi

# ------------------------------------------------------------------------------------------------------
step "running the installed experiment-cli"
"$prefix/bin/experiment-cli" validate "$datafile" > "$build/cli.out" 2>&1 || { cat "$build/cli.out"; fail "experiment-cli validate failed"; }
grep -q '\.symtab' <<<"$(readelf -S "$prefix/bin/experiment-cli")" && fail "the installed experiment-cli is not stripped"
echo "    $(head -n 1 "$build/cli.out")"

# ------------------------------------------------------------------------------------------------------
stage=$tmp.stage
step "make install DESTDIR=$stage PREFIX=/usr/local (staged), then make uninstall of both"
trap 'cleanup; rm -rf "$stage"' EXIT
"$MAKE" --no-print-directory install DESTDIR="$stage" PREFIX=/usr/local > "$build/stage.log" 2>&1 \
    || { cat "$build/stage.log"; fail "make install DESTDIR=... failed"; }
diff <(cd "$prefix" && find . \( -type f -o -type l \) | sort) <(cd "$stage/usr/local" && find . \( -type f -o -type l \) | sort) \
    || fail "the staged install has other files than the install into $prefix"
grep -qx "prefix=/usr/local" "$stage/usr/local/lib/pkgconfig/experiment.pc" || fail "staged experiment.pc: prefix is not /usr/local"
grep -rq "$stage" "$stage/usr/local/lib/pkgconfig" "$stage/usr/local/lib/cmake" && fail "the staging directory leaked into the installed files"
# The CMake package finds its files relative to itself: the staged copy works where it lies.
cmake -S "$build/cmake-project" -B "$build/cmake-build-staged" -DCMAKE_PREFIX_PATH="$stage/usr/local" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF > /dev/null 2>&1 && fail "unexpected: the wrong-version project configured"
sed -i "s/find_package(experiment $((major + 1)).0 /find_package(experiment $version /" "$build/cmake-project/CMakeLists.txt"
cmake -S "$build/cmake-project" -B "$build/cmake-build-staged" -DCMAKE_PREFIX_PATH="$stage/usr/local" > "$build/cmake-staged.log" 2>&1 \
    || { cat "$build/cmake-staged.log"; fail "cmake could not use the staged (moved) package"; }
cmake --build "$build/cmake-build-staged" > "$build/cmake-staged-build.log" 2>&1 \
    || { cat "$build/cmake-staged-build.log"; fail "the staged CMake package does not build"; }
"$build/cmake-build-staged/quickstart-cmake" "$datafile" | grep -q "Done\." || fail "the program built from the staged package failed"
# pkg-config can relocate the staged .pc too (--define-prefix), thanks to ${prefix}.
[[ $(PKG_CONFIG_PATH=$stage/usr/local/lib/pkgconfig pkg-config --define-prefix --variable=includedir experiment) == "$stage/usr/local/include" ]] \
    || fail "pkg-config --define-prefix does not relocate the staged experiment.pc"
"$MAKE" --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr/local > /dev/null || fail "make uninstall DESTDIR=... failed"
left=$(find "$stage" \( -type f -o -type l \))
[[ -z $left ]] || fail "make uninstall left files: $left"
"$MAKE" --no-print-directory uninstall PREFIX="$prefix" > /dev/null || fail "make uninstall failed"
left=$(find "$prefix" \( -type f -o -type l \))
[[ -z $left ]] || fail "make uninstall left files in $prefix: $left"
echo "    both installs removed; left directories: $(find "$prefix" -mindepth 1 -type d | wc -l) shared ones (lib, include, bin, ...)"

echo "install test: OK"
