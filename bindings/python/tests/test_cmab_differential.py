"""Differential tests of CMAB (contextual multi-armed bandit) experiments against optimizely-sdk 5.7.0.

A real HTTP prediction service runs on 127.0.0.1; the reference (through its
``OptimizelySdkSettings(cmab_prediction_endpoint=...)``) and our client (option
``cmab_prediction_endpoint``) both ask it, each under its own path prefix, so every request can be
compared. Datafiles come from ``generate_datafile(seed, cmab=True)``: some experiments (flag rules, grouped
ones, A/B experiments) get a ``cmab`` object with attribute ids and a traffic allocation (0 to 10000, so
some users are skipped by traffic).

The service answers deterministically from the request (rule, visitor, attributes): mostly a variation of
the experiment, sometimes a 500, a body that is no JSON, JSON without a prediction, an unknown variation
id, a numeric variation id, a reset connection, or a 500 to the first attempt only (the retry succeeds).

Compared, per call: decide (assorted options, IGNORE_CMAB_CACHE / RESET_CMAB_CACHE /
INVALIDATE_USER_CMAB_CACHE included) and decide_all with reasons, variables and the dispatched impression
events (metadata.cmab_uuid included), activate of CMAB experiments, and the prediction requests each side
sent (URL, JSON body). UUIDs are random on both sides: each is replaced by the ordinal of the first request
that carried it on its side, so the cache's reuse of a prediction (and its uuid) is compared too. A second
round repeats users (cache hits) and changes some attributes (cache mismatches).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datafile_generator import generate_datafile, generate_users  # noqa: E402
from test_differential import RecordingDispatcher, _SILENT, normalize_event, typed_diff  # noqa: E402

from optimizely import optimizely as optimizely_mod  # noqa: E402
from optimizely.cmab import cmab_client as reference_cmab_client  # noqa: E402
from optimizely.event.event_processor import ForwardingEventProcessor  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402

import experiment  # noqa: E402

SEEDS = list(range(int(os.environ.get("CMAB_SEED_BASE", "0")),
                   int(os.environ.get("CMAB_SEED_BASE", "0")) + int(os.environ.get("CMAB_DATAFILES", "14"))))
N_USERS = int(os.environ.get("CMAB_USERS", "24"))
IR, EFO, EXV, DDE = "INCLUDE_REASONS", "ENABLED_FLAGS_ONLY", "EXCLUDE_VARIABLES", "DISABLE_DECISION_EVENT"
IGNORE, RESET, INVALIDATE = "IGNORE_CMAB_CACHE", "RESET_CMAB_CACHE", "INVALIDATE_USER_CMAB_CACHE"
OPTION_SETS = [[IR], [], [DDE, IR], [EFO], [IGNORE, IR], [INVALIDATE, IR], [EXV, IR], [RESET, IR], [IR]]
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

STATS: collections.Counter = collections.Counter()


# ---------------------------------------------------------------------------------------------------
# The prediction service
# ---------------------------------------------------------------------------------------------------

class PredictionServer:
    """A CMAB prediction service on 127.0.0.1. ``/<side>/predict/<rule_id>`` records the request under its
    side ("ref" or "ours") and answers as `behaviour` says for its body."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: Dict[str, List[Tuple[str, Any]]] = {"ref": [], "ours": []}
        self.variations: Dict[str, List[str]] = {}
        self.seen_uuids: set = set()
        self.mode = "mixed"
        self.delay_s = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                parts = self.path.split("/")
                side = parts[1] if len(parts) > 1 else "?"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                with server.lock:
                    server.requests.setdefault(side, []).append(("/".join(parts[2:]), body,
                                                                 self.headers.get("Content-Type")))
                status, payload = server.behaviour(body)
                if server.delay_s:
                    time.sleep(server.delay_s)
                if status is None:       # drop the connection without an answer
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                data = payload.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:      # the client gave up (a timeout test)
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, side: str, placeholder: str) -> str:
        return f"http://127.0.0.1:{self.port}/{side}/predict/{placeholder}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def behaviour(self, body: Any) -> Tuple[Optional[int], str]:
        try:
            instance = body["instances"][0]
            rule, visitor, attributes = instance["experimentId"], instance["visitorId"], instance["attributes"]
            uuid = instance["cmabUUID"]
        except (KeyError, IndexError, TypeError):
            return 400, '{"error": "bad request"}'
        text = json.dumps([rule, visitor, attributes], sort_keys=True)
        h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
        variations = self.variations.get(rule) or ["0"]
        chosen = variations[(h >> 8) % len(variations)]
        ok = json.dumps({"predictions": [{"variation_id": chosen}]})
        if self.mode == "ok":
            return 200, ok
        if self.mode == "error":
            return 500, '{"error": "down"}'
        kind = h % 100
        if kind < 62:
            return 200, ok
        if kind < 68:
            return 500, '{"error": "internal"}'
        if kind < 72:
            return 200, "{not json"
        if kind < 76:
            return 200, ['{"predictions": []}', "[]", '{"predictions": [{"x": 1}]}', "{}",
                         '{"predictions": {"variation_id": "1"}}'][(h >> 3) % 5]
        if kind < 80:
            return 200, json.dumps({"predictions": [{"variation_id": "999999999"}]})
        if kind < 86:
            with self.lock:
                first = uuid not in self.seen_uuids
                self.seen_uuids.add(uuid)
            return (503, '{"error": "retry me"}') if first else (200, ok)
        if kind < 92 and chosen.isdigit():
            return 200, '{"predictions": [{"variation_id": %s, "extra": true}], "other": 1}' % chosen
        if kind < 96:
            return None, ""
        return 200, ok


