"""The state directory is used only when it is ours (issue 35 items 2-4): a real directory (no symlink) owned
by the effective uid and not writable by group or others; state files are opened without following symlinks
and are private (0600, directories 0700). A refused directory or file leaves a working client that logs why."""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile

import pytest

import experiment

NOBODY = 65534


def flag_key(datafile_text: str) -> str:
    return json.loads(datafile_text)["featureFlags"][0]["key"]


def event_key(datafile_text: str) -> str:
    return json.loads(datafile_text)["events"][0]["key"]


def run_client(datafile_text: str, caplog, name: str, **options) -> experiment.Client:
    """A client started with the datafile that decides and tracks once; its log goes to caplog."""
    logger = logging.getLogger("test.state.%s" % name)
    client = experiment.Client(datafile=datafile_text, logger=logger, log_level="info", **options)
    assert client.decide("user-1", flag_key(datafile_text)).flag_key == flag_key(datafile_text)
    client.track(event_key(datafile_text), "user-1")
    return client


def messages(caplog, capfd) -> str:
    """What the library logged: through the client's logger, and on stderr before it was installed."""
    return "\n".join(record.getMessage() for record in caplog.records) + "\n" + capfd.readouterr().err


def as_other_user(action) -> None:
    """Runs `action` in a child process as uid/gid nobody (the other local user)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            action()
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="two uids need root")


@pytest.fixture()
def shared_tmp():
    """A directory both this process and nobody can enter (tmp_path is 0700 root)."""
    path = tempfile.mkdtemp(prefix="libexperiment-safety-")
    os.chmod(path, 0o1777)  # as /tmp: the other user may create entries
    yield path
    os.system("rm -rf '%s'" % path)


@needs_root
def test_default_directory_precreated_by_another_user_is_refused(datafile_text, shared_tmp, monkeypatch, caplog, capfd):
    attacker_dir = os.path.join(shared_tmp, "libexperiment")

    def plant() -> None:
        os.mkdir(attacker_dir)
        os.chmod(attacker_dir, 0o777)
        with open(os.path.join(attacker_dir, "state.sqlite"), "wb") as f:
            f.write(b"crafted")

    as_other_user(plant)
    monkeypatch.setenv("XDG_STATE_HOME", shared_tmp)
    with caplog.at_level(logging.INFO):
        client = run_client(datafile_text, caplog, "takeover")
        client.close()
    logged = messages(caplog, capfd)
    assert "refused for safety" in logged and "owned by uid %d" % NOBODY in logged
    assert sorted(os.listdir(attacker_dir)) == ["state.sqlite"]  # nothing of ours written there
    with open(os.path.join(attacker_dir, "state.sqlite"), "rb") as f:
        assert f.read() == b"crafted"


@needs_root
def test_explicit_state_dir_of_another_user_is_refused(datafile_text, shared_tmp, caplog, capfd):
    other = os.path.join(shared_tmp, "theirs")
    as_other_user(lambda: os.mkdir(other, 0o700))
    with caplog.at_level(logging.INFO):
        run_client(datafile_text, caplog, "explicit-other", state_dir=other).close()
    assert "refused for safety" in messages(caplog, capfd)


def test_group_or_world_writable_state_dir_is_refused(datafile_text, tmp_path, caplog, capfd):
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)
    with caplog.at_level(logging.INFO):
        run_client(datafile_text, caplog, "loose", state_dir=str(loose)).close()
    assert "writable by group or others (mode 777)" in messages(caplog, capfd)
    assert os.listdir(loose) == []


def test_symlinked_state_dir_is_refused(datafile_text, tmp_path, caplog, capfd):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with caplog.at_level(logging.INFO):
        run_client(datafile_text, caplog, "symlinked", state_dir=str(link)).close()
    assert "symbolic link" in messages(caplog, capfd)
    assert os.listdir(real) == []


def test_dangling_symlinks_planted_as_state_files_are_not_followed(datafile_text, tmp_path, caplog, capfd):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    targets = tmp_path / "targets"
    targets.mkdir()
    (state / "state.sqlite").symlink_to(targets / "db")
    (state / "event-reserve.bin").symlink_to(targets / "reserve")
    with caplog.at_level(logging.INFO):
        client = experiment.Client(datafile=datafile_text, state_dir=str(state), log_level="info",
                                   event_endpoint="http://127.0.0.1:9/events", close_timeout_ms=0)
        assert client.decide("user-2", flag_key(datafile_text)).flag_key  # still deciding
        with pytest.raises(experiment.StoreError) as refused:  # no state file: the event is refused, said why
            client.track(event_key(datafile_text), "user-2")
        assert "symbolic link" in str(refused.value)
        assert client.decide("user-3", flag_key(datafile_text)).flag_key
        client.close()
    assert os.listdir(targets) == []
    assert "symbolic link" in messages(caplog, capfd)


def test_state_files_are_private_whatever_the_umask(datafile_text, tmp_path, caplog, capfd):
    state = tmp_path / "a" / "b"
    previous = os.umask(0o002)
    try:
        client = run_client(datafile_text, caplog, "modes", state_dir=str(state),
                            event_endpoint="http://127.0.0.1:9/events", close_timeout_ms=0)
        names = sorted(os.listdir(state))
        modes = {name: stat.S_IMODE(os.lstat(state / name).st_mode) for name in names}
        client.close()
    finally:
        os.umask(previous)
    assert "state.sqlite" in names and "state.sqlite-wal" in names and "state.sqlite-shm" in names, names
    assert any(name.startswith("event-journal-") for name in names), names
    assert {name: mode for name, mode in modes.items() if mode != 0o600} == {}
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700


def test_state_file_left_readable_by_others_is_tightened(datafile_text, tmp_path, caplog, capfd):
    state = tmp_path / "state"
    run_client(datafile_text, caplog, "first", state_dir=str(state)).close()
    os.chmod(state / "state.sqlite", 0o644)
    run_client(datafile_text, caplog, "second", state_dir=str(state)).close()
    assert stat.S_IMODE(os.stat(state / "state.sqlite").st_mode) == 0o600


def forced_variation_survives_a_restart(datafile_text: str, state: str) -> bool:
    with experiment.Client(datafile=datafile_text, state_dir=state) as first:
        first.set_forced_variation("checkout_test", "user-9", "treatment")
    with experiment.Client(datafile=datafile_text, state_dir=state) as second:
        return second.get_forced_variation("checkout_test", "user-9") == "treatment"


@pytest.mark.parametrize("content", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\xff" * 4000],
                         ids=["text", "bad-page"])
def test_corrupt_state_file_is_set_aside_and_replaced(datafile_text, tmp_path, capfd, content):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "state.sqlite").write_bytes(content)
    os.chmod(state / "state.sqlite", 0o600)
    assert forced_variation_survives_a_restart(datafile_text, str(state))
    aside = [name for name in os.listdir(state) if name.startswith("state.sqlite.corrupt-")]
    assert len(aside) == 1, os.listdir(state)
    assert (state / aside[0]).read_bytes() == content
    logged = capfd.readouterr().err
    assert str(state / "state.sqlite") in logged and str(state / aside[0]) in logged


JOURNAL_CHILD = r"""
import json, os, sys
import experiment
text, state = sys.argv[1], sys.argv[2]
client = experiment.Client(datafile=text, state_dir=state, event_endpoint="http://127.0.0.1:9/events",
                           event_batch_size=1000, event_flush_interval_ms=600000)
