"""The package's types as a user's type checker sees them: `mypy --strict` on the package itself and on a
program using it the way the README does (a plain Dict[str, Any] of attributes, decide options as names,
an event dispatcher class, errors caught by type)."""
from __future__ import annotations

import os
import subprocess
import sys

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USER_PROGRAM = '''
from typing import Any, Dict, List, Optional

import experiment
from experiment import Decision


class Collect:
    def __init__(self) -> None:
        self.events: List[experiment.Event] = []

    def dispatch_event(self, event: experiment.Event) -> None:
        self.events.append(event)


def first_variation(text: str, attributes: Dict[str, Any]) -> Optional[str]:
    with experiment.Client(datafile=text, event_dispatcher=Collect()) as client:
        decision: Decision = client.decide("user-1", "free_shipping", attributes, options=["INCLUDE_REASONS"])
        every: Dict[str, Decision] = client.decide_all("user-1", attributes)
        client.track("purchase", "user-1", attributes, tags={"revenue": 4200})
        try:
            return client.trigger_experiment("user-1", "3001", attributes)
        except (experiment.NotTargetedError, experiment.NotAllocatedError):
            return decision.variation_key if every else None


by_bytes: Dict[bytes, Any] = {b"country": "NL"}
typed: Dict[str, Any] = {"country": "NL", "age": 31}
first_variation("{}", typed)
'''


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                           *args], cwd=PACKAGE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_package_passes_mypy_strict() -> None:
    done = mypy("-p", "experiment")
    assert done.returncode == 0, done.stdout


def test_a_typed_user_program_passes_mypy_strict(tmp_path) -> None:
    program = tmp_path / "user_program.py"
    program.write_text(USER_PROGRAM)
    done = mypy(str(program))
    assert done.returncode == 0, done.stdout


def test_a_wrongly_typed_program_is_refused(tmp_path) -> None:
    program = tmp_path / "wrong.py"
    program.write_text("import experiment\n"
                       "with experiment.Client() as client:\n"
                       "    client.decide('u', 'f', ['not', 'a', 'mapping'])\n")
    done = mypy(str(program))
    assert done.returncode == 1 and "arg-type" in done.stdout, done.stdout