@pytest.fixture(scope="module")
def server() -> Any:
    s = PredictionServer()
    yield s
    s.close()


# ---------------------------------------------------------------------------------------------------
# The two sides
# ---------------------------------------------------------------------------------------------------

def make_reference(text: str, server: PredictionServer, dispatcher: RecordingDispatcher) -> Any:
    client = optimizely_mod.Optimizely(
        datafile=text, logger=_SILENT,
        event_processor=ForwardingEventProcessor(dispatcher, logger=_SILENT),
        settings=OptimizelySdkSettings(odp_disabled=True, cmab_prediction_endpoint=server.url("ref", "{}")))
    assert client.is_valid
    return client


def make_ours(text: str, server: PredictionServer, dispatcher: RecordingDispatcher, **options: Any) -> Any:
    return experiment.Client(datafile=text, event_dispatcher=dispatcher, profile_store="none",
                             cmab_prediction_endpoint=server.url("ours", "{rule_id}"), **options)


class UUIDs:
    """Each side's UUIDs as the ordinal of the first request that carried them (see the module docstring)."""

    def __init__(self, server: PredictionServer, side: str) -> None:
        self.server, self.side = server, side

    def ordinal(self, uuid: str) -> str:
        with self.server.lock:
            for index, (_, body, _) in enumerate(self.server.requests[self.side]):
                try:
                    if body["instances"][0]["cmabUUID"] == uuid:
                        return f"<uuid#{index}>"
                except (KeyError, IndexError, TypeError):
                    pass
        return "<uuid never sent>"

    def normalize(self, value: Any) -> Any:
        if isinstance(value, str):
            return UUID_RE.sub(lambda m: self.ordinal(m.group(0)), value)
        if isinstance(value, list):
            return [self.normalize(v) for v in value]
        if isinstance(value, dict):
            return {k: self.normalize(v) for k, v in value.items()}
        return value


