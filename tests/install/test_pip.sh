#!/usr/bin/env bash
# pip install ./bindings/python into a fresh virtual environment, then use the package from elsewhere with no
# EXPERIMENT_LIBRARY and no LD_LIBRARY_PATH: it must load the libexperiment.so shipped inside it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${PYTHON:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libexperiment-pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$python" -m venv "$tmp/venv"
# No build isolation: the venv's own setuptools (with wheel, from PyPI) builds it.
"$tmp/venv/bin/python" -m pip install -q wheel
# pip builds a local directory in place; build a copy so the checkout stays clean, shipping the library
# this repository built (the copy has no repository beside it to build one).
# (-L: experiment/demo.json is a link to examples/datafiles/demo.json; the package ships the file)
cp -rL "$repo/bindings/python" "$tmp/package"
rm -rf "$tmp/package/tests" "$tmp/package/experiment/"*.so "$tmp/package/experiment/__pycache__"
EXPERIMENT_LIBRARY="$repo/.build/release/libexperiment.so" EXPERIMENT_INCLUDE="$repo/include" \
    "$tmp/venv/bin/python" -m pip install -q --no-build-isolation "$tmp/package"

cd "$tmp"
env -u EXPERIMENT_LIBRARY -u LD_LIBRARY_PATH "$tmp/venv/bin/python" - "$repo/examples/datafiles/demo.json" <<'PY'
import os, sys
import experiment
from experiment import _native
loaded = _native.lib._name
assert "site-packages" in loaded and loaded.endswith("libexperiment.so"), loaded
# The demo datafile is package data: found from any directory, equal to the repository's.
assert experiment.demo_datafile() == open(sys.argv[1], encoding="utf-8").read()
with experiment.Client(datafile=experiment.demo_datafile()) as client:
    decision = client.decide("user-1", "free_shipping", {"country": "NL"})
    assert decision.flag_key == "free_shipping", decision
from experiment import client as client_module
assert client_module._speedups is not None, "the C accelerator was not built by pip install"
print("installed package loads %s (version %s)" % (loaded, experiment.library_version()))
PY
# The Python example, run by the installed package from outside the checkout.
env -u EXPERIMENT_LIBRARY -u LD_LIBRARY_PATH "$tmp/venv/bin/python" "$repo/examples/python/quickstart.py" \
    "$repo/examples/datafiles/demo.json" > "$tmp/quickstart.out"
grep -q "events dispatched" "$tmp/quickstart.out"
echo "pip install test: OK"
