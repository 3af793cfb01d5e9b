"""Starting like the seeds: Client(sdk_key=...) starts fetching, Client(sdk_key, datafile) starts at once and
keeps the datafile fresh, and the Swift SDK's six initialization modes (S1-S3 synchronous, A1-A3
asynchronous) by name, each against a real HTTP server on 127.0.0.1 (test_datafile_lifecycle's)."""

from __future__ import annotations

import asyncio
import ctypes
import time
from typing import Any, List

import pytest

import experiment
from experiment import _native
from test_datafile_lifecycle import (SECOND_MS, Answer, cached_revision, new_key, revision,  # noqa: F401
                                     server, wait_for)


def client(server: Any, tmp_path: Any, key: str, **options: Any) -> experiment.Client:
    options.setdefault("retry_count", 0)
    options.setdefault("request_timeout_ms", 2000)
    return experiment.Client(sdk_key=key, datafile_url_template=server.template(), state_dir=str(tmp_path), **options)


def prime_cache(server: Any, tmp_path: Any, key: str, body: bytes) -> None:
    """A first run that fetched `body`: it is now the cached datafile of `key`."""
    server.serve(key, Answer(body))
    with client(server, tmp_path, key, start="A1") as first:
        assert first.wait_ready(5)
    assert cached_revision(tmp_path, key) is not None


# ------------------------------------------------------------------------------------------------
# Defaults
# ------------------------------------------------------------------------------------------------

def test_sdk_key_alone_starts_fetching(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with client(server, tmp_path, key) as c:
        assert c.wait_ready(5), c.datafile_status()
        assert c.config["revision"] == "1"
        assert c.datafile_status()["source"] == "fetch"
        user = c.create_user_context("u1", {"country": "NL"})
        assert user.decide("checkout_flow").flag_key == "checkout_flow"


def test_sdk_key_and_datafile_start_at_once_and_keep_fresh(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("2"), delay_s=0.3))
    with client(server, tmp_path, key, datafile=revision("1"), polling_interval_s=10) as c:
        assert c.ready and c.config["revision"] == "1"  # at once, before the fetch answers
        assert c.datafile_status()["source"] == "bundled"
        assert wait_for(lambda: c.config["revision"] == "2")
        server.serve(key, Answer(revision("3")))
        assert wait_for(lambda: c.config["revision"] == "3")  # polling
        assert c.datafile_status()["polling_interval_ms"] == 10 * SECOND_MS


def test_sdk_key_and_datafile_start_from_the_given_datafile_even_with_a_cache(server, revision, tmp_path):
    """As optimizely-sdk: the datafile passed in is the one used at start (the S modes prefer the cache)."""
    key = new_key()
    prime_cache(server, tmp_path, key, revision("cached"))
    server.serve(key, Answer(revision("cached"), delay_s=0.3))
    with client(server, tmp_path, key, datafile=revision("given")) as c:
        assert c.config["revision"] == "given"
        assert c.datafile_status()["source"] == "bundled"
        assert wait_for(lambda: c.config["revision"] == "cached")  # then kept fresh


def test_not_ready_message_names_no_c_function(server, tmp_path):
    key = new_key()
    server.serve(key, Answer(b"", status=500))
    with client(server, tmp_path, key) as c:
        with pytest.raises(experiment.NotReadyError) as info:
            c.config
        assert "exp_" not in str(info.value)


# ------------------------------------------------------------------------------------------------
# Synchronous: S1, S2, S3
# ------------------------------------------------------------------------------------------------

def test_synchronous_start_prefers_the_cached_datafile_over_the_bundled_one(server, revision, tmp_path):
    key = new_key()
    prime_cache(server, tmp_path, key, revision("cached"))
    server.serve(key, Answer(revision("cached")))
    for mode in ("S1", "S2", "S3"):
        with client(server, tmp_path, key, datafile=revision("bundled"), start=mode) as c:
            assert c.ready and c.config["revision"] == "cached", mode
            assert c.datafile_status()["source"] == "cache"


def test_s1_downloads_in_the_background_for_the_next_start_only(server, revision, tmp_path):
    key = new_key()
    prime_cache(server, tmp_path, key, revision("1"))
    server.serve(key, Answer(revision("2")))
    before = server.count(key)
    with client(server, tmp_path, key, datafile=revision("bundled"), start="S1") as c:
        assert c.config["revision"] == "1"
        assert wait_for(lambda: cached_revision(tmp_path, key) == "2")
        time.sleep(0.2)
        assert c.config["revision"] == "1"  # not used in this session
        assert c.datafile_status()["polling_interval_ms"] is None
    assert server.count(key) == before + 1
    with client(server, tmp_path, key, datafile=revision("bundled"), start="S1") as again:
        assert again.config["revision"] == "2"  # the next start uses it


def test_s1_without_a_cache_starts_from_the_bundled_datafile(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("2")))
    with client(server, tmp_path, key, datafile=revision("bundled"), start="S1") as c:
        assert c.config["revision"] == "bundled"
        assert wait_for(lambda: cached_revision(tmp_path, key) == "2")
        assert c.config["revision"] == "bundled"