class Run:
    """One datafile: both sides, the calls, and the mismatches found."""

    def __init__(self, seed: int, server: PredictionServer, df: dict) -> None:
        self.seed, self.server, self.df = seed, server, df
        text = json.dumps(df)
        self.ref_rec, self.our_rec = RecordingDispatcher(), RecordingDispatcher()
        self.ref = make_reference(text, server, self.ref_rec)
        self.ours = make_ours(text, server, self.our_rec)
        self.ref_uuids, self.our_uuids = UUIDs(server, "ref"), UUIDs(server, "ours")
        self.ref_seen = self.our_seen = 0
        self.ref_requests = len(server.requests["ref"])
        self.our_requests = len(server.requests["ours"])
        self.mismatches: List[str] = []

    def close(self) -> None:
        self.ref.close()
        self.ours.close()

    def mismatch(self, what: str, ref: Any, ours: Any) -> None:
        STATS["mismatches"] += 1
        if len(self.mismatches) < 8:
            self.mismatches.append(f"seed {self.seed}: {what}\n  reference: {ref!r}\n  ours:      {ours!r}")

    def compare(self, what: str, ref: Any, ours: Any) -> None:
        ref, ours = self.ref_uuids.normalize(ref), self.our_uuids.normalize(ours)
        STATS["comparisons"] += 1
        diff = typed_diff(ref, ours)
        if diff:
            self.mismatch(f"{what}: {diff}", ref, ours)

    def compare_side_effects(self, what: str) -> None:
        """The events and the prediction requests of the last call."""
        self.ours.flush()
        ref_new = [self.ref_uuids.normalize(normalize_event(e)[0]) for e in self.ref_rec.events[self.ref_seen:]]
        our_new = [self.our_uuids.normalize(normalize_event(e)[0]) for e in self.our_rec.events[self.our_seen:]]
        self.ref_seen, self.our_seen = len(self.ref_rec.events), len(self.our_rec.events)
        STATS["events compared"] += len(ref_new)
        for event in ref_new:
            for visitor in (event.get("params") or {}).get("visitors", []):
                for snapshot in visitor.get("snapshots", []):
                    for decision in snapshot.get("decisions", []):
                        if "cmab_uuid" in decision.get("metadata", {}):
                            STATS["impressions with cmab_uuid"] += 1
        self.compare(f"{what} events", ref_new, our_new)
        with self.server.lock:
            ref_req = self.server.requests["ref"][self.ref_requests:]
            our_req = self.server.requests["ours"][self.our_requests:]
            self.ref_requests = len(self.server.requests["ref"])
            self.our_requests = len(self.server.requests["ours"])
        STATS["prediction requests compared"] += len(ref_req)
        self.compare(f"{what} prediction requests", [list(r) for r in ref_req], [list(r) for r in our_req])

    # -- calls -------------------------------------------------------------------------------------

    def decide(self, user_id: str, attributes: Dict[str, Any], flag: str, options: List[str]) -> None:
        ref_user = self.ref.create_user_context(user_id, dict(attributes))
        ref = ref_user.decide(flag, list(options))
        ours = self.ours.create_user_context(user_id, dict(attributes)).decide(flag, list(options))
        self.compare(f"decide({user_id!r}, {flag!r}, {options})", as_dict(ref), as_dict(ours))
        STATS["decide"] += 1
        if ref.reasons and "Failed to fetch CMAB data" in ref.reasons[-1]:
            STATS["error decisions"] += 1
        if any("not in CMAB experiment" in r for r in ref.reasons):
            STATS["skipped by CMAB traffic"] += 1
        if any("CMAB cache hit" in r for r in ref.reasons):
            STATS["cache hits"] += 1
        if any("CMAB cache attributes mismatch" in r for r in ref.reasons):
            STATS["cache mismatches"] += 1
        self.compare_side_effects(f"decide({user_id!r}, {flag!r}, {options})")

    def decide_all(self, user_id: str, attributes: Dict[str, Any], options: List[str]) -> None:
        ref = self.ref.create_user_context(user_id, dict(attributes)).decide_all(list(options))
        ours = self.ours.create_user_context(user_id, dict(attributes)).decide_all(list(options))
        self.compare(f"decide_all({user_id!r}, {options})", {k: as_dict(v) for k, v in ref.items()},
                     {k: as_dict(v) for k, v in ours.items()})
        self.compare(f"decide_all({user_id!r}, {options}) keys", list(ref), list(ours))
        STATS["decide_all"] += 1
        self.compare_side_effects(f"decide_all({user_id!r}, {options})")

    def activate(self, user_id: str, attributes: Dict[str, Any], experiment_key: str) -> None:
        ref = self.ref.activate(experiment_key, user_id, dict(attributes))
        ours = self.ours.activate(experiment_key, user_id, dict(attributes))
        self.compare(f"activate({experiment_key!r}, {user_id!r})", ref, ours)
        STATS["activate"] += 1
        self.compare_side_effects(f"activate({experiment_key!r}, {user_id!r})")


