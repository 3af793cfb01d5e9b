"""The differential fuzzer's fixed-seed slice: mutated datafiles and users of every Python type must get
the same answers from our library as from optimizely-sdk 5.7.0 (see difffuzz.py for what is compared).

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 -m pytest -q bindings/python/tests/test_difffuzz.py

The slice is difffuzz.DEFAULT_SEEDS (at least 20,000 comparisons); DIFFFUZZ_REPORT=out.json also writes
the full report.  A failure lists every difference signature with its count and a minimized example;
`python3 bindings/python/tests/difffuzz.py --replay SEED` prints every difference of one seed.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difffuzz  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402

SLICE = range(*difffuzz.DEFAULT_SEEDS)
MIN_COMPARISONS = 20_000


@pytest.fixture(scope="module")
def slice_run():
    if difffuzz.experiment is None:
        pytest.fail(f"cannot import the binding `experiment` (EXPERIMENT_LIBRARY="
                    f"{os.environ.get('EXPERIMENT_LIBRARY')!r}): {difffuzz.IMPORT_ERROR!r}")
    started = time.time()
    tally = difffuzz.run(SLICE, difffuzz.DEFAULT_USERS)
    seconds = time.time() - started
    if tally.examples:
        difffuzz.minimize_examples(tally, 15)      # the most frequent signatures, shrunk
    report = os.environ.get("DIFFFUZZ_REPORT")
    if report:
        difffuzz.write_report(report, tally, SLICE, seconds, difffuzz.DEFAULT_USERS)
    print("\n" + difffuzz.summary_line(tally, SLICE, seconds))
    return tally


def test_the_slice_compares_enough_and_both_acceptance_outcomes(slice_run):
    tally = slice_run
    assert tally.total_comparisons >= MIN_COMPARISONS, tally.comparisons
    # the mutated datafiles are accepted by the reference and refused by it (both paths are exercised),
    # and the accepted ones are decided for
    assert tally.cases["mutated datafile, reference accepts"] >= 20, tally.cases
    assert tally.cases["mutated datafile, reference refuses"] >= 10, tally.cases
    for op in ("decide", "decide_all", "get_variation", "activate", "event payload", "decide(unknown flag)",
               "get_variation(unknown key)"):
        assert tally.comparisons[op] > 0, (op, tally.comparisons)


def test_no_difference_from_the_reference(slice_run):
    tally = slice_run
    if tally.differences:
        pytest.fail(f"{tally.total_differences:,} differences from optimizely-sdk 5.7.0 in "
                    f"{tally.total_comparisons:,} comparisons (seeds {SLICE.start}:{SLICE.stop}), grouped by "
                    f"signature, each with its first example (minimized: only the mutations and attributes it "
                    f"needs):\n" + difffuzz.format_report(tally, limit=80, example_width=900), pytrace=False)


def test_a_seed_names_one_case():
    """The same seed gives the same mutations, datafile text, users and results."""
    for seed in (3, 17):
        base = generate_datafile(seed)
        first, second = difffuzz.mutate(seed, base), difffuzz.mutate(seed, base)
        assert first == second
        a = difffuzz.Case(seed, 4, difffuzz.Tally())
        b = difffuzz.Case(seed, 4, difffuzz.Tally(), mutations=json.loads(json.dumps(first)))
        assert a.text == b.text      # a report's mutations replay to the same datafile
        assert repr(difffuzz.fuzz_users(seed, base, 30)) == repr(difffuzz.fuzz_users(seed, base, 30))


def test_every_mutator_applies_to_a_generated_datafile():
    import random
    df = generate_datafile(5)
    for mutator, _weight in difffuzz.MUTATORS:
        produced = [mutator(df, random.Random(f"{mutator.__name__}-{i}")) for i in range(20)]
        ops = [op for ops in produced for op in ops]
        assert ops, mutator.__name__
        for op in ops:
            changed = difffuzz.apply_mutations(df, [op])
            assert json.dumps(changed) != json.dumps(df) or op["op"] == "set", (mutator.__name__, op)


def test_reference_crashes_are_counted_not_compared():
    """A datafile on which the reference raises (a dict inside an experiment's audienceConditions:
    datafile_generator.REFERENCE_CRASHES) is a case without an answer: counted apart, nothing compared."""
    seed = 0
    base = generate_datafile(seed)
    path = next(p for p, e in difffuzz.experiments_of(base))
    mutation = {"kind": "dict in audienceConditions", "op": "set", "path": path + ["audienceConditions"],
                "value": ["or", {"id": "1"}]}
    tally = difffuzz.Tally()
    difffuzz.Case(seed, 2, tally, mutations=[mutation]).run()
    assert sum(tally.crashes.values()) == 1, tally.crashes
    assert next(iter(tally.crashes)).startswith("accept: TypeError"), tally.crashes
    assert tally.total_comparisons == 0 and not tally.differences


def test_no_datafile_the_reference_accepts_is_refused(slice_run):
    """Ours refuses no datafile of the slice that the reference accepts, except where the reference raises
    as soon as the case's users decide (counted apart, README "Deliberate differences"): an integer among an
    audience's conditions and a rollout rule's range that is no object are accepted and decided (they were
    refused on purpose before; test_datafile_lenient.py replays them)."""
    tally = slice_run
    assert not [s for s in tally.differences if s.startswith("accept: reference accepts, ours refuses")], \
        {s: tally.examples[s] for s in tally.differences}
    assert tally.cases["mutated datafile, reference accepts"] > 0, tally.cases


def test_keys_handed_out_as_text_are_apart_only_when_exactly_the_documented_text():
    """README "Deliberate differences": a variation, flag or variable key that is a number, boolean or null
    is handed out as Python's str() of it (the reference: the value). The fuzzer counts that apart, and only
    that: a wrong text, a string where the datafile has none, or another type stays a difference."""
    assert difffuzz.documented_key_text(-1) == "-1"
    assert difffuzz.documented_key_text(None) == "None"
    assert difffuzz.documented_key_text(True) == "True"
    assert difffuzz.documented_key_text(2.5) == "2.5"
    assert difffuzz.documented_key_text("k") is None and difffuzz.documented_key_text({}) is None
    assert difffuzz.is_documented_key_text(-1, "-1")
    assert not difffuzz.is_documented_key_text(-1, "-1.0")      # a wrong text
    assert not difffuzz.is_documented_key_text(-1, -1.0)        # not a string
    assert not difffuzz.is_documented_key_text(None, "null")    # JSON's spelling, not str()'s
    assert not difffuzz.is_documented_key_text(True, "true")
    assert not difffuzz.is_documented_key_text("k", "k")        # a string key is no deliberate difference
    renamed, count = difffuzz.keys_as_documented_text({-1: 1, None: 2, "a": 3}, {"-1": 1, "none": 2, "a": 3})
    assert renamed == {"-1": 1, None: 2, "a": 3} and count == 1

    # Through a case: every variation of seed 0's delivery rules keyed -1 (the reference's schema does not
    # check rollout rules), decided by both engines: apart, never a difference.
    seed = 0
    base = generate_datafile(seed)
    mutations = [{"kind": "retype str->int", "op": "set", "path": path + ["variations", i, "key"], "value": -1}
                 for path, rule in difffuzz.experiments_of(base) if path[0] == "rollouts"
                 for i in range(len(rule.get("variations", [])))]
    assert mutations
    tally = difffuzz.Tally()
    difffuzz.Case(seed, 6, tally, mutations=mutations).run()
    assert not tally.differences, {s: tally.examples[s] for s in tally.differences}
    assert tally.deliberate["decide variation_key: " + difffuzz.DELIBERATE_KEY_TEXT] > 0, tally.deliberate

    # The classifier on one decision: ours "-1" for the reference's -1 is apart; a wrong value of ours
    # (what a library answering "-1.0", -1 or a string the datafile has no key for would give) is a difference.
    from types import SimpleNamespace
    reference = {"flag_key": "f", "enabled": True, "variation_key": -1, "rule_key": "r", "variables": {"v": 1},
                 "reasons": []}
    for ours_key, differs in (("-1", False), ("-1.0", True), (-1.0, True), ("-2", True)):
        tally = difffuzz.Tally()
        case = difffuzz.Case(seed, 0, tally, mutations=mutations)
        ours = SimpleNamespace(**{**reference, "variation_key": ours_key})
        case.compare_decision("decide", reference, ours)
        assert bool(tally.differences) == differs, (ours_key, tally.differences)
        assert bool(tally.deliberate) != differs, (ours_key, tally.deliberate)
    # a variables dict keyed by the reference's None: ours "None" only where the datafile has such a key
    tally = difffuzz.Tally()
    case = difffuzz.Case(seed, 0, tally, mutations=mutations)      # keys -1 only: "None" is not documented here
    case.compare_decision("decide", {**reference, "variables": {None: 1}},
                          SimpleNamespace(**{**reference, "variables": {"None": 1}}))
    assert tally.differences and not tally.deliberate, (tally.differences, tally.deliberate)
