#!/usr/bin/env python3
"""The C++ wrapper reaches every function of the C API, and each one is exercised.

    python3 tests/cpp/check_wrapper.py [--lib-dir .build/release]       (what `make test-cpp` runs)

1. Lists every `exp_*` function declared in include/experiment.h (comments removed; function-pointer
   typedefs are not functions; static inline helpers are compiled into any C++ code including the header) and every `exp_*` name the code of bindings/cpp/experiment.hpp uses.
   A function of the header the wrapper does not use is a failure, named in the output: when the C API
   grows, this says which functions still need a C++ form.
2. Builds the C++ programs that use the wrapper (examples/cpp/*.cpp and tests/cpp/test_*.cpp) with gcov
   instrumentation, runs each on the demo datafile, and reads which lines of experiment.hpp ran. A function
   whose every line in the wrapper never ran is a failure too: each wrapped function is covered by an
   example or a test.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Set

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "include", "experiment.h")
WRAPPER = os.path.join(ROOT, "bindings", "cpp", "experiment.hpp")
DATAFILE = os.path.join(ROOT, "examples", "datafiles", "demo.json")
PROGRAMS = sorted(glob.glob(os.path.join(ROOT, "examples", "cpp", "*.cpp"))) + \
    sorted(glob.glob(os.path.join(ROOT, "tests", "cpp", "test_*.cpp")))

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_CALLABLE = re.compile(r"\b(exp_[A-Za-z0-9_]+)\s*\(")
_NAME = re.compile(r"\bexp_[A-Za-z0-9_]+\b")


def without_comments(text: str) -> str:
    """The text with comments blanked out, line numbers kept (string literals here hold no comment marks)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def header_functions() -> List[str]:
    """Every exp_* function the header declares or defines, in header order."""
    with open(HEADER, encoding="utf-8") as handle:
        code = without_comments(handle.read())
    names: List[str] = []
    for match in _CALLABLE.finditer(code):
        before = code[max(0, match.start() - 2):match.start()]
        if "(*" in before or "*" == before.strip()[-1:] and "(" in before:  # typedef ... (*exp_x_fn)(...)
            continue
        # a declaration, not a call inside a static inline body: the name follows a type at statement level
        line_start = code.rfind("\n", 0, match.start()) + 1
        prefix = code[line_start:match.start()]
        if re.search(r"(^|\s)(return|=|\()", prefix) or prefix.strip().startswith("#"):
            continue
        # static inline helpers (exp_attr_*) are compiled into every translation unit that includes the
        # header, experiment.hpp's users included: reachable from C++ by construction.
        if "static inline" in prefix:
            continue
        if match.group(1) not in names:
            names.append(match.group(1))
    return names


def wrapper_lines() -> Dict[str, List[int]]:
    """exp_* name -> the lines (1-based) of experiment.hpp's code that use it."""
    with open(WRAPPER, encoding="utf-8") as handle:
        code = without_comments(handle.read())
    used: Dict[str, List[int]] = {}
    for number, line in enumerate(code.split("\n"), start=1):
        for name in _NAME.findall(line):
            used.setdefault(name, []).append(number)
    return used


def executed_wrapper_lines(lib_dir: str, workdir: str) -> Set[int]:
    """Builds every program with --coverage, runs it, and returns the experiment.hpp lines that ran."""
    cxx = os.environ.get("CXX", "c++")
    executed: Set[int] = set()
    for source in PROGRAMS:
        name = os.path.splitext(os.path.basename(source))[0]
        build = os.path.join(workdir, name)
        os.makedirs(build)
        binary = os.path.join(build, name)
        subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O0", "--coverage",
                        "-I" + os.path.join(ROOT, "include"), "-I" + os.path.dirname(WRAPPER),
                        "-o", binary, source, "-L" + lib_dir, "-lexperiment", "-Wl,-rpath," + lib_dir],
                       check=True, cwd=build)
        state = os.path.join(build, "state")
        env = dict(os.environ, XDG_STATE_HOME=state, EXPERIMENT_EVENT_ENDPOINT="none")
        run = subprocess.run([binary, DATAFILE], cwd=build, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:
            print(run.stdout)
            raise SystemExit("check_wrapper: %s failed (exit %d)" % (name, run.returncode))
        notes = glob.glob(os.path.join(build, "*.gcno"))
        subprocess.run(["gcov", "-o", build] + notes, cwd=build, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = os.path.join(build, "experiment.hpp.gcov")
        if not os.path.exists(report):
            raise SystemExit("check_wrapper: gcov wrote no experiment.hpp.gcov for %s" % name)
        with open(report, encoding="utf-8") as handle:
            for line in handle:
                parts = line.split(":", 2)
                if len(parts) < 3:
                    continue  # a function summary or a wrapped source line
                count, number, _source = parts
                count = count.strip().rstrip("*")
                if count and count not in ("-", "#####", "=====") and int(count) > 0:
                    executed.add(int(number))
        print("    ran %s" % os.path.relpath(source, ROOT))
    return executed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lib-dir", default=os.path.join(ROOT, ".build", "release"))
    args = parser.parse_args()
    functions = header_functions()
    used = wrapper_lines()
    # A function with a length-delimited form (exp_decide -> exp_decide_n) is reached through that form: the
    # wrapper passes std::string_view as pointer and length, NUL bytes included, so it calls only the _n one;
    # likewise a function whose result has a _len form (exp_get_variation[_n] -> exp_get_variation_len: the
    # returned key with its length).
    for name in functions:
        stem = name[:-2] if name.endswith("_n") else name
        for form in (name + "_n", stem + "_len"):
            if name not in used and form in used:
                used[name] = used[form]
    unreached = [f for f in functions if f not in used]
    print("include/experiment.h declares %d exp_* functions; experiment.hpp reaches %d"
          % (len(functions), len(functions) - len(unreached)))
    if unreached:
        print("not reachable from C++ (add them to bindings/cpp/experiment.hpp):")
        for name in unreached:
            print("    " + name)
    workdir = tempfile.mkdtemp(prefix="libexperiment-cpp-coverage.")
    try:
        executed = executed_wrapper_lines(os.path.abspath(args.lib_dir), workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    unexercised = [f for f in functions if f in used and not any(n in executed for n in used[f])]
    if unexercised:
        print("wrapped but never run by examples/cpp or tests/cpp (add a call to tests/cpp/test_wrapper.cpp):")
        for name in unexercised:
            print("    %s (experiment.hpp lines %s)" % (name, ", ".join(map(str, used[name]))))
    if unreached or unexercised:
        return 1
    print("C++ wrapper: every one of the %d functions is reached and exercised" % len(functions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
