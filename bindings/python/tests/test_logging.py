"""The library's log messages reach Python's logging, filtered by log_level, without secrets."""
import json
import logging

import pytest

import experiment


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def capture():
    logger = logging.getLogger("experiment.test")
    logger.setLevel(logging.DEBUG)
    handler = Capture()
    logger.addHandler(handler)
    yield logger, handler
    logger.removeHandler(handler)


def test_rejected_datafile_is_logged_as_error(capture, datafile_text):
    logger, handler = capture
    client = experiment.Client(datafile=datafile_text, logger=logger)
    with pytest.raises(experiment.InvalidJSONError):
        client.start('{"version": "4"} trailing')
    errors = [r for r in handler.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "rejected datafile" in errors[0].getMessage()
    assert "keeping revision" in errors[0].getMessage()
    client.close()


def test_log_level_filters_and_sdk_key_is_redacted(capture, datafile_text):
    logger, handler = capture
    secret = "SECRETKEY1234567890abcdef"
    client = experiment.Client(sdk_key=secret, datafile=datafile_text, logger=logger, log_level="info")
    messages = [r.getMessage() for r in handler.records]
    assert any("datafile revision" in m and "in use for SDK key SECR" in m for m in messages)
    assert all(secret not in m for m in messages)
    assert all(r.levelno >= logging.INFO for r in handler.records)
    client.close()

    handler.records.clear()
    quiet = experiment.Client(sdk_key=secret, datafile=datafile_text, logger=logger)  # default: warning
    assert handler.records == []
    quiet.close()


def test_failing_dispatcher_is_a_warning(capture, datafile_text, datafile_dict):
    logger, handler = capture

    class Failing:
        def dispatch_event(self, event):
            raise RuntimeError("endpoint down")

    client = experiment.Client(datafile=datafile_text, logger=logger, event_dispatcher=Failing())
    event_key = datafile_dict["events"][0]["key"]
    client.track(event_key, "u1")
    warnings = [r for r in handler.records if r.levelno == logging.WARNING]
    assert any("event dispatcher reported a failure" in r.getMessage() for r in warnings)
    client.close()


def test_unknown_log_level_is_an_option_error():
    with pytest.raises(experiment.InvalidOptionError, match="log_level"):
        experiment.Client(log_level="verbose")
