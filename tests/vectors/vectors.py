"""What generate.py and every Python vectors runner share: the value encoding, event normalisation and
notification recording, and for runners reading the cases, strict comparison, the tally and its report
(README "A runner for a new binding"). A runner supplies one function per call kind; replay() does the rest.
Never imports the library: generate.py uses it too."""

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


def encode_value(value: Any) -> Any:
    """A Python attribute value as a vector writes it: integers outside int64, non-finite floats, lists and
    dicts are tagged (README "Values")."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -(2 ** 63) <= value < 2 ** 63 else {TAG: "bigint", "value": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return {TAG: "float", "value": "nan"}
        if math.isinf(value):
            return {TAG: "float", "value": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, (list, tuple)):
        return {TAG: "list", "value": [encode_value(v) for v in value]}
    if isinstance(value, dict):
        return {TAG: "dict", "value": {str(k): encode_value(v) for k, v in value.items()}}
    raise TypeError(f"no vector encoding for {type(value).__name__}")


def encode_attributes(attributes: Dict[str, Any]) -> Dict[str, Any]:
    return {key: encode_value(value) for key, value in attributes.items()}


def has_tagged_value(attributes: Dict[str, Any]) -> bool:
    return any(isinstance(v, dict) and TAG in v for v in attributes.values())


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


def load_known_differences(binding: str) -> Dict[Tuple[str, int], str]:
    """(case name, call index) -> reason, for the calls known to differ in `binding` (an entry without
    "bindings" applies to every binding; README "Known differences")."""
    if not os.path.exists(KNOWN_DIFFERENCES):
        return {}
    with open(KNOWN_DIFFERENCES, encoding="utf-8") as f:
        entries = json.load(f).get("calls", [])
    return {(e["case"], e["index"]): e["reason"] for e in entries if binding in e.get("bindings", [binding])}


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


class NotificationRecorder:
    """DECISION and TRACK notifications as the vectors write them (README "Notifications"): on_decision and
    on_track are the reference's listener signatures; on_payload takes the C ABI's JSON payloads."""

    def __init__(self) -> None:
        self.notifications: List[dict] = []

    def on_decision(self, decision_type: str, user_id: str, attributes: Any, decision_info: Any) -> None:
        self.notifications.append({"notification": "DECISION", "type": decision_type, "user_id": user_id,
                                   "attributes": encode_attributes(attributes or {}),
                                   "decision_info": decision_info})

    def on_track(self, event_key: str, user_id: str, attributes: Any, event_tags: Any, _event: Any) -> None:
        self.notifications.append({"notification": "TRACK", "event_key": event_key, "user_id": user_id,
                                   "attributes": encode_attributes(attributes or {}), "event_tags": event_tags})

    def on_payload(self, kind: str, payload: Dict[str, Any]) -> None:
        self.notifications.append({"notification": kind, **payload})

    def take(self) -> List[dict]:
        taken, self.notifications = self.notifications, []
        return json.loads(json.dumps(taken))    # what JSON carries (tuples become lists)


def decision_json(d: Any) -> dict:
    return {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key,
            "rule_key": d.rule_key, "variables": d.variables, "reasons": list(d.reasons)}


def decisions_json(decisions: Dict[str, Any]) -> Dict[str, dict]:
    """decide_all / decide_for_keys: an object by flag key (its order is not part of the answer: the
    reference puts unknown keys first, the C ABI keeps the caller's order)."""
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


def first_difference(expected: Any, actual: Any, path: str = "") -> Tuple[str, Any, Any]:
    """Where two answers first differ: (path, expected there, actual there)."""
    if type(expected) is type(actual) and isinstance(expected, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in expected or key not in actual or not strict_equal(expected[key], actual[key]):
                if key in expected and key in actual:
                    return first_difference(expected[key], actual[key], f"{path}.{key}")
                return f"{path}.{key}", expected.get(key, "<absent>"), actual.get(key, "<absent>")
    if type(expected) is type(actual) and isinstance(expected, list) and len(expected) == len(actual):
        for i, (x, y) in enumerate(zip(expected, actual)):
            if not strict_equal(x, y):
                return first_difference(x, y, f"{path}[{i}]")
    return path or ".", expected, actual


def difference(expected: Any, actual: Any) -> str:
    path, exp, act = first_difference(expected, actual)
    exp_text = json.dumps(exp, ensure_ascii=False, sort_keys=True, default=repr)
    act_text = json.dumps(act, ensure_ascii=False, sort_keys=True, default=repr)
    return f"at {path}\n     expected {exp_text[:500]}\n     got      {act_text[:500]}"


Runner = Callable[[Any, dict, CapturingDispatcher], Any]


def comparable(expect: dict, call: dict, actual: dict, lossy_attributes: bool) -> Tuple[dict, dict]:
    """The vector's expectations made whole (a notification without "attributes" has the call's) and, for a
    binding whose notifications carry attributes as JSON (lossy_attributes: NaN, lists and integers past
    int64 cannot cross it), both sides without the attributes of calls that have such values."""
    expect = json.loads(json.dumps(expect))
    for notification in expect["notifications"]:
        notification.setdefault("attributes", call["attributes"])
    if lossy_attributes and has_tagged_value(call["attributes"]):
        for notification in expect["notifications"] + actual["notifications"]:
            notification.pop("attributes", None)
    return expect, actual


def replay(binding: str, make_client: Callable[[dict, str, CapturingDispatcher, NotificationRecorder], Any],
           call_runners: Dict[str, Runner], close: Callable[[Any], None], argv: List[str],
           lossy_attributes: bool = False) -> int:
    """Replays every case through one binding: per call, its result, events and notifications are compared
    with the vector (one comparison per call: all must match)."""
    tally = Tally(binding)
    known = load_known_differences(binding)
    for case in load_cases(argv or None):
        dispatcher, recorder = CapturingDispatcher(), NotificationRecorder()
        client = make_client(case, datafile_text(case), dispatcher, recorder)
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
                    recorder.take()
                    continue
                except Exception as error:  # noqa: BLE001 - a raise is a difference like any other
                    result = {"raised": f"{type(error).__name__}: {error}"}
                actual = {"result": result, "events": dispatcher.take(), "notifications": recorder.take()}
                expect, actual = comparable(call["expect"], call, actual, lossy_attributes)
                ok = strict_equal(expect, actual)
                tally.record(where, call["call"], ok, known.get((case["name"], index)),
                             "" if ok else difference(expect, actual))
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
