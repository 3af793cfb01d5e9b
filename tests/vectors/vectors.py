"""What every Python vectors runner shares: reading the cases, comparing answers strictly, the tally and its
report (README "Runners"). A runner supplies one function per call kind; this module does the rest."""

from __future__ import annotations

import glob
import json
import math
import os
import sys
import tempfile
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES_DIR = os.path.join(HERE, "cases")
KNOWN_DIFFERENCES = os.path.join(HERE, "known_differences.json")
TAG = "$vector_type"
MAX_LISTED = 15


class NotApplicable(Exception):
    """The binding has no equivalent of this call kind (counted apart, never as passed)."""


def decode_value(value: Any) -> Any:
    """A vector's attribute value as the Python value the reference was given (README "Values")."""
    if isinstance(value, dict) and TAG in value:
        kind, inner = value[TAG], value["value"]
        if kind == "bigint":
            return int(inner)
        if kind == "float":
            return float(inner)
        if kind == "list":
            return [decode_value(v) for v in inner]
        if kind == "dict":
            return {k: decode_value(v) for k, v in inner.items()}
        raise ValueError(f"unknown tagged value {value!r}")
    return value


def attributes_of(call: dict) -> Dict[str, Any]:
    return {k: decode_value(v) for k, v in call["attributes"].items()}


def tags_of(call: dict) -> Any:
    return json.loads(call["tags_json"]) if call.get("tags_json") is not None else None


def datafile_text(case: dict) -> str:
    if "datafile_text" in case:
        return case["datafile_text"]
    with open(os.path.join(ROOT, case["datafile_path"]), encoding="utf-8") as f:
        return f.read()


def load_cases(paths: Optional[List[str]] = None) -> Iterator[dict]:
    for path in paths or sorted(glob.glob(os.path.join(CASES_DIR, "*.json"))):
        with open(path, encoding="utf-8") as f:
            yield json.load(f)


def load_known_differences() -> Dict[Tuple[str, int], str]:
    """(case name, call index) -> reason, for the calls known to differ (README "Known differences")."""
    if not os.path.exists(KNOWN_DIFFERENCES):
        return {}
    with open(KNOWN_DIFFERENCES, encoding="utf-8") as f:
        entries = json.load(f).get("calls", [])
    return {(e["case"], e["index"]): e["reason"] for e in entries}


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that tells bool from int from float (True == 1 == 1.0 in Python, not in a vector)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def normalize_event(event: Any) -> dict:
    """url, http_verb and params without client name/version and each event's uuid and timestamp."""
    def field(name: str) -> Any:
        return event.get(name) if isinstance(event, dict) else getattr(event, name, None)
    params = field("params")
    if isinstance(params, (bytes, str)):
        params = json.loads(params)
    params = json.loads(json.dumps(params))
    params.pop("client_name", None)
    params.pop("client_version", None)
    for visitor in params.get("visitors") or []:
        for snapshot in visitor.get("snapshots") or []:
            for ev in snapshot.get("events") or []:
                ev.pop("uuid", None)
                ev.pop("timestamp", None)
    return {"url": field("url"), "http_verb": field("http_verb"), "params": params}


class CapturingDispatcher:
    def __init__(self) -> None:
        self.events: List[Any] = []

    def dispatch_event(self, event: Any) -> None:
        self.events.append(event)

    def take(self) -> List[dict]:
        taken = [normalize_event(e) for e in self.events]
        self.events = []
        return taken


def decision_json(d: Any) -> dict:
    return {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key,
            "rule_key": d.rule_key, "variables": d.variables, "reasons": list(d.reasons)}


def decisions_json(decisions: Dict[str, Any]) -> Dict[str, dict]:
    return {key: decision_json(d) for key, d in decisions.items()}


class Tally:
    def __init__(self, binding: str) -> None:
        self.binding = binding
        self.passed = self.failed = self.known = self.known_fixed = 0
        self.not_applicable: Dict[str, int] = {}
        self.failures: List[str] = []

    def record(self, where: str, kind: str, ok: bool, known_reason: Optional[str], detail: str) -> None:
        if known_reason is not None:
            if ok:
                self.known_fixed += 1
                self.passed += 1
            else:
                self.known += 1
            return
        if ok:
            self.passed += 1
            return
        self.failed += 1
        if len(self.failures) < MAX_LISTED:
            self.failures.append(f"{where} {kind}: {detail}")

    def report(self) -> int:
        for line in self.failures:
            print("DIFF " + line)
        if self.not_applicable:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.not_applicable.items()))
            print(f"{self.binding}: {sum(self.not_applicable.values())} not applicable (no such call: {kinds})")
        if self.known or self.known_fixed:
            print(f"{self.binding}: {self.known} known differences (known_differences.json), "
                  f"{self.known_fixed} listed there now pass")
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def difference(expected: Any, actual: Any) -> str:
    exp_text = json.dumps(expected, ensure_ascii=False, sort_keys=True, default=repr)
    act_text = json.dumps(actual, ensure_ascii=False, sort_keys=True, default=repr)
    return f"expected {exp_text[:600]}\n     got      {act_text[:600]}"


Runner = Callable[[Any, dict, CapturingDispatcher], Any]


def replay(binding: str, make_client: Callable[[dict, str, CapturingDispatcher], Any],
           call_runners: Dict[str, Runner], close: Callable[[Any], None], argv: List[str]) -> int:
    """Replays every case through one binding: per call, its result and then its events are compared with
    the vector (one comparison per call: both must match)."""
    tally = Tally(binding)
    known = load_known_differences()
    for case in load_cases(argv or None):
        dispatcher = CapturingDispatcher()
        client = make_client(case, datafile_text(case), dispatcher)
        try:
            for index, call in enumerate(case["calls"]):
                where = f"{case['name']}#{index}"
                run = call_runners.get(call["call"])
                try:
                    if run is None:
                        raise NotApplicable()
                    result = run(client, call, dispatcher)
                except NotApplicable:
                    tally.not_applicable[call["call"]] = tally.not_applicable.get(call["call"], 0) + 1
                    dispatcher.take()
                    continue
                except Exception as error:  # noqa: BLE001 - a raise is a difference like any other
                    result = {"raised": f"{type(error).__name__}: {error}"}
                actual = {"result": result, "events": dispatcher.take()}
                ok = strict_equal(call["expect"], actual)
                tally.record(where, call["call"], ok, known.get((case["name"], index)),
                             "" if ok else difference(call["expect"], actual))
        finally:
            close(client)
    return tally.report()


_STATE_ROOT: Optional[tempfile.TemporaryDirectory] = None


def private_state_dir() -> str:
    """Every client gets its own state directory (never the user's), under one temporary directory that is
    removed when the runner exits."""
    global _STATE_ROOT
    if _STATE_ROOT is None:
        _STATE_ROOT = tempfile.TemporaryDirectory(prefix="vectors-state-")
    return tempfile.mkdtemp(dir=_STATE_ROOT.name)


def main_guard(run: Callable[[List[str]], int]) -> None:
    sys.exit(run(sys.argv[1:]))
