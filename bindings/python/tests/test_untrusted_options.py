"""Untrusted option values never reach files, headers or logs as something else (issue 18, items 9 and 11),
through the real library: an sdk_key that is not a plain token cannot leave a file:// template's directory,
CR/LF/NUL in a token, URL or path is refused with EXP_ERR_INVALID_OPTION naming the option (a real HTTP
server shows no injected header arrives), and the options layer's own messages say what is wrong."""

from __future__ import annotations

import json
import os
import threading

import pytest

import experiment
from conftest import DATAFILE_PATH, raises
from test_datafile_lifecycle import Answer, DatafileServer, make_client, new_key, wait_for

ERR_INVALID_JSON = -2
ERR_INVALID_OPTION = -3
ERR_CLOSED = -17


@pytest.fixture()
def server():
    s = DatafileServer()
    yield s
    s.stop()


@pytest.fixture()
def revision(datafile_text: str):
    def make(rev: str) -> bytes:
        d = json.loads(datafile_text)
        d["revision"] = rev
        return json.dumps(d).encode()
    return make


def file_template(tmp_path) -> str:
    """file://<tmp>/public/{sdk_key}.json, with a secret datafile one directory up at <tmp>/secret/demo.json."""
    with open(DATAFILE_PATH, "rb") as f:
        body = f.read()
    for folder, name in (("public", "plain-Key_1.0.json"), ("secret", "demo.json")):
        os.makedirs(str(tmp_path / folder), exist_ok=True)
        with open(str(tmp_path / folder / name), "wb") as f:
            f.write(body)
    return "file://%s/public/{sdk_key}.json" % tmp_path


# -- item 9: the SDK key is a plain token -----------------------------------------------------------

def test_a_plain_sdk_key_reads_its_file_in_the_template_directory(tmp_path):
    with experiment.Client(sdk_key="plain-Key_1.0", datafile_url_template=file_template(tmp_path),
                           state_dir=str(tmp_path / "state"), start="async", retry_count=0,
                           polling_interval_s=0) as client:
        assert client.wait_ready(5)


@pytest.mark.parametrize("key", ["../secret/demo", "..%2Fsecret%2Fdemo", "a/b", "..", ".hidden", "a b",
                                 "key\n", "k\r\nX-Injected: yes", "a\x00b", "ké", "x" * 257, ""])
def test_an_sdk_key_that_is_not_a_plain_token_is_refused(tmp_path, key):
    template = file_template(tmp_path)
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"options\.sdk_key: expected a plain token",
           experiment.Client, sdk_key=key, datafile_url_template=template, state_dir=str(tmp_path / "state"),
           start="async", retry_count=0)


# -- item 9: CR/LF/NUL in values that reach headers, URLs, paths and logs ---------------------------

@pytest.mark.parametrize("token,shown", [("tok\r\nX-Injected: yes", "CR"), ("tok\nX-Injected: yes", "LF"),
                                         ("tok\x00en", "NUL")])
def test_an_access_token_with_cr_lf_or_nul_is_refused_and_nothing_is_injected(server, revision, tmp_path, token,
                                                                               shown):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION,
           r"options\.datafile_access_token: control character %s" % shown,
           make_client, server, tmp_path, key, datafile_access_token=token)
    # The same server, the same key, a clean token: the request arrives with the token as sent, and no
    # request ever carried the injected header.
    with make_client(server, tmp_path, key, datafile_access_token="tok-en") as client:
        assert client.wait_ready(5)
    assert server.count(key) == 1
    assert server.last_headers()["authorization"] == "Bearer tok-en"
    assert all("x-injected" not in r["headers"] for r in server.requests)


@pytest.mark.parametrize("option,value", [
    ("datafile_url_template", "http://127.0.0.1:1/{sdk_key}.json\r\nX-Injected: yes"),
    ("datafile_url_template", "file:///tmp/{sdk_key}\n.json"),
    ("state_dir", "{tmp}/state\x00/../../elsewhere"),
    ("state_dir", "{tmp}/state\ndir"),
    ("event_endpoint", "http://127.0.0.1:1/events\r\nX-Injected: yes"),
])
def test_control_characters_in_urls_and_paths_are_refused(tmp_path, option, value):
    # Paths under the test's own directory: a library that took them would create nothing elsewhere.
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"options\.%s: control character" % option,
           experiment.Client, sdk_key="k",
           **dict({"state_dir": str(tmp_path / "state")}, **{option: value.replace("{tmp}", str(tmp_path))}))


def test_nul_in_state_dir_creates_nothing_at_the_truncated_path(tmp_path):
    truncated = tmp_path / "state"
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"options\.state_dir: control character NUL",
           experiment.Client, sdk_key="k", state_dir=str(truncated) + "\x00-rest")
    assert not truncated.exists()


def test_odp_and_redis_values_with_cr_lf_are_refused():
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"options\.odp\.api_key: control character",
           experiment.Client, sdk_key="k", odp={"api_key": "key\r\nX-Injected: yes"})
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"options\.odp\.host: control character",
           experiment.Client, sdk_key="k", odp={"host": "https://odp.example\r\n"})
    raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"options\.profile_store\.redis\.url: control",
           experiment.Client, sdk_key="k", profile_store={"redis": {"url": "redis://127.0.0.1:6379\r\nFLUSHALL"}})


# -- item 11: the options layer's messages ----------------------------------------------------------

def test_options_that_are_not_json_are_reported_as_such():
    error = raises(experiment.InvalidJSONError, ERR_INVALID_JSON, r"^options: not valid JSON", _create_raw,
                   b"not json")
    assert "expected null" not in str(error).split("(")[0]


def _create_raw(options: bytes) -> None:
    """exp_client_create with exactly these bytes (the binding would build the JSON itself)."""
    from ctypes import byref, c_void_p
    from experiment._native import lib
    from experiment.errors import error_for_status
    handle = c_void_p()
    status = lib.exp_client_create(options, byref(handle))
    if status:
        raise error_for_status(status, experiment._native.last_error())
    lib.exp_client_free(handle)


@pytest.mark.parametrize("text", [b"99999999999999999999", b"18446744073709551616", b"-99999999999999999999"])
def test_an_integer_past_64_bits_is_not_shown_clamped(text):
    error = raises(experiment.InvalidOptionError, ERR_INVALID_OPTION, r"user_store_capacity: expected an integer",
                   _create_raw, b'{"user_store_capacity": ' + text + b"}")
    message = str(error)
    assert "18446744073709551615" not in message and "9223372036854775807" not in message, message
    assert "2^63 or more in magnitude" in message, message


def test_a_refresh_cut_short_by_close_answers_closed(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    client = make_client(server, tmp_path, key, request_timeout_ms=30_000)
    assert client.wait_ready(5)
    server.queue(key, Answer(revision("2"), delay_s=20))
    outcome = []

    def refresh() -> None:
        try:
            client.refresh()
            outcome.append(None)
        except experiment.Error as error:
            outcome.append(error)

    thread = threading.Thread(target=refresh)
    thread.start()
    assert wait_for(lambda: server.count(key) == 2)   # the refresh's request is in flight
    client.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], experiment.ClosedError), outcome
    assert outcome[0].code == ERR_CLOSED
