#!/usr/bin/env python3
"""Replays tests/vectors/cases through the native Python API, experiment.Client: decide / decide_all /
decide_for_keys by user id (through a user context when the call forces decisions, as the native API puts
them there), get_variation, activate, track. The legacy feature calls (is_feature_enabled,
get_enabled_features, get_feature_variable*, get_all_feature_variables) have no native equivalent: they are
counted as "not applicable", never as passed. Prints `N passed, N failed`; exits 1 on any failure.

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 tests/vectors/run_python_native.py [case.json ...]
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vectors import (CapturingDispatcher, NotificationRecorder, attributes_of, decision_json,  # noqa: E402
                     decisions_json, main_guard, private_state_dir, replay, tags_of)

import experiment  # noqa: E402
from experiment.user_context import OptimizelyDecisionContext, OptimizelyForcedDecision  # noqa: E402

_SILENT = logging.getLogger("vectors.native")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
_SILENT.setLevel(logging.CRITICAL + 10)


def make_client(case: dict, text: str, dispatcher: CapturingDispatcher, recorder: NotificationRecorder) -> Any:
    # As the reference ran: no user profile service, ODP off (nothing reaches the network).
    client = experiment.Client(datafile=text, event_dispatcher=dispatcher, profile_store="none",
                               odp={"disabled": True}, state_dir=private_state_dir(), logger=_SILENT, log_level="error",
                               default_decide_options=list(case["client"]["default_decide_options"]))
    client.add_listener("decision", lambda payload: recorder.on_payload("DECISION", payload))
    client.add_listener("track", lambda payload: recorder.on_payload("TRACK", payload))
    return client


def forced_context(client: Any, call: dict) -> Any:
    context = client.create_user_context(call["user_id"], attributes_of(call))
    for forced in call["forced_decisions"]:
        context.set_forced_decision(OptimizelyDecisionContext(forced["flag_key"], forced["rule_key"]),
                                    OptimizelyForcedDecision(forced["variation_key"]))
    return context


def decide(client: Any, call: dict, _d: Any) -> Any:
    if call.get("forced_decisions"):
        return decision_json(forced_context(client, call).decide(call["flag_key"], call["options"]))
    return decision_json(client.decide(call["user_id"], call["flag_key"], attributes_of(call),
                                       tuple(call["options"])))


def decide_all(client: Any, call: dict, _d: Any) -> Any:
    if call.get("forced_decisions"):
        decisions = forced_context(client, call).decide_all(call["options"])
    else:
        decisions = client.decide_all(call["user_id"], attributes_of(call), tuple(call["options"]))
    return decisions_json(decisions)


def decide_for_keys(client: Any, call: dict, _d: Any) -> Any:
    decisions = client.decide_for_keys(call["user_id"], call["keys"], attributes_of(call), tuple(call["options"]))
    return decisions_json(decisions)


def track(client: Any, call: dict, _d: Any) -> Any:
    client.track(call["event_key"], call["user_id"], attributes_of(call), tags_of(call))
    client.flush()
    return None


def set_forced_variation(client: Any, call: dict, _d: Any) -> bool:
    """True when set; the reference's False is the native API's UnknownExperiment / UnknownVariation error."""
    try:
        client.set_forced_variation(call["experiment_key"], call["user_id"], call["variation_key"])
    except (experiment.UnknownExperimentError, experiment.UnknownVariationError):
        return False
    return True


def get_forced_variation(client: Any, call: dict, _d: Any) -> Any:
    try:
        return client.get_forced_variation(call["experiment_key"], call["user_id"])
    except experiment.UnknownExperimentError:
        return None            # the reference's answer for an experiment it does not know


CALLS: Dict[str, Any] = {
    "set_forced_variation": set_forced_variation,
    "get_forced_variation": get_forced_variation,
    "decide": decide,
    "decide_all": decide_all,
    "decide_for_keys": decide_for_keys,
    "activate": lambda c, call, _d: c.activate(call["experiment_key"], call["user_id"], attributes_of(call)),
    "get_variation": lambda c, call, _d: c.get_variation(call["experiment_key"], call["user_id"],
                                                         attributes_of(call)),
    "track": track,
}


def run(argv: list) -> int:
    return replay("python native", make_client, CALLS, lambda c: c.close(), argv, lossy_attributes=True)


if __name__ == "__main__":
    main_guard(run)