def as_dict(d: Any) -> dict:
    return {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key,
            "rule_key": d.rule_key, "variables": d.variables, "reasons": list(d.reasons)}


def cmab_datafile(seed: int, server: PredictionServer) -> dict:
    df = generate_datafile(seed, cmab=True)
    for experiment_ in df["experiments"] + [e for g in df["groups"] for e in g["experiments"]]:
        server.variations[experiment_["id"]] = [v["id"] for v in experiment_["variations"]]
    return df


def cmab_experiment_keys(df: dict) -> List[str]:
    return [e["key"] for e in df["experiments"] + [e for g in df["groups"] for e in g["experiments"]]
            if e.get("cmab")]


def changed(attributes: Dict[str, Any], df: dict, salt: int) -> Dict[str, Any]:
    """The attributes with one CMAB attribute's value changed (or added)."""
    keys = {a["id"]: a["key"] for a in df["attributes"]}
    cmab_keys = [keys[i] for e in df["experiments"] + [e for g in df["groups"] for e in g["experiments"]]
                 for i in (e.get("cmab") or {}).get("attributeIds", []) if i in keys]
    if not cmab_keys:
        return attributes
    out = dict(attributes)
    key = cmab_keys[salt % len(cmab_keys)]
    out[key] = ["x", 1, 2.5, True, None, "changed-%d" % salt][salt % 6]
    return out


def report(mismatches: List[str]) -> None:
    if mismatches:
        pytest.fail(f"{len(mismatches)} mismatches (first ones):\n" + "\n".join(mismatches[:12]), pytrace=False)