def test_s1_caches_no_datafile_of_another_project(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("9", project_id="99999")))
    with client(server, tmp_path, key, datafile=revision("bundled"), start="S1") as c:
        assert wait_for(lambda: c.datafile_status()["rejected"] == 1)
    assert cached_revision(tmp_path, key) is None


def test_s2_uses_the_downloaded_datafile_at_once_and_does_not_poll(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("2"), delay_s=0.3))
    with client(server, tmp_path, key, datafile=revision("bundled"), start="S2") as c:
        assert c.config["revision"] == "bundled"
        assert wait_for(lambda: c.config["revision"] == "2")
        assert c.datafile_status()["polling_interval_ms"] is None
        server.serve(key, Answer(revision("3")))
        time.sleep(30 * SECOND_MS / 1000)
        assert c.config["revision"] == "2" and server.count(key) == 1
    assert cached_revision(tmp_path, key) == "2"


def test_s3_polls(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("2")))
    with client(server, tmp_path, key, datafile=revision("bundled"), start="S3", polling_interval_s=10) as c:
        assert c.config["revision"] == "bundled"
        assert wait_for(lambda: c.config["revision"] == "2")
        server.serve(key, Answer(revision("3")))
        assert wait_for(lambda: c.config["revision"] == "3")
        assert c.datafile_status()["polling_interval_ms"] == 10 * SECOND_MS


def test_synchronous_start_with_nothing_to_use_fails(server, tmp_path):
    key = new_key()
    server.serve(key, Answer(b"", status=500))
    with pytest.raises(experiment.NotReadyError):
        client(server, tmp_path, key, start="S2")


# ------------------------------------------------------------------------------------------------
# Asynchronous: A1, A2, A3
# ------------------------------------------------------------------------------------------------

def test_a1_downloads_then_is_ready_and_does_not_poll(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1"), delay_s=0.2))
    outcomes: List[Any] = []
    with client(server, tmp_path, key, start="A1", on_ready=outcomes.append) as c:
        assert not c.ready
        assert c.wait_ready(5) and c.config["revision"] == "1"
        assert wait_for(lambda: outcomes == [None])
        assert c.datafile_status()["polling_interval_ms"] is None
        server.serve(key, Answer(revision("2")))
        time.sleep(30 * SECOND_MS / 1000)
        assert c.config["revision"] == "1"


def test_a2_downloads_then_polls(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with client(server, tmp_path, key, start="A2", polling_interval_s=10) as c:
        assert c.wait_ready(5) and c.config["revision"] == "1"
        server.serve(key, Answer(revision("2")))
        assert wait_for(lambda: c.config["revision"] == "2")


def test_a3_is_awaited(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1"), delay_s=0.2))

    async def main() -> str:
        with client(server, tmp_path, key, start="A3", polling_interval_s=10) as c:
            assert await c.wait_ready_async(5)
            return c.create_user_context("u1").decide("checkout_flow").flag_key

    assert asyncio.run(main()) == "checkout_flow"


def test_asynchronous_start_falls_back_to_the_cache_then_the_bundled_datafile(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(b"", status=500))
    with client(server, tmp_path, key, start="A1", datafile=revision("bundled")) as c:
        assert c.wait_ready(5) and c.config["revision"] == "bundled"


# ------------------------------------------------------------------------------------------------
# Argument checks and the C entry point
# ------------------------------------------------------------------------------------------------

def test_mode_arguments(server, revision, tmp_path):
    with pytest.raises(experiment.InvalidArgumentError):
        experiment.Client(datafile=revision("1"), start="S1")  # no sdk_key
    with pytest.raises(experiment.InvalidArgumentError):
        experiment.Client(sdk_key="k", start="A1", polling_interval_s=60)  # A1 never polls
    with pytest.raises(experiment.InvalidArgumentError):
        experiment.Client(sdk_key="k", start="S9")
    with experiment.Client(datafile=revision("1")) as plain:  # a datafile alone: used as it is
        assert plain.datafile_status()["managed"] is False


def test_c_start_sync_reports_where_the_datafile_came_from(server, revision, tmp_path):
    lib = _native.lib
    key = new_key()
    prime_cache(server, tmp_path, key, revision("cached"))
    options = ('{"sdk_key": "%s", "datafile_url_template": "%s", "state_dir": "%s", "polling_interval_s": 0}'
               % (key, server.template(), tmp_path)).encode()
    handle = ctypes.c_void_p()
    assert lib.exp_client_create(options, ctypes.byref(handle)) == 0
    try:
        from_cache = ctypes.c_int(-1)
        bundled = revision("bundled")
        assert lib.exp_client_start_sync(handle, bundled, len(bundled), 3, ctypes.byref(from_cache)) == \
            experiment.errors.ERR_INVALID_ARGUMENT
        assert lib.exp_client_start_sync(handle, bundled, len(bundled), 0, ctypes.byref(from_cache)) == 0
        assert from_cache.value == 1
    finally:
        lib.exp_client_free(handle)