event = json.loads(text)["events"][0]["key"]
for n in range(5):
    client.track(event, "journal-user-%d" % n)
os._exit(0)  # dies without closing: its journal segment is left for the next client
"""


def test_damaged_journal_segment_keeps_every_readable_record(datafile_text, tmp_path, capfd):
    import sqlite3
    import struct
    import subprocess
    import sys

    state = tmp_path / "state"
    subprocess.run([sys.executable, "-c", JOURNAL_CHILD, datafile_text, str(state)], check=True,
                   env=dict(os.environ))
    segments = [name for name in os.listdir(state) if name.startswith("event-journal-") and name.endswith("-a.bin")]
    assert len(segments) == 1, os.listdir(state)
    path = state / segments[0]
    data = bytearray(path.read_bytes())
    offsets, offset = [], 0
    while True:
        length, magic = struct.unpack_from("<II", data, offset)
        if length == 0:
            break
        offsets.append(offset)
        offset += (8 + length + 7) & ~7
    assert len(offsets) == 5
    data[offsets[1]:offsets[1] + 8] = b"\xde\xad\xbe\xef\xde\xad\xbe\xef"  # the second record's header torn
    path.write_bytes(bytes(data))

    with experiment.Client(datafile=datafile_text, state_dir=str(state), close_timeout_ms=0,
                           event_endpoint="http://127.0.0.1:9/events") as client:
        client.flush()
    database = sqlite3.connect(str(state / "state.sqlite"))
    try:
        queued = database.execute("SELECT COUNT(*) FROM event_queue").fetchone()[0]
    finally:
        database.close()
    assert queued == 4  # every record but the torn one
    aside = [name for name in os.listdir(state) if name.startswith(segments[0] + ".corrupt-")]
    assert len(aside) == 1, os.listdir(state)
    logged = capfd.readouterr().err
    assert str(path) in logged and str(state / aside[0]) in logged
