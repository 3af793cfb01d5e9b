"""The OpenFeature provider's lifecycle (READY / STALE / ERROR, CONFIGURATION_CHANGED) in SDK-key mode, on the
oldest and the newest openfeature-sdk the binding declares.

The oldest is the lower bound in pyproject.toml (``openfeature-sdk>=X``); the newest is the version `make
test-deps` pins (PIP_TEST_PACKAGES in the Makefile). Each is installed with pip into its own directory under
.build/openfeature-sdk/<version> (made once, then reused) and tests/openfeature_lifecycle.py runs in a child
interpreter with only that directory and the binding on PYTHONPATH, against a datafile server on 127.0.0.1.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
REPOSITORY = os.path.dirname(os.path.dirname(PACKAGE))
SCENARIO = os.path.join(HERE, "openfeature_lifecycle.py")


def declared_versions() -> list[str]:
    with open(os.path.join(PACKAGE, "pyproject.toml"), encoding="utf-8") as handle:
        oldest = re.search(r'"openfeature-sdk>=([0-9.]+)"', handle.read())
    with open(os.path.join(REPOSITORY, "Makefile"), encoding="utf-8") as handle:
        newest = re.search(r"^PIP_TEST_PACKAGES :=.*\bopenfeature-sdk==([0-9.]+)", handle.read(), re.M)
    assert oldest and newest, "cannot read the declared openfeature-sdk versions"
    low = oldest.group(1)
    if low.count(".") == 1:
        low += ".0"  # ">=0.8" admits 0.8.0
    return [low, newest.group(1)]


def install(version: str) -> str:
    target = os.path.join(REPOSITORY, ".build", "openfeature-sdk", version)
    marker = os.path.join(target, ".complete")
    if not os.path.exists(marker):
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                               "--no-deps", "--upgrade", "--target", target, "openfeature-sdk==%s" % version],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            pytest.fail("pip could not install openfeature-sdk==%s:\n%s" % (version, done.stdout))
        open(marker, "w").close()
    return target


@pytest.mark.parametrize("version", declared_versions())
def test_lifecycle(version: str, tmp_path) -> None:
    target = install(version)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([target, PACKAGE])
    env["EXPERIMENT_TEST_SECOND_MS"] = "30"        # polling_interval_s=10 -> a poll every 0.3 s
    env["XDG_STATE_HOME"] = str(tmp_path)
    env["EXPERIMENT_EVENT_ENDPOINT"] = "none"
    run = subprocess.run([sys.executable, SCENARIO], env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300)
    print(run.stdout)
    assert run.returncode == 0, run.stdout
    assert "openfeature-sdk %s" % version in run.stdout, run.stdout
    assert "lifecycle: OK" in run.stdout
