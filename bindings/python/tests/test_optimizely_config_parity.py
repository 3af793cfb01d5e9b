"""get_optimizely_config() of the drop-in (the library's OptimizelyConfig document, wrapped) equals
optimizely-sdk 5.7.0's, field by field as nested dicts, for every datafile the suite has: the checked-in ones
and the differential fuzzer's generated (and mutated) datafiles: seeds 0..149 by default, more with
CONFIG_PARITY_SEEDS=2000 (3,327 datafiles the reference accepts)."""

from __future__ import annotations

import glob
import json
import logging
import os
import sys
from typing import Any, List, Tuple

sys.path.insert(0, os.path.dirname(__file__))

import difffuzz  # noqa: E402
from apifuzz import plain  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402

from optimizely import optimizely as reference  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402

from experiment import optimizely as dropin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SEEDS = range(int(os.environ.get("CONFIG_PARITY_SEEDS", "150")))
_SILENT = logging.getLogger("config-parity")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def checked_in() -> List[Tuple[str, str]]:
    paths = sorted(glob.glob(os.path.join(HERE, "data", "*.json"))
                   + glob.glob(os.path.join(ROOT, "examples", "datafiles", "*.json")))
    return [(os.path.relpath(p, ROOT), open(p, encoding="utf-8").read()) for p in paths]


def generated(seed: int) -> List[Tuple[str, str]]:
    base = generate_datafile(seed)
    mutated = difffuzz.apply_mutations(base, difffuzz.mutate(seed, base))
    return [(f"seed {seed}", json.dumps(base)), (f"seed {seed} mutated", json.dumps(mutated))]


def reference_config(text: str) -> Any:
    try:
        client = reference.Optimizely(datafile=text, logger=_SILENT, settings=OptimizelySdkSettings(odp_disabled=True))
        return client.get_optimizely_config() if client.is_valid else None
    except Exception:  # a datafile its OptimizelyConfig raises on: the drop-in's refuses it too (acceptance tests)
        return "raised"


def dropin_config(text: str) -> Any:
    client = dropin.Optimizely(datafile=text, logger=_SILENT)
    try:
        return client.get_optimizely_config()
    finally:
        client.close()


def compare(name: str, text: str, differing: List[str]) -> bool:
    """Whether both configs were made (a name differing from the reference is added to `differing`)."""
    ours_config = dropin_config(text)
    theirs_config = reference_config(text)
    if theirs_config is None or theirs_config == "raised" or ours_config is None:
        return False
    if plain(ours_config) != plain(theirs_config) or ours_config.get_datafile() != theirs_config.get_datafile():
        differing.append(name)
    return True


def test_checked_in_datafiles_give_the_reference_config() -> None:
    differing: List[str] = []
    compared = [name for name, text in checked_in() if compare(name, text, differing)]
    assert differing == []
    assert len(compared) == len(checked_in())


def test_generated_datafiles_give_the_reference_config() -> None:
    differing: List[str] = []
    compared = sum(compare(name, text, differing) for seed in SEEDS for name, text in generated(seed))
    print(f"{compared} generated datafiles compared with the reference; differing: {differing}")
    assert differing == []
    assert compared >= len(SEEDS)


def test_native_client_gives_the_same_config() -> None:
    import experiment
    name, text = checked_in()[0]
    with experiment.Client(datafile=text, keep_datafile=True, profile_store="none") as client:
        assert plain(client.get_optimizely_config()) == plain(dropin_config(text)), name
    with experiment.Client(datafile=text, profile_store="none") as client:
        try:
            client.get_optimizely_config()
        except experiment.Error as error:  # the text is not kept: NotFoundError
            assert "keep_datafile" in str(error)
        else:
            raise AssertionError("expected an error without keep_datafile")
