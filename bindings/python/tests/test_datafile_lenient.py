"""Acceptance is the reference's (issue 15 item 1): a datafile is refused only where optimizely-sdk 5.7.0
refuses it (not JSON, its JSON schema, an unsupported version, a config construction that raises), and
everything else is accepted and decided as the reference decides it, the oddity kept as a warning.

Each case is one finding of the differential fuzzer (bindings/python/tests/difffuzz_findings.md): the
seed's generated datafile with the minimized mutation. The whole differential comparison of difffuzz runs
on it (acceptance, then decide with reasons, decide_all, get_variation, activate, track and their event
payloads for the seed's users) and must find no difference; the warning must name the mutated place.
Before this work every one of them was refused ("expected a string, got ...", "an empty condition list
cannot be evaluated").
"""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difffuzz  # noqa: E402
import experiment  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402

USERS = 6


def _set(path, value):
    return {"kind": "lenient", "op": "set", "path": path, "value": value}


# (seed, the minimized mutation, the place the warning names)
ACCEPTED = [
    (318, _set(["rollouts", 0, "experiments", 2, "status"], 1), "rollouts[0].experiments[2].status"),
    (1798, _set(["rollouts", 0, "experiments", 1, "layerId"], 827982857.0), "rollouts[0].experiments[1].layerId"),
    (2820, _set(["rollouts", 1, "experiments", 0, "key"], None), "rollouts[1].experiments[0].key"),
    (189, _set(["rollouts", 4, "experiments", 0, "variations", 0, "id"], 43638051),
     "rollouts[4].experiments[0].variations[0].id"),
    (335, _set(["rollouts", 4, "experiments", 0, "trafficAllocation"], {}),
     "rollouts[4].experiments[0].trafficAllocation"),
    (1227, _set(["rollouts", 2, "experiments", 0, "forcedVariations"], 0),
     "rollouts[2].experiments[0].forcedVariations"),
    (3429, _set(["rollouts", 3, "experiments", 2, "audienceIds"], 1.5), "rollouts[3].experiments[2].audienceIds"),
    (2186, _set(["rollouts", 0, "experiments", 1, "variations", 0, "variables"], 0),
     "rollouts[0].experiments[1].variations[0].variables"),
    (543, _set(["featureFlags", 5, "variables", 2, "id"], True), "featureFlags[5].variables[2].id"),
    (223, _set(["featureFlags", 3, "variables", 2, "type"], []), "featureFlags[3].variables[2].type"),
    (2162, _set(["featureFlags", 5, "variables", 1, "subType"], False), "featureFlags[5].variables[1].subType"),
    (3146, _set(["featureFlags", 0, "id"], 461900259.0), "featureFlags[0].id"),
    (807, _set(["featureFlags", 1, "rolloutId"], {}), "featureFlags[1].rolloutId"),
    (1215, _set(["featureFlags"], {}), "featureFlags"),
    (3297, _set(["holdouts"], {}), "holdouts"),
    (2135, _set(["holdouts", 1, "status"], None), "holdouts[1].status"),
    (1495, _set(["localHoldouts", 2, "status"], 1), "localHoldouts[2].status"),
    (2581, _set(["localHoldouts", 1, "key"], -1), "localHoldouts[1].key"),
    (4930, _set(["localHoldouts", 0, "id"], 3000000001), "localHoldouts[0].id"),
    (1101, _set(["localHoldouts", 1, "trafficAllocation"], 1.5), "localHoldouts[1].trafficAllocation"),
    (2579, _set(["localHoldouts", 1, "includedRules", 2], 795404740.0), "localHoldouts[1].includedRules[2]"),
    (1848, _set(["typedAudiences", 2, "id"], True), "typedAudiences[2].id"),
    (1569, _set(["region"], False), None),   # (false is "no region": US, nothing to report)
    (1584, _set(["experiments", 8, "forcedVariations", "ü-whitelisted"], {}),
     "experiments[8].forcedVariations.ü-whitelisted"),
    (1636, _set(["experiments", 2, "audienceConditions", 2], None), "experiments[2].audienceConditions[2]"),
    (166, _set(["groups", 0, "experiments", 1, "audienceConditions", 1], None),
     "groups[0].experiments[1].audienceConditions[1]"),
    (2456, _set(["rollouts", 0, "experiments", 0, "audienceConditions", 2, 1, 2], None),
     "rollouts[0].experiments[0].audienceConditions[2][1][2]"),
    (3401, _set(["audiences", 6, "conditions"], "[]"), "audiences[6].conditions"),
    (1650, _set(["audiences", 7, "conditions"],
                '["AND", {"match": "exists", "name": "browser_20fef", "type": "custom_attribute"}]'),
     "audiences[7].conditions[0]"),
    (20, _set(["typedAudiences", 0, "conditions"], [["not"], "and", None, 2.5]), "typedAudiences[0].conditions[1]"),
    # A typed audience replaces this plain one (same id): neither SDK parses its conditions, so no warning.
    (1310, _set(["audiences", 4, "conditions"],
                '["and", ["or", {"match": "exact", "name": "$opt_dummy_attribute", "type": "custom_attribute", '
                '"value": "$opt_dummy_value"}], []]'), None),
    # An integer or boolean among an audience's conditions: the reference's decoder has turned every condition
    # object into its index in the audience's condition list, so the number is such an index (once refused).
    (1650, _set(["audiences", 7, "conditions"], '["or", 0, {"match": "exists", "name": "b", "type": "custom_attribute"}]'),
     "audiences[7].conditions[1]"),
    (20, _set(["typedAudiences", 0, "conditions"], ["or", True]), "typedAudiences[0].conditions[1]"),
    (20, _set(["typedAudiences", 0, "conditions"],
               ["and", -1, {"match": "gt", "name": "n", "type": "custom_attribute", "value": {"x": 1}},
                {"match": "exists", "name": "b", "type": "custom_attribute"}]), "typedAudiences[0].conditions[1]"),
    (20, _set(["typedAudiences", 0, "conditions"], [0, 1, False]), "typedAudiences[0].conditions[0]"),
    (20, _set(["typedAudiences", 0, "conditions"], 2), "typedAudiences[0].conditions"),
    # A rollout rule's or holdout's range the reference's bucketer raises on when it gets there (once refused):
    # the buckets before it are decided as the reference decides them.
    (20, {"kind": "lenient", "op": "insert", "path": ["rollouts", 1, "experiments", 0, "trafficAllocation", 1],
          "value": "junk"}, "rollouts[1].experiments[0].trafficAllocation[1]"),
    (7, {"kind": "lenient", "op": "insert", "path": ["rollouts", 3, "experiments", 0, "trafficAllocation", 1],
         "value": {"entityId": "x", "endOfRange": [1]}}, "rollouts[3].experiments[0].trafficAllocation[1]"),
    (7, {"kind": "lenient", "op": "insert", "path": ["rollouts", 5, "experiments", 2, "trafficAllocation", 2],
         "value": 5}, "rollouts[5].experiments[2].trafficAllocation[2]"),
    # A flag's experimentIds given as text: Python iterates its characters (once refused).
    (20, _set(["featureFlags", 0, "experimentIds"], ""), "featureFlags[0].experimentIds"),
    (5986, _set(["featureFlags", 0, "experimentIds"], {}), "featureFlags[0].experimentIds"),  # difffuzz seed 5986
    # A flag's variables given as an empty object or string: Python iterates nothing (once refused).
    (11576, _set(["featureFlags", 0, "variables"], {}), "featureFlags[0].variables"),  # difffuzz seed 11576
    (11576, _set(["featureFlags", 0, "variables"], ""), "featureFlags[0].variables"),
    # A typed audience's name that is no string, where no rule's conditions are written out with it (once refused).
    (33, _set(["typedAudiences", 2, "name"], 5), "typedAudiences[2].name"),
    (33, _set(["typedAudiences", 2, "name"], {"a": 1}), "typedAudiences[2].name"),
]

