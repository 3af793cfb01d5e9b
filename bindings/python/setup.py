"""Build step of the `libexperiment` Python package: ships libexperiment.so inside the package.

`pip install ./bindings/python` from a checkout of the repository builds the library with the repository's
own `make lib` when it is not built yet, and copies it next to the package's modules, so the installed
package finds it without LD_LIBRARY_PATH. EXPERIMENT_LIBRARY=/path/to/libexperiment.so ships that file
instead (for example a library installed with `make install`). Everything else is in pyproject.toml.
"""
import os
import shutil
import subprocess

from setuptools import setup
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


setup(cmdclass={"build_py": BuildWithLibrary})
