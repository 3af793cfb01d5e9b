#!/usr/bin/env python3
"""Replays tests/vectors/cases through experiment.optimizely, the optimizely-sdk drop-in, with the very call
shapes generate.py used on the reference. Prints `N passed, N failed`; exits 1 on any failure.

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 tests/vectors/run_python_dropin.py [case.json ...]
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vectors import (CapturingDispatcher, NotificationRecorder, attributes_of, decision_json,  # noqa: E402
                     decisions_json, main_guard, replay, tags_of)

from experiment.optimizely import Optimizely, OptimizelyUserContext, enums  # noqa: E402

_SILENT = logging.getLogger("vectors.dropin")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
_SILENT.setLevel(logging.CRITICAL + 10)


def make_client(case: dict, text: str, dispatcher: CapturingDispatcher, recorder: NotificationRecorder) -> Any:
    client = Optimizely(datafile=text, event_dispatcher=dispatcher, logger=_SILENT,
                        default_decide_options=list(case["client"]["default_decide_options"]))
    client.notification_center.add_notification_listener(enums.NotificationTypes.DECISION, recorder.on_decision)
    client.notification_center.add_notification_listener(enums.NotificationTypes.TRACK, recorder.on_track)
    return client


def user_context(client: Any, call: dict) -> Any:
    context = client.create_user_context(call["user_id"], attributes_of(call))
    for forced in call.get("forced_decisions", []):
        context.set_forced_decision(
            OptimizelyUserContext.OptimizelyDecisionContext(forced["flag_key"], forced["rule_key"]),
            OptimizelyUserContext.OptimizelyForcedDecision(forced["variation_key"]))
    return context


def feature_variable(client: Any, call: dict, _d: Any) -> Any:
    accessor = call["variable_type"]
    method = getattr(client, "get_feature_variable" + (f"_{accessor}" if accessor else ""))
    return method(call["feature_key"], call["variable_key"], call["user_id"], attributes_of(call))


CALLS: Dict[str, Any] = {
    "decide": lambda c, call, _d: decision_json(user_context(c, call).decide(call["flag_key"], call["options"])),
    "decide_all": lambda c, call, _d: decisions_json(user_context(c, call).decide_all(call["options"])),
    "decide_for_keys": lambda c, call, _d: decisions_json(user_context(c, call).decide_for_keys(
        call["keys"], call["options"])),
    "activate": lambda c, call, _d: c.activate(call["experiment_key"], call["user_id"], attributes_of(call)),
    "get_variation": lambda c, call, _d: c.get_variation(call["experiment_key"], call["user_id"],
                                                         attributes_of(call)),
    "is_feature_enabled": lambda c, call, _d: c.is_feature_enabled(call["feature_key"], call["user_id"],
                                                                   attributes_of(call)),
    "get_enabled_features": lambda c, call, _d: c.get_enabled_features(call["user_id"], attributes_of(call)),
    "get_feature_variable": feature_variable,
    "get_all_feature_variables": lambda c, call, _d: c.get_all_feature_variables(
        call["feature_key"], call["user_id"], attributes_of(call)),
    "set_forced_variation": lambda c, call, _d: c.set_forced_variation(call["experiment_key"], call["user_id"],
                                                                       call["variation_key"]),
    "get_forced_variation": lambda c, call, _d: c.get_forced_variation(call["experiment_key"], call["user_id"]),
    "track": lambda c, call, _d: c.track(call["event_key"], call["user_id"], attributes_of(call), tags_of(call)),
}


def run(argv: list) -> int:
    return replay("python drop-in", make_client, CALLS, lambda c: c.close(), argv)


if __name__ == "__main__":
    main_guard(run)
