"""Build step of the `libexperiment` Python package: ships libexperiment.so inside the package.

The library shipped, first that applies:
1. EXPERIMENT_LIBRARY=/path/to/libexperiment.so: that file (for example a library installed with
   `make install`, or the one `make wheel` built);
2. a source distribution (`make wheel` makes one: Package.swift, Sources/ and include/ beside this file):
   built here with Swift, `swift build -c release -Xswiftc -static-stdlib --product experiment` and the flags
   of Sources/experiment/shipping.flags, from the sdist's own sources (EXPERIMENT_LIBRARY_ONLY=1 keeps the manifest to the library's targets);
3. `pip install ./bindings/python` from a checkout of the repository: the repository's `make lib`, run when
   the library is not built yet.
It is copied next to the package's modules, so the installed package finds it without LD_LIBRARY_PATH.
Everything else is in pyproject.toml.

The optional C accelerator experiment/_speedups.c is compiled too when include/experiment.h is found
(EXPERIMENT_INCLUDE=/dir/with/the/header, the sdist's include/ or the repository's); when it cannot be built,
the package works without it.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
BUILT = os.path.join(REPOSITORY, ".build", "release", "libexperiment.so")
# What the shipping build passes to swift build (the Makefile's `lib` target does the same), plus the
# flags of Sources/experiment/shipping.flags (SwiftPM takes them only on the command line).
SWIFT_BUILD = ["swift", "build", "-c", "release", "-Xswiftc", "-static-stdlib", "--disable-local-rpath",
               "--product", "experiment"]


def shipping_flags(package: str) -> list:
    """The arguments of the package's Sources/experiment/shipping.flags ('#' starts a comment)."""
    with open(os.path.join(package, "Sources", "experiment", "shipping.flags"), encoding="utf-8") as handle:
        return [word for line in handle for word in line.split("#", 1)[0].split()]


def is_source_distribution() -> bool:
    return os.path.isfile(os.path.join(HERE, "Package.swift"))


def build_from_sources() -> str:
    """libexperiment.so built by Swift from the sources beside this file (an unpacked sdist)."""
    if shutil.which("swift") is None:
        raise SystemExit("building libexperiment from source needs Swift 6 (swift on PATH) and the Debian "
                         "packages libsqlite3-dev libcurl4-openssl-dev libhiredis-dev pkg-config; or set "
                         "EXPERIMENT_LIBRARY to a built libexperiment.so")
    environment = dict(os.environ, EXPERIMENT_LIBRARY_ONLY="1")
    # The flags name Sources/experiment/exports.map relative to the package directory: the build runs there.
    subprocess.run(SWIFT_BUILD + shipping_flags(HERE), cwd=HERE, env=environment, check=True)
    return os.path.join(HERE, ".build", "release", "libexperiment.so")


def library_to_ship() -> str:
    chosen = os.environ.get("EXPERIMENT_LIBRARY")
    if chosen:
        if not os.path.isfile(chosen):
            raise SystemExit("EXPERIMENT_LIBRARY=%s: no such file" % chosen)
        return chosen
    if is_source_distribution():
        return build_from_sources()
    if not os.path.isfile(BUILT):
        if not os.path.isfile(os.path.join(REPOSITORY, "Makefile")):
            raise SystemExit("libexperiment.so is not built and no repository is beside this package: "
                             "set EXPERIMENT_LIBRARY to the library to ship")
        subprocess.run(["make", "-C", REPOSITORY, "lib"], check=True)
    return BUILT


class BuildWithLibrary(build_py):
    def run(self) -> None:
        super().run()
        target = os.path.join(self.build_lib, "experiment", "libexperiment.so")
        shutil.copyfile(os.path.realpath(library_to_ship()), target)
        os.chmod(target, 0o755)
        # The symbol table and debug info are half the file (18 MB -> 9 MB); the exported exp_* stay (as make install).
        if shutil.which("strip"):
            subprocess.run(["strip", "--strip-unneeded", target], check=True)


def header_directory() -> str:
    for directory in (os.environ.get("EXPERIMENT_INCLUDE"), os.path.join(HERE, "include"),
                      os.path.join(REPOSITORY, "include")):
        if directory and os.path.isfile(os.path.join(directory, "experiment.h")):
            return directory
    return ""


def accelerator() -> list:
    include = header_directory()
    if not include:
        return []
    return [Extension("experiment._speedups", ["experiment/_speedups.c"], include_dirs=[include], optional=True)]


setup(cmdclass={"build_py": BuildWithLibrary}, ext_modules=accelerator())
