"""Library loading, version, the ctypes declarations against the real header and the struct layouts."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

import experiment
from experiment import _native
from conftest import BINDING_ROOT, HEADER_PATH


def _run_python(code: str, env_updates: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_updates)
    for key, value in list(env.items()):
        if value is None:
            del env[key]
    env["PYTHONPATH"] = BINDING_ROOT
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_version():
    assert experiment.__version__ == "0.1.0"
    version = experiment.library_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    assert version.split(".")[0] == "0"
    with open(HEADER_PATH) as f:
        header = f.read()
    assert '#define EXP_VERSION_STRING "%s"' % version in header


def test_every_header_function_is_declared_and_exported():
    with open(HEADER_PATH) as f:
        header = f.read()
    declared = set(re.findall(r"^\s*(?:const\s+)?[a-z_]+\s*\*?\s*(exp_[a-z_0-9]+)\s*\(", header, re.M))
    declared -= {"exp_attr_string", "exp_attr_int", "exp_attr_double", "exp_attr_bool", "exp_attr_null"}
    assert declared == set(_native.FUNCTION_NAMES)
    assert _native.missing_symbols == [], "library lacks %s" % _native.missing_symbols
    for name in _native.FUNCTION_NAMES:
        fn = getattr(_native.lib, name)
        assert fn.argtypes is not None, name


def test_library_path_is_the_loaded_one():
    env = os.environ.get("EXPERIMENT_LIBRARY")
    if env:
        assert experiment.library_path == env
    assert os.path.exists(experiment.library_path) or "/" not in experiment.library_path


def test_env_var_pointing_nowhere_is_a_clear_import_error():
    result = _run_python(
        "import experiment", {"EXPERIMENT_LIBRARY": "/nonexistent/libexperiment.so"})
    assert result.returncode != 0
    assert "ImportError" in result.stderr or "LibraryNotFoundError" in result.stderr
    assert "EXPERIMENT_LIBRARY" in result.stderr and "/nonexistent/libexperiment.so" in result.stderr


def test_env_var_pointing_at_a_non_library_is_a_clear_import_error(tmp_path):
    bogus = tmp_path / "libexperiment.so"
    bogus.write_bytes(b"not an ELF file")
    result = _run_python("import experiment", {"EXPERIMENT_LIBRARY": str(bogus)})
    assert result.returncode != 0
    assert "cannot load libexperiment" in result.stderr


def test_package_directory_copy_is_found_when_no_env_var(tmp_path):
    # A copy of the package with the library inside it, and no EXPERIMENT_LIBRARY.
    package = tmp_path / "experiment"
    shutil.copytree(os.path.join(BINDING_ROOT, "experiment"), str(package),
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(experiment.library_path if os.path.exists(experiment.library_path) else
                _native.find_library(), str(package / "libexperiment.so"))
    env = dict(os.environ)
    env.pop("EXPERIMENT_LIBRARY", None)
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", "import experiment; print(experiment.library_path)"],
        env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(package / "libexperiment.so")


def test_not_found_anywhere_lists_what_was_tried(tmp_path):
    package = tmp_path / "experiment"
    shutil.copytree(os.path.join(BINDING_ROOT, "experiment"), str(package),
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    env = dict(os.environ)
    env.pop("EXPERIMENT_LIBRARY", None)
    env["PYTHONPATH"] = str(tmp_path)
    env["LD_LIBRARY_PATH"] = ""
    result = subprocess.run(
        [sys.executable, "-c", "import ctypes.util\nctypes.util.find_library = lambda name: None\n"
                               "import experiment"],
        env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "libexperiment.so not found" in result.stderr
    assert "EXPERIMENT_LIBRARY" in result.stderr


def test_status_names():
    for code, name in experiment.errors.STATUS_NAMES.items():
        assert _native.status_str(code) == name
    # an unknown code still gives a static, non-NULL string
    assert isinstance(_native.status_str(-12345), str)


C_LAYOUT_PROGRAM = r"""
#include <stdio.h>
#include <stddef.h>
#include "experiment.h"
#define F(T, f) printf(#T "." #f " %zu %zu\n", offsetof(T, f), sizeof(((T *)0)->f));
int main(void) {
    printf("exp_value %zu\n", sizeof(exp_value));
    printf("exp_attribute %zu\n", sizeof(exp_attribute));
    printf("exp_decision %zu\n", sizeof(exp_decision));
    printf("exp_event %zu\n", sizeof(exp_event));
    F(exp_value, type) F(exp_value, bool_value) F(exp_value, int_value) F(exp_value, double_value)
    F(exp_value, string_value)
    F(exp_attribute, key) F(exp_attribute, value)
    F(exp_decision, flag_key) F(exp_decision, variation_key) F(exp_decision, rule_key)
    F(exp_decision, variables_json) F(exp_decision, enabled) F(exp_decision, reserved) F(exp_decision, reasons)
    F(exp_decision, reason_count) F(exp_decision, internal)
    F(exp_event, url) F(exp_event, http_verb) F(exp_event, body) F(exp_event, body_length)
    printf("EXP_DECIDE %u %u %u %u %u %u %u %u\n", EXP_DECIDE_DISABLE_DECISION_EVENT, EXP_DECIDE_ENABLED_FLAGS_ONLY,
           EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE, EXP_DECIDE_INCLUDE_REASONS, EXP_DECIDE_EXCLUDE_VARIABLES,
           EXP_DECIDE_IGNORE_CMAB_CACHE, EXP_DECIDE_RESET_CMAB_CACHE, EXP_DECIDE_INVALIDATE_USER_CMAB_CACHE);
    printf("EXP_MAX %u %u %u %u %u %u\n", EXP_MAX_DATAFILE_BYTES, EXP_MAX_JSON_DEPTH, EXP_MAX_INPUT_JSON_BYTES,
           EXP_MAX_KEY_BYTES, EXP_MAX_STRING_BYTES, EXP_MAX_ATTRIBUTES);
    printf("EXP_VALUE %d %d %d %d %d\n", EXP_VALUE_NULL, EXP_VALUE_BOOL, EXP_VALUE_INT, EXP_VALUE_DOUBLE,
           EXP_VALUE_STRING);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_struct_layouts_and_constants_match_the_header(tmp_path):
    src = tmp_path / "layout.c"
    src.write_text(C_LAYOUT_PROGRAM)
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-std=c99", "-I", os.path.dirname(HEADER_PATH), "-o", str(exe), str(src)],
                   check=True, capture_output=True, timeout=120)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    types = {"exp_value": _native.ExpValue, "exp_attribute": _native.ExpAttribute,
             "exp_decision": _native.ExpDecision, "exp_event": _native.ExpEvent}
    for line in lines:
        parts = line.split()
        if parts[0] in types:
            assert ctypes.sizeof(types[parts[0]]) == int(parts[1]), line
        elif "." in parts[0]:
            struct, field = parts[0].split(".")
            descriptor = getattr(types[struct], field)
            assert (descriptor.offset, descriptor.size) == (int(parts[1]), int(parts[2])), line
        elif parts[0] == "EXP_DECIDE":
            assert [int(x) for x in parts[1:]] == [int(m) for m in experiment.DecideOption]
        elif parts[0] == "EXP_MAX":
            assert [int(x) for x in parts[1:]] == [
                _native.EXP_MAX_DATAFILE_BYTES, _native.EXP_MAX_JSON_DEPTH, _native.EXP_MAX_INPUT_JSON_BYTES,
                _native.EXP_MAX_KEY_BYTES, _native.EXP_MAX_STRING_BYTES, _native.EXP_MAX_ATTRIBUTES]
        elif parts[0] == "EXP_VALUE":
            assert [int(x) for x in parts[1:]] == [0, 1, 2, 3, 4]


def test_only_exp_symbols_are_exported():
    nm = shutil.which("nm")
    if nm is None or not os.path.exists(experiment.library_path):
        pytest.skip("nm or library path unavailable")
    out = subprocess.run([nm, "-D", "--defined-only", experiment.library_path], capture_output=True,
                         text=True, check=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    foreign = [n for n in names if not n.startswith("exp_") and "@" not in n and n not in ("_init", "_fini")]
    assert foreign == [], foreign[:20]
    assert set(_native.FUNCTION_NAMES) <= {n.split("@")[0] for n in names}