# What the reference's JSON schema or config construction refuses: (seed, mutation, our message).
REFUSED = [
    (20, _set(["featureFlags", 0, "experimentIds"], "12"), r'featureFlags\[0\]\.experimentIds: unknown experiment "1"'),
    (11576, _set(["featureFlags", 0, "variables"], {"a": 1}), r"featureFlags\[0\]\.variables: expected an array, got an object"),
    (11576, _set(["featureFlags", 0, "variables"], "ab"), r"featureFlags\[0\]\.variables: expected an array, got a string"),
    (3105, _set(["integrations"], None), r"datafile: integrations: expected an array, got null"),
    (675, _set(["integrations"], {}), r"datafile: integrations: expected an array, got an object"),
    (0, _set(["integrations"], [{"key": "odp", "host": None}]), r"integrations\[0\]\.host: expected a string, got null"),
    (98, _set(["holdouts"], None), r"datafile: holdouts: expected an array, got null: the reference iterates it"),
    (329, _set(["localHoldouts", 0], False), r"localHoldouts\[0\]: expected an object, got a boolean"),
    (894, _set(["localHoldouts", 0], '{"id": "3000000005", "includedRules": []}'),
     r"localHoldouts\[0\]: expected an object, got a string"),
    (4, _set(["experiments", 1, "audienceIds", 1], {}), r"experiments\[1\]\.audienceIds\[1\]: expected a string"),
    (1895, _set(["featureFlags", 0, "rolloutId"], 5), r"featureFlags\[0\]\.rolloutId: expected a rollout id .* len\(\)"),
    (616, _set(["featureFlags", 1, "variables", 2, "key"], [1]), r"variables\[2\]\.key: .*cannot hash a list"),
]

