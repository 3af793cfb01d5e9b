"""decide_all with a flag key listed twice in featureFlags dispatches impressions (and decision
notifications) in the order optimizely-sdk 5.7.0 does: entry by entry in featureFlags order, not the
repeated key's two back to back (issue 35 item 6). Differential against the reference."""

from __future__ import annotations

import copy
import json
from typing import Any, List

import pytest

import experiment

from optimizely import optimizely  # noqa: E402  (the reference SDK: the test fails when it is missing)
from optimizely.event.event_processor import ForwardingEventProcessor  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402


class Recorder:
    def __init__(self) -> None:
        self.events: List[Any] = []

    def dispatch_event(self, event: Any) -> None:
        self.events.append(event)

    def impression_flags(self) -> List[str]:
        """The flag key of every impression, in dispatch order (batches flattened)."""
        flags = []
        for event in self.events:
            params = event.params if hasattr(event, "params") else event["params"]
            for visitor in params.get("visitors", []):
                for snapshot in visitor.get("snapshots", []):
                    for decision in snapshot.get("decisions", []):
                        flags.append(decision["metadata"]["flag_key"])
        return flags


def datafile_repeating_first_flag(datafile_text: str) -> str:
    datafile = json.loads(datafile_text)
    assert len(datafile["featureFlags"]) >= 2
    datafile["featureFlags"].append(copy.deepcopy(datafile["featureFlags"][0]))
    datafile["sendFlagDecisions"] = True  # rollout decisions send impressions too: one per entry
    return json.dumps(datafile)


@pytest.mark.parametrize("user_id", ["user-%d" % n for n in range(12)])
def test_repeated_flag_impressions_follow_feature_flags_order(datafile_text, tmp_path, user_id):
    text = datafile_repeating_first_flag(datafile_text)
    keys = [flag["key"] for flag in json.loads(text)["featureFlags"]]
    reference_events = Recorder()
    reference = optimizely.Optimizely(datafile=text,
                                      event_processor=ForwardingEventProcessor(reference_events),
                                      settings=OptimizelySdkSettings(odp_disabled=True))
    ours_events = Recorder()
    ours = experiment.Client(datafile=text, state_dir=str(tmp_path), event_dispatcher=ours_events)
    try:
        attributes = {"country": "nl", "age": 30}
        expected = reference.create_user_context(user_id, attributes).decide_all()
        answered = ours.create_user_context(user_id, attributes).decide_all()
        ours.flush()
        assert list(answered) == list(expected)
        assert ours_events.impression_flags() == reference_events.impression_flags()
        assert reference_events.impression_flags() == keys  # one per entry, in featureFlags order
    finally:
        ours.close()
        reference.close()
