"""A traffic range's `entityId` outside the reference's schema (delivery rules, holdouts) is tested with
Python's truth by optimizely-sdk 5.7.0 (`if variation_id:` in its bucketer): a falsy one -- missing, null,
false, 0, 0.0, "", [] or {} -- is an empty range ("Bucketed into an empty traffic range."), any other
value names a variation no id equals (no variation, no such reason). Ours must decide, reason and send
events the same, which the differential fuzzer's whole comparison checks here for every such value.
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difffuzz  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402

SEED = 0
USERS = 8
EMPTY_RANGE = "Bucketed into an empty traffic range. Returning nil."
FALSY = [[], {}, 0, 0.0, False, "", None]
TRUTHY = [1, True, 2.5, "no_such_variation"]


def _mutations(value):
    """Every range of every delivery rule of the seed's datafile given `value` as its entityId."""
    base = generate_datafile(SEED)
    return [{"kind": "entityId", "op": "set", "path": path + ["trafficAllocation", i, "entityId"], "value": value}
            for path, rule in difffuzz.experiments_of(base) if path[0] == "rollouts"
            for i in range(len(rule.get("trafficAllocation", [])))]


def _reference_reasons(case):
    """Every reason of the reference's decide_all for the case's users."""
    reference = difffuzz.make_reference(case.text, difffuzz.RecordingDispatcher())
    try:
        reasons = []
        for user_id, attrs in difffuzz.fuzz_users(SEED, case.base, USERS):
            for decision in reference.create_user_context(user_id, dict(attrs)).decide_all(
                    ["INCLUDE_REASONS"]).values():
                reasons += decision.reasons
        return reasons
    finally:
        reference.close()


@pytest.mark.parametrize("value", FALSY + TRUTHY, ids=repr)
def test_entity_id_is_tested_with_python_truth_as_the_reference(value):
    mutations = _mutations(value)
    assert mutations
    tally = difffuzz.Tally()
    case = difffuzz.Case(SEED, USERS, tally, mutations=mutations)
    case.run()
    assert tally.cases["mutated datafile, reference accepts"] == 1, dict(tally.cases)
    assert tally.comparisons["decide"] > 0, dict(tally.comparisons)
    assert not tally.differences, {s: tally.examples[s] for s in tally.differences}
    # the test reaches the case it is about: the reference itself reports an empty range exactly for falsy ids
    assert (EMPTY_RANGE in _reference_reasons(case)) == (value in FALSY), value