# ---------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_cmab_decisions_equal_reference(seed: int, server: PredictionServer) -> None:
    server.mode = "mixed"
    df = cmab_datafile(seed, server)
    run = Run(seed, server, df)
    try:
        flags = [f["key"] for f in df["featureFlags"]]
        users = list(generate_users(seed, df, N_USERS))
        cmab_keys = cmab_experiment_keys(df)
        for index, (user_id, attributes) in enumerate(users):
            for position, flag in enumerate(flags):
                run.decide(user_id, attributes, flag, OPTION_SETS[(index + position) % len(OPTION_SETS)])
            run.decide_all(user_id, attributes, [IR] if index % 2 else [EFO, IR])
            if cmab_keys and index % 3 == 0:
                run.activate(user_id, attributes, cmab_keys[index % len(cmab_keys)])
        # Round two: the cache answers (hits), or sees changed attributes (mismatches).
        for index, (user_id, attributes) in enumerate(users[: max(1, len(users) // 2)]):
            attrs = changed(attributes, df, index) if index % 2 else attributes
            for flag in flags:
                run.decide(user_id, attrs, flag, [IR])
            run.decide_all(user_id, attrs, [])
    finally:
        run.close()
    report(run.mismatches)


@pytest.mark.parametrize("mode", ["ok", "error"])
def test_cmab_all_ok_or_all_failing(mode: str, server: PredictionServer) -> None:
    """The service always answering, or always failing (every CMAB decision an error decision)."""
    server.mode = mode
    mismatches: List[str] = []
    try:
        for seed in SEEDS[:4]:
            df = cmab_datafile(seed, server)
            run = Run(seed, server, df)
            try:
                for index, (user_id, attributes) in enumerate(generate_users(seed, df, 8)):
                    for flag in [f["key"] for f in df["featureFlags"]]:
                        run.decide(user_id, attributes, flag, [] if index % 2 else [IR])
                    run.decide_all(user_id, attributes, [EFO])
            finally:
                run.close()
            mismatches += run.mismatches
    finally:
        server.mode = "mixed"
    report(mismatches)


def _single_cmab_datafile(traffic: int = 10000) -> dict:
    return {
        "version": "4", "rollouts": [], "typedAudiences": [], "anonymizeIP": False, "projectId": "1",
        "variables": [], "featureFlags": [{"experimentIds": ["100"], "rolloutId": "", "variables": [
            {"id": "900", "key": "v", "type": "string", "defaultValue": "default"}], "id": "10", "key": "flag_cmab"}],
        "experiments": [{"status": "Running", "audienceConditions": [], "audienceIds": [], "variations": [
            {"variables": [{"id": "900", "value": "A"}], "id": "201", "key": "a", "featureEnabled": True},
            {"variables": [{"id": "900", "value": "B"}], "id": "202", "key": "b", "featureEnabled": True}],
            "forcedVariations": {}, "key": "exp_cmab", "layerId": "1000", "trafficAllocation": [],
            "id": "100", "cmab": {"attributeIds": ["300", "301"], "trafficAllocation": traffic}}],
        "audiences": [], "groups": [], "attributes": [{"id": "300", "key": "country"}, {"id": "301", "key": "age"}],
        "botFiltering": False, "accountId": "1", "events": [], "revision": "1", "sendFlagDecisions": True,
        "integrations": [],
    }


def test_cmab_timeout(server: PredictionServer) -> None:
    """A service slower than the request timeout: both sides try twice and give the error decision. The
    reference's timeout (10 s, not configurable) is shortened to 1 s for the test; ours is the option."""
    df = _single_cmab_datafile()
    server.variations["100"] = ["201", "202"]
    server.mode, server.delay_s = "ok", 1.5
    defaults = reference_cmab_client.DefaultCmabClient.fetch_decision.__defaults__
    reference_cmab_client.DefaultCmabClient.fetch_decision.__defaults__ = (1.0,)
    run = Run(-1, server, df)
    run.ours.close()
    run.ours = make_ours(json.dumps(df), server, run.our_rec, cmab_request_timeout_ms=1000)
    try:
        run.decide("slow-user", {"country": "nl", "age": 30}, "flag_cmab", [])
        assert STATS["error decisions"] > 0
    finally:
        reference_cmab_client.DefaultCmabClient.fetch_decision.__defaults__ = defaults
        server.mode, server.delay_s = "mixed", 0.0
        run.close()
    report(run.mismatches)


def test_cmab_cache_options_sequence(server: PredictionServer) -> None:
    """One user through every cache option in turn, attributes changing and coming back."""
    df = _single_cmab_datafile()
    server.variations["100"] = ["201", "202"]
    server.mode = "ok"
    run = Run(-2, server, df)
    try:
        steps = [
            ({"country": "nl", "age": 30}, [IR]), ({"country": "nl", "age": 30}, [IR]),
            ({"country": "de", "age": 30}, [IR]), ({"country": "de", "age": 30, "other": 1}, [IR]),
            ({"country": "de", "age": 30}, [IGNORE, IR]), ({"country": "de", "age": 30}, [IR]),
            ({"country": "de", "age": 30}, [INVALIDATE, IR]), ({"country": "de", "age": 30}, [RESET, IR]),
            ({"country": "de", "age": 30}, [RESET, INVALIDATE, IGNORE, IR]), ({"country": "de"}, [IR]),
            ({"country": "de", "age": 30.0}, [IR]), ({"country": "de", "age": True}, [IR]),
            ({"age": None, "country": "de"}, [IR]), ({}, [IR]), ({}, []),
        ]
        for user in ("cache-user", "other-user"):
            for attributes, options in steps:
                run.decide(user, attributes, "flag_cmab", options)
    finally:
        server.mode = "mixed"
        run.close()
    report(run.mismatches)


def test_cmab_cache_size_zero_and_timeout_option(server: PredictionServer) -> None:
    """Our cache options: size 0 asks every time; a timeout of 1 s asks again after it."""
    df = _single_cmab_datafile()
    server.variations["100"] = ["201", "202"]
    server.mode = "ok"
    try:
        for options, pause, expected in (({"cmab_cache_size": 0}, 0.0, 3), ({"cmab_cache_timeout_s": 1}, 1.2, 2),
                                         ({}, 0.0, 1)):
            before = len(server.requests["ours"])
            with make_ours(json.dumps(df), server, RecordingDispatcher(), **options) as client:
                user = client.create_user_context("u", {"country": "nl"})
                user.decide("flag_cmab")
                time.sleep(pause)
                user.decide("flag_cmab")
                if expected != 2:
                    user.decide("flag_cmab")
            assert len(server.requests["ours"]) - before == expected, options
    finally:
        server.mode = "mixed"


def test_cmab_traffic_zero_sends_nothing(server: PredictionServer) -> None:
    """A CMAB rule with trafficAllocation 0: the user is skipped by traffic, no request is made."""
    df = _single_cmab_datafile(traffic=0)
    run = Run(-3, server, df)
    try:
        for user in ("a", "b", "c"):
            run.decide(user, {"country": "nl"}, "flag_cmab", [IR])
        assert len(server.requests["ours"]) == run.our_requests
    finally:
        run.close()
    report(run.mismatches)


def test_concurrent_decisions_ask_once(server: PredictionServer) -> None:
    """Decisions of one user and rule are serialized (as the reference's lock stripes): eight threads deciding
    the same user at once make one request, and all get its variation and UUID."""
    df = _single_cmab_datafile()
    server.variations["100"] = ["201", "202"]
    server.mode, server.delay_s = "ok", 0.3
    try:
        rec = RecordingDispatcher()
        with make_ours(json.dumps(df), server, rec) as client:
            before = len(server.requests["ours"])
            results: List[Any] = []
            threads = [threading.Thread(target=lambda: results.append(
                client.create_user_context("same-user", {"country": "nl"}).decide("flag_cmab")))
                for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len(server.requests["ours"]) - before == 1
            assert len({r.variation_key for r in results}) == 1 and results[0].variation_key in ("a", "b")
            client.flush()
            uuids = {d["metadata"].get("cmab_uuid") for e in rec.events
                     for v in normalize_event(e)[0]["params"]["visitors"] for s in v["snapshots"] for d in s["decisions"]}
            assert len(uuids) == 1 and UUID_RE.fullmatch(next(iter(uuids)) or "")
    finally:
        server.mode, server.delay_s = "mixed", 0.0


def test_dropin_settings_endpoint(server: PredictionServer) -> None:
    """The drop-in takes the reference's settings.cmab_prediction_endpoint ("{}" for the rule id)."""
    from experiment import optimizely as dropin
    df = _single_cmab_datafile()
    server.variations["100"] = ["201", "202"]
    server.mode = "ok"
    try:
        before = len(server.requests["ours"])
        client = dropin.Optimizely(datafile=json.dumps(df), settings=OptimizelySdkSettings(
            odp_disabled=True, cmab_prediction_endpoint=server.url("ours", "{}")))
        try:
            decision = client.create_user_context("dropin-user", {"country": "nl"}).decide(
                "flag_cmab", [dropin.OptimizelyDecideOption.INCLUDE_REASONS,
                              dropin.OptimizelyDecideOption.IGNORE_CMAB_CACHE])
        finally:
            client.close()
        assert decision.variation_key in ("a", "b")
        assert any(r.startswith("Ignoring CMAB cache") for r in decision.reasons)
        assert server.requests["ours"][before][0] == "predict/100"
    finally:
        server.mode = "mixed"


def test_cmab_coverage() -> None:
    """The comparisons of this module really went through every CMAB path (runs last, in file order)."""
    if STATS["decide"] == 0:
        pytest.skip("the differential runs were deselected")
    print("\nCMAB differential:", dict(STATS))
    for what in ("error decisions", "skipped by CMAB traffic", "cache hits", "cache mismatches",
                 "impressions with cmab_uuid", "prediction requests compared"):
        assert STATS[what] > 0, f"no {what} in the CMAB differential runs: {dict(STATS)}"
