#!/usr/bin/env python3
"""Runs every code block of README.md, docs/*.md and bindings/*/README* as a new user would (what `make test-docs` runs).

    python3 tools/check_doc_blocks.py [--list] [files...]

A user installs the library as the README says, then copies its examples into files of their own, in a
directory of their own, and runs them. So, for each README file, in a fresh temporary directory OUTSIDE the
repository (a relative path into the checkout fails there) with a fresh, empty HOME:
  1. the file's `setup` blocks (its install steps: `make install PREFIX=...`, a virtual environment with
     `pip install ./bindings/python`, the `export`s for the prefix) run in the checkout, in order, in one
     bash; the environment they end with (variables, PATH, an activated venv) is the user's environment;
  2. every other block runs in that environment, in order, from the file's user directory (the same one
     for all of the file's blocks, so one block may use a file an earlier one wrote), by language:
       c, cpp  compiled as a whole program with -Wall -Wextra -Werror -pedantic (-std=c11 / -std=c++17) and
               the flags `pkg-config --cflags --libs experiment` gives in the user's environment, then run
       python run by the user's `python3` (the venv's), then checked with `mypy --strict` against what that
               interpreter has installed
       sh      run with bash -euo pipefail
       text    not code (a tree, an output): never run
  3. the file's `teardown` blocks (`make uninstall ...`) run in the checkout, in the user's environment.
Each block gets a fresh state directory (XDG_STATE_HOME), and events go nowhere (EXPERIMENT_EVENT_ENDPOINT=none).
The checker's own EXPERIMENT_LIBRARY, PYTHONPATH, LD_LIBRARY_PATH and PKG_CONFIG_PATH are not passed on: the
library is found only the way the README's install steps make it found.

A marker, an HTML comment on the line before a block, changes how it is treated:
    <!-- doc-check: setup -->              step 1 (an install step, run in the checkout)
    <!-- doc-check: teardown -->           step 3 (run in the checkout, after the other blocks)
    <!-- doc-check: checkout: why -->      a command the README runs in the repository (`make demo`, a
                                           developer's test command): run from the checkout, in the checker's
                                           own environment, not the user's
    <!-- doc-check: file: app.c -->        the block is a file the user saves under that name in their
                                           directory (the next blocks build and run it); c and cpp files are
                                           also compiled with the strict flags above, python files checked
                                           with mypy --strict
    <!-- doc-check: fragment: why -->      not run: it cannot run alone (the reason is required)
    <!-- doc-check: skip: why -->          not run: running it here is wrong or too costly (the reason is required)
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
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, NamedTuple, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNABLE = ("c", "cpp", "python", "sh")
NOT_CODE = ("text",)
NOT_RUN = ("fragment", "skip")
NEEDS_REASON = ("fragment", "skip", "checkout", "file")
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-check:\s*(fragment|skip|setup|teardown|checkout|file)\s*(?::\s*(.*?))?\s*-->\s*$")
# The checker's own ways of finding the library: a user has none of them.
_NOT_PASSED_ON = ("EXPERIMENT_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "VIRTUAL_ENV",
                  "EXPERIMENT_NO_SPEEDUPS", "CPATH", "LIBRARY_PATH")
STRICT = ["-Wall", "-Wextra", "-Werror", "-pedantic"]


class Block(NamedTuple):
    path: str
    line: int              # 1-based line of the opening fence
    language: str
    code: str
    marker: Optional[str]  # see the module docstring
    reason: str            # the marker's text (for `file`: the file name)


def default_files() -> List[str]:
    return ([os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
            + sorted(glob.glob(os.path.join(ROOT, "bindings", "*", "README*"))))


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


def where(block: Block) -> str:
    return "%s:%d (%s)" % (os.path.relpath(block.path, ROOT), block.line, block.language or "no language")


def run(command: List[str], env: Dict[str, str], cwd: str, what: str) -> Optional[str]:
    """None when `command` succeeds, else what it printed."""
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    if done.returncode != 0:
        return "%s failed (exit %d):\n%s" % (what, done.returncode, done.stdout[-4000:])
    return None


class User:
    """One README file's user: a fresh HOME and directory outside the repository, and the environment the
    file's setup blocks leave."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.home = os.path.join(workdir, "home")
        self.directory = os.path.join(workdir, "project")   # where the user keeps and runs the examples
        os.makedirs(self.home)
        os.makedirs(self.directory)
        base = {k: v for k, v in os.environ.items() if k not in _NOT_PASSED_ON}
        base["HOME"] = self.home
        base["EXPERIMENT_EVENT_ENDPOINT"] = "none"
        base["XDG_STATE_HOME"] = os.path.join(workdir, "state-setup")
        self.checker_env = dict(os.environ)   # for `checkout` blocks: the repository's own environment
        self.env = base
        self.blocks = 0

    def fresh_env(self, env: Dict[str, str]) -> Dict[str, str]:
        self.blocks += 1
        state = os.path.join(self.workdir, "state.%d" % self.blocks)
        os.makedirs(state)
        return dict(env, XDG_STATE_HOME=state)

    def set_up(self, blocks: List[Block]) -> Optional[str]:
        """Runs the setup blocks in the checkout, in one bash, and keeps the environment they leave."""
        script = ["set -euo pipefail"]
        for block in blocks:
            name = os.path.join(self.workdir, "setup%d.sh" % block.line)
            with open(name, "w", encoding="utf-8") as handle:
                handle.write(block.code)
            script += ["cd %s" % shlex.quote(ROOT), "source %s" % shlex.quote(name)]
        dump = os.path.join(self.workdir, "setup.env")
        script.append("env -0 > %s" % shlex.quote(dump))
        problem = run(["bash", "-c", "\n".join(script)], self.env, ROOT, "the setup blocks (%s)"
                      % ", ".join("line %d" % b.line for b in blocks))
        if problem:
            return problem
        with open(dump, encoding="utf-8") as handle:
            pairs = [entry.split("=", 1) for entry in handle.read().split("\0") if "=" in entry]
        self.env = {key: value for key, value in pairs}
        return None

    def which(self, program: str) -> str:
        return shutil.which(program, path=self.env.get("PATH", "")) or program

    def pkg_config(self) -> Tuple[Optional[List[str]], Optional[str]]:
        done = subprocess.run(["pkg-config", "--cflags", "--libs", "experiment"], env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            return None, "pkg-config --cflags --libs experiment failed in the user's environment:\n" + done.stdout
        return shlex.split(done.stdout), None

    def compile_strict(self, block: Block, source: str, output: Optional[str]) -> Optional[str]:
        flags, problem = self.pkg_config()
        if problem or flags is None:
            return problem
        if block.language == "c":
            compiler = [os.environ.get("CC", "cc"), "-std=c11"]
        else:
            compiler = [os.environ.get("CXX", "c++"), "-std=c++17"]
        target = ["-o", output] if output else ["-fsyntax-only"]
        return run(compiler + STRICT + target + [source] + (flags if output else
                   [f for f in flags if f.startswith(("-I", "-D"))]), self.env, self.directory, "compiling")

    def mypy(self, source: str) -> Optional[str]:
        return run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                    "--python-executable", self.which("python3"), source], self.env, self.directory,
                   "mypy --strict")

    def check(self, block: Block) -> Optional[str]:
        """None when the block ran as written, else why not."""
        if block.marker == "checkout":
            env, cwd = self.fresh_env(self.checker_env), ROOT
        else:
            env, cwd = self.fresh_env(self.env), self.directory
        if block.marker == "teardown":
            cwd = ROOT
        if block.marker == "file":
            source = os.path.join(self.directory, block.reason)
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(block.code)
            if block.language in ("c", "cpp"):
                return self.compile_strict(block, source, None)
            if block.language == "python":
                return self.mypy(source)
            return None
        name = os.path.join(self.workdir, "block%d" % block.line)
        if block.language in ("c", "cpp"):
            source = name + (".c" if block.language == "c" else ".cpp")
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(block.code)
            return self.compile_strict(block, source, name) or run([name], env, cwd, "running it")
        if block.language == "python":
            source = name + ".py"
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(block.code)
            python = shutil.which("python3", path=env.get("PATH", "")) or "python3"
            return run([python, source], env, cwd, "running it") or self.mypy(source)
        if block.language == "sh":
            source = name + ".sh"
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(block.code)
            return run(["bash", "-euo", "pipefail", source], env, cwd, "running it")
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