def _case(seed, mutation):
    tally = difffuzz.Tally()
    case = difffuzz.Case(seed, USERS, tally, mutations=[mutation])
    return case, tally


@pytest.mark.parametrize("seed,mutation,place", ACCEPTED, ids=[a[2] or "region" for a in ACCEPTED])
def test_accepted_and_decided_as_the_reference(seed, mutation, place):
    case, tally = _case(seed, mutation)
    case.run()
    assert tally.cases.get("mutated datafile, reference accepts") == 1, dict(tally.cases)
    assert not tally.differences, {s: tally.examples[s] for s in tally.differences}
    # Decisions were compared, not only the acceptance; or the reference raised on every call that reached
    # the odd value (its crashes are skipped: any answer of ours is as good as none).
    assert sum(tally.comparisons.values()) > 1 or tally.crashes, dict(tally.comparisons)
    if place is not None:
        experiment.validate_datafile(case.text)   # warnings only: valid
        with experiment.Client(datafile=case.text, profile_store="none") as client:
            warnings = client.datafile_status()["warnings"]
        assert any(w["place"] == place and w["severity"] == "warning" for w in warnings), warnings
    # The drop-in's OptimizelyConfig (computed from the datafile text) does not raise on it either.
    from experiment import optimizely as dropin
    client = dropin.Optimizely(datafile=case.text)
    try:
        assert client.get_optimizely_config() is not None
    finally:
        client.close()


@pytest.mark.parametrize("seed,mutation,message", REFUSED, ids=[r[2][:40] for r in REFUSED])
def test_refused_where_the_reference_refuses(seed, mutation, message):
    text = json.dumps(difffuzz.apply_mutations(generate_datafile(seed), [mutation]))
    reference = difffuzz.make_reference(text, difffuzz.RecordingDispatcher())
    assert not difffuzz.reference_accepts(reference)
    with pytest.raises(experiment.InvalidDatafileError, match=message):
        experiment.Client(datafile=text, profile_store="none")
