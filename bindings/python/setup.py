"""Build step of the `libexperiment` Python package: ships libexperiment.so inside the package.

`pip install ./bindings/python` from a checkout of the repository builds the library with the repository's
own `make lib` when it is not built yet, and copies it next to the package's modules, so the installed
package finds it without LD_LIBRARY_PATH. EXPERIMENT_LIBRARY=/path/to/libexperiment.so ships that file
instead (for example a library installed with `make install`). Everything else is in pyproject.toml.

The optional C accelerator experiment/_speedups.c is compiled too when include/experiment.h is found (the
repository's, or EXPERIMENT_INCLUDE=/dir/with/the/header); when it cannot be built, the package works
without it.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
BUILT = os.path.join(REPOSITORY, ".build", "release", "libexperiment.so")


def library_to_ship() -> str:
    chosen = os.environ.get("EXPERIMENT_LIBRARY")
    if chosen:
        if not os.path.isfile(chosen):
            raise SystemExit("EXPERIMENT_LIBRARY=%s: no such file" % chosen)
        return chosen
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


def header_directory() -> str:
    for directory in (os.environ.get("EXPERIMENT_INCLUDE"), os.path.join(REPOSITORY, "include")):
        if directory and os.path.isfile(os.path.join(directory, "experiment.h")):
            return directory
    return ""


def accelerator() -> list:
    include = header_directory()
    if not include:
        return []
    return [Extension("experiment._speedups", ["experiment/_speedups.c"], include_dirs=[include], optional=True)]


setup(cmdclass={"build_py": BuildWithLibrary}, ext_modules=accelerator())