def check_file(path: str, blocks: List[Block], failures: List[str]) -> int:
    """Runs one README file's blocks as its user would; the number that ran."""
    workdir = tempfile.mkdtemp(prefix="libexperiment-doc-blocks.")
    if os.path.realpath(workdir).startswith(os.path.realpath(ROOT) + os.sep):
        raise SystemExit("the temporary directory %s is inside the repository: set TMPDIR elsewhere" % workdir)
    ran = 0
    try:
        user = User(workdir)
        setup = [b for b in blocks if b.marker == "setup"]
        if setup:
            problem = user.set_up(setup)
            for block in setup:
                print("  %-40s %s" % (where(block), "FAILED" if problem else "ran (setup)"))
            if problem:
                failures.append("%s: %s" % (os.path.relpath(path, ROOT), problem))
                return 0
            ran += len(setup)
        ordered = [b for b in blocks if b.marker != "setup" and b.marker != "teardown"] + \
                  [b for b in blocks if b.marker == "teardown"]
        for block in ordered:
            problem = user.check(block)
            if problem:
                failures.append("%s: %s" % (where(block), problem))
                print("  %-40s FAILED" % where(block))
            else:
                ran += 1
                print("  %-40s ran%s" % (where(block), " (%s)" % block.marker if block.marker else ""))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return ran


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="list the blocks and what would be done")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = [os.path.abspath(f) for f in args.files] or default_files()
    failures: List[str] = ["an absolute path of a machine (use a repository-relative one): " + where
                           for where in machine_paths()]
    ran = 0
    for path in files:
        runnable: List[Block] = []
        for block in blocks_of(path):
            if not block.language:
                failures.append("%s: a code block must name its language (text for non-code)" % where(block))
                continue
            if block.marker in NEEDS_REASON and not block.reason:
                failures.append("%s: doc-check %s without a %s" % (where(block), block.marker,
                                                                  "file name" if block.marker == "file" else "reason"))
                continue
            if block.marker in NOT_RUN:
                print("  %-40s not run: %s: %s" % (where(block), block.marker, block.reason))
                continue
            if block.language in NOT_CODE:
                continue
            if block.language not in RUNNABLE:
                failures.append("%s: cannot run %r blocks; use one of %s, text, or a doc-check marker"
                                % (where(block), block.language, ", ".join(RUNNABLE)))
                continue
            if block.marker in ("setup", "teardown") and block.language != "sh":
                failures.append("%s: a %s block must be sh" % (where(block), block.marker))
                continue
            if args.list:
                print("  %-40s would run%s" % (where(block), " (%s)" % block.marker if block.marker else ""))
                continue
            runnable.append(block)
        if runnable:
            ran += check_file(path, runnable, failures)
    for failure in failures:
        print("\n" + failure, file=sys.stderr)
    if failures:
        return 1
    print("documentation code blocks: %d ran as written" % ran)
    return 0


if __name__ == "__main__":
    sys.exit(main())
