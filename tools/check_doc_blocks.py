#!/usr/bin/env python3
"""Runs every code block of README.md and bindings/*/README* as written (what `make test-docs` runs).

    python3 tools/check_doc_blocks.py [--list] [files...]

Every fenced block must name its language. By language:
  c      compiled as a whole program with -std=c11 -Wall -Wextra -Werror -pedantic against include/ and the
         built library (.build/release), then run
  cpp    the same with -std=c++17 and bindings/cpp
  python run with the binding (bindings/python) and the built library, then checked with `mypy --strict`
  sh     run with bash -euo pipefail, .build/release (experiment-cli) first on PATH
  text   not code (a tree, an output): never run
Every block runs from the repository root in a fresh state directory (XDG_STATE_HOME) and a fresh, empty
HOME, with events going nowhere (EXPERIMENT_EVENT_ENDPOINT=none).

A block that cannot run alone says so in an HTML comment on the line before it, with the reason:
    <!-- doc-check: fragment: needs the caller's datafile text and an ODP account -->
    <!-- doc-check: skip: runs the whole test suite, which runs this check -->
Fragments and skipped blocks are listed in the output, so none goes unnoticed. Any other failure (a block
without a language, a marker without a reason, a block that fails) fails the check, naming file and line.
The check also fails when any tracked text file names an absolute path of a machine (a home or work
directory): documentation and comments cite repository-relative paths.
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
from typing import Dict, List, NamedTuple, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB_DIR = os.path.join(ROOT, ".build", "release")
RUNNABLE = ("c", "cpp", "python", "sh")
NOT_CODE = ("text",)
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-check:\s*(fragment|skip)\s*(?::\s*(.*?))?\s*-->\s*$")


class Block(NamedTuple):
    path: str
    line: int              # 1-based line of the opening fence
    language: str
    code: str
    marker: Optional[str]  # "fragment" / "skip"
    reason: str


def default_files() -> List[str]:
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "bindings", "*", "README*")))


def blocks_of(path: str) -> List[Block]:
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    found: List[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, language = fence.group(1), fence.group(2)
        start = i
        body: List[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = _MARKER.match(lines[previous]) if previous >= 0 else None
        found.append(Block(path, start + 1, language, "\n".join(body) + "\n",
                           marker.group(1) if marker else None, (marker.group(2) or "") if marker else ""))
        i += 1
    return found


def environment(state: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["XDG_STATE_HOME"] = state
    env["EXPERIMENT_EVENT_ENDPOINT"] = "none"
    env["EXPERIMENT_LIBRARY"] = os.path.join(LIB_DIR, "libexperiment.so")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "bindings", "python"),
                                                       env.get("PYTHONPATH")]))
    env["PATH"] = LIB_DIR + os.pathsep + env.get("PATH", "")
    # A block that writes under $HOME (make install PREFIX="$HOME/...") writes into the check's directory.
    env["HOME"] = os.path.join(state, "home")
    os.makedirs(env["HOME"])
    return env


def run(command: List[str], env: Dict[str, str], what: str) -> Optional[str]:
    """None when `command` succeeds, else what it printed."""
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)
    if done.returncode != 0:
        return "%s failed (exit %d):\n%s" % (what, done.returncode, done.stdout[-4000:])
    return None


def check(block: Block, workdir: str) -> Optional[str]:
    """None when the block ran as written, else why not."""
    state = tempfile.mkdtemp(prefix="state.", dir=workdir)
    env = environment(state)
    name = os.path.join(workdir, "block%d" % block.line)
    if block.language in ("c", "cpp"):
        source = name + (".c" if block.language == "c" else ".cpp")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(block.code)
        if block.language == "c":
            compiler = [os.environ.get("CC", "cc"), "-std=c11"]
        else:
            compiler = [os.environ.get("CXX", "c++"), "-std=c++17", "-I" + os.path.join(ROOT, "bindings", "cpp")]
        problem = run(compiler + ["-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + os.path.join(ROOT, "include"),
                                  "-o", name, source, "-L" + LIB_DIR, "-lexperiment", "-Wl,-rpath," + LIB_DIR],
                      env, "compiling")
        return problem or run([name], env, "running it")
    if block.language == "python":
        source = name + ".py"
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(block.code)
        problem = run([sys.executable, source], env, "running it")
        if problem:
            return problem
        return run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                    source], env, "mypy --strict")
    if block.language == "sh":
        source = name + ".sh"
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(block.code)
        return run(["bash", "-euo", "pipefail", source], env, "running it")
    raise AssertionError(block.language)


# Directories that only exist on some machine: no file of the repository may name one.
_MACHINE_PATH = re.compile(r"(?<![\w.$}])/(?:" + "|".join(["wo" + "rk", "ho" + "me", "ro" + "ot", "Us" + "ers"])
                           + r")/[\w.-]+")


def machine_paths() -> List[str]:
    """"file:line: path" for every absolute path of a machine in the repository's tracked text files."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout
    found: List[str] = []
    for name in filter(None, listed.decode().split("\0")):
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path) or os.path.getsize(path) > 4_000_000:
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except UnicodeDecodeError:
            continue  # binary
        for number, line in enumerate(text.split("\n"), start=1):
            for match in _MACHINE_PATH.finditer(line):
                found.append("%s:%d: %s" % (name, number, match.group(0)))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="list the blocks and what would be done")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = [os.path.abspath(f) for f in args.files] or default_files()
    failures: List[str] = ["an absolute path of a machine (use a repository-relative one): " + where
                           for where in machine_paths()]
    ran = 0
    workdir = tempfile.mkdtemp(prefix="libexperiment-doc-blocks.")
    try:
        for path in files:
            for block in blocks_of(path):
                where = "%s:%d (%s)" % (os.path.relpath(block.path, ROOT), block.line, block.language or "no language")
                if not block.language:
                    failures.append("%s: a code block must name its language (text for non-code)" % where)
                    continue
                if block.marker:
                    if not block.reason:
                        failures.append("%s: doc-check %s without a reason" % (where, block.marker))
                    else:
                        print("  %-40s not run: %s: %s" % (where, block.marker, block.reason))
                    continue
                if block.language in NOT_CODE:
                    continue
                if block.language not in RUNNABLE:
                    failures.append("%s: cannot run %r blocks; use one of %s, text, or a doc-check marker"
                                    % (where, block.language, ", ".join(RUNNABLE)))
                    continue
                if args.list:
                    print("  %-40s would run" % where)
                    continue
                problem = check(block, workdir)
                if problem:
                    failures.append("%s: %s" % (where, problem))
                    print("  %-40s FAILED" % where)
                else:
                    ran += 1
                    print("  %-40s ran" % where)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for failure in failures:
        print("\n" + failure, file=sys.stderr)
    if failures:
        return 1
    print("documentation code blocks: %d ran as written" % ran)
    return 0


if __name__ == "__main__":
    sys.exit(main())
