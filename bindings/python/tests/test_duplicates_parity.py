"""Repeated entities decide as in optimizely-sdk 5.7.0: the differential fuzzer's seeds whose differences came
from a duplicated id or key, replayed with only their duplicate mutations (the minimized reproductions of
difffuzz_findings.md), every call of the fuzzer compared with the reference.

The reference indexes some lists through maps (the last entry of an id or key wins, at the first one's
place) and walks others as written; these datafiles tell the two apart:

* a rollout repeating a rule id: one rule at the first place with the last definition, so the rules after it
  move up (their numbers in reasons, which one is "Everyone Else", local holdouts on them);
* a variation id repeated inside a rule: the flag's variation for the id (event metadata) is its last definition;
* a variation key repeated inside a rollout's everyone-else rule: a feature rollout ("fr") experiment serves
  the first variation as written, not the one the key map keeps;
* a variation key repeated inside a holdout: the holdout buckets by variation id, so nothing is shadowed;
* a flag key repeated in featureFlags: decide_all decides it once per entry.

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 -m pytest -q bindings/python/tests/test_duplicates_parity.py
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difffuzz  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402

# seed: what its duplicate is (difffuzz_findings.md names the signatures it gave)
SEEDS = {
    655: "a rollout repeats a rule id after the original (Everyone Else moves up)",
    1189: "a rollout repeats a rule id (rule numbers in reasons)",
    1837: "a rollout repeats its first rule id before the original (a local holdout's rule moves up)",
    265: "a rule repeats a variation id (event metadata.variation_key)",
    376: "an everyone-else rule repeats a variation key (the fr experiment's appended variation)",
    1469: "a holdout repeats a variation key (holdout bucketing, decide, decide_all, events)",
    3193: "featureFlags repeats a flag (decide_all decides it twice: its reasons twice, two impressions)",
    3356: "featureFlags repeats a flag key with another flag (decide_all decides the last one twice)",
}


def _duplicate_mutations(seed: int) -> list:
    mutations = [m for m in difffuzz.mutate(seed, generate_datafile(seed)) if m["kind"].startswith("duplicate")]
    assert mutations, f"seed {seed} no longer mutates a duplicate: the generator changed, pick the seeds anew"
    return mutations


@pytest.mark.parametrize("seed", sorted(SEEDS), ids=lambda s: f"seed{s}")
def test_repeated_entities_decide_like_the_reference(seed):
    if difffuzz.experiment is None:
        pytest.fail(f"cannot import the binding `experiment`: {difffuzz.IMPORT_ERROR!r}")
    tally = difffuzz.Tally()
    case = difffuzz.Case(seed, difffuzz.DEFAULT_USERS, tally, mutations=_duplicate_mutations(seed))
    case.run()
    assert tally.cases["mutated datafile, reference accepts"] == 1, tally.cases
    assert sum(tally.comparisons.values()) > 100, tally.comparisons
    assert not tally.differences, (SEEDS[seed], difffuzz.format_report(tally, limit=10, example_width=400))
