"""The OpenFeature provider (experiment.openfeature), exercised through the OpenFeature SDK's own API:
api.set_provider / set_provider_and_wait, api.get_client().get_*_details, event handlers, tracking."""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import time
from typing import Any, Dict, List, Optional

import pytest


from openfeature import api  # noqa: E402

# The provider works with 0.8+; these tests use 0.10's API (make test-deps installs openfeature-sdk 0.10).
assert hasattr(api, "set_provider_and_wait"), "these tests need openfeature-sdk >= 0.10"

from openfeature.evaluation_context import EvaluationContext  # noqa: E402
from openfeature.event import EventDetails, ProviderEvent  # noqa: E402
from openfeature.exception import ErrorCode  # noqa: E402
from openfeature.flag_evaluation import Reason  # noqa: E402
from openfeature.hook import Hook  # noqa: E402
from openfeature.provider import ProviderStatus  # noqa: E402
from openfeature.track import TrackingEventDetails  # noqa: E402

import experiment  # noqa: E402
from experiment.openfeature import PROVIDER_NAME, ExperimentProvider  # noqa: E402

from conftest import U2_ATTRS, U3_ATTRS, RecordingDispatcher  # noqa: E402

NO_EVENTS = ["DISABLE_DECISION_EVENT"]
WAIT_S = 5.0
NL_ADULT = {"country": "NL", "age": 30}   # audience 40001: the checkout_nl_rule and search_beta_rule


@pytest.fixture(autouse=True)
def clean_api():
    """Every test starts and ends with the SDK's global state cleared (providers, handlers, context)."""
    api.shutdown()
    yield
    api.shutdown()


def ctx(user: Optional[str], **attributes: Any) -> EvaluationContext:
    return EvaluationContext(targeting_key=user, attributes=attributes)


def make_provider(datafile_text: Optional[str], **kwargs: Any) -> ExperimentProvider:
    kwargs.setdefault("default_decide_options", NO_EVENTS)
    return ExperimentProvider(datafile=datafile_text, **kwargs)


@pytest.fixture()
def provider(datafile_text: str) -> ExperimentProvider:
    p = make_provider(datafile_text)
    api.set_provider_and_wait(p)
    return p


@pytest.fixture()
def flags(provider: ExperimentProvider):
    return api.get_client()


def modified_datafile(datafile_text: str, revision: str = "43") -> str:
    """The demo datafile with a new revision, another headline default and a flag whose key has a dot."""
    d = json.loads(datafile_text)
    d["revision"] = revision
    for variable in d["featureFlags"][0]["variables"]:
        if variable["key"] == "headline":
            variable["defaultValue"] = "Welcome back"
    d["featureFlags"].append({"id": "70009", "key": "new.flag", "experimentIds": [], "rolloutId": "",
                              "variables": [{"id": "79001", "key": "color", "type": "string",
                                             "defaultValue": "red"}]})
    return json.dumps(d)


class Recorder:
    """An OpenFeature event handler that keeps what it is given (handlers run on the SDK's executor)."""

    def __init__(self, provider_name: str = PROVIDER_NAME) -> None:
        self.provider_name = provider_name
        self.events: List[EventDetails] = []
        self.cond = threading.Condition()

    def __call__(self, details: EventDetails) -> None:
        if details.provider_name != self.provider_name:  # e.g. the no-op provider's immediate READY
            return
        with self.cond:
            self.events.append(details)
            self.cond.notify_all()

    def wait(self, count: int = 1, timeout: float = WAIT_S) -> List[EventDetails]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.events) >= count, timeout)
            assert len(self.events) >= count, "expected %d events, got %r" % (count, self.events)
            return list(self.events)

    def settle(self, delay: float = 0.2) -> List[EventDetails]:
        time.sleep(delay)
        with self.cond:
            return list(self.events)


def recorders() -> Dict[ProviderEvent, Recorder]:
    result = {}
    for event in ProviderEvent:
        r = Recorder()
        api.add_handler(event, r)
        result[event] = r
    return result


def assert_error(details: Any, code: ErrorCode, default: Any, pattern: str = "", message: bool = True) -> None:
    assert details.error_code == code, details
    assert details.reason == Reason.ERROR
    assert details.value == default and type(details.value) is type(default)
    assert details.variant is None
    if message:
        assert details.error_message, details
    if pattern:
        assert pattern.lower() in details.error_message.lower(), details.error_message


# ------------------------------------------------------------------------------------------------
# Metadata, hooks
# ------------------------------------------------------------------------------------------------

def test_metadata(provider: ExperimentProvider) -> None:
    assert api.get_provider_metadata().name == PROVIDER_NAME == "libexperiment"
    assert api.get_client().provider is provider
    assert api.get_client().get_provider_status() == ProviderStatus.READY
    assert provider.status == ProviderStatus.READY
    assert provider.get_provider_hooks() == []


def test_provider_hooks_run(datafile_text: str) -> None:
    seen: List[Any] = []

    class Seen(Hook):
        def after(self, hook_context, details, hints) -> None:  # type: ignore[no-untyped-def]
            seen.append((hook_context.flag_key, details.value, details.reason))

    p = make_provider(datafile_text, hooks=[Seen()])
    assert len(p.get_provider_hooks()) == 1
    api.set_provider_and_wait(p)
    api.get_client().get_boolean_value("checkout_flow", False, ctx("u3", **U3_ATTRS))
    assert seen == [("checkout_flow", True, Reason.SPLIT)]


def test_constructor_arguments(datafile_text: str) -> None:
    with experiment.Client(datafile=datafile_text) as client:
        with pytest.raises(TypeError):
            ExperimentProvider(client, datafile=datafile_text)
        with pytest.raises(TypeError):
            ExperimentProvider(client, default_decide_options=NO_EVENTS)
    with pytest.raises(TypeError):
        ExperimentProvider("not a client")  # type: ignore[arg-type]
    with pytest.raises(experiment.InvalidJSONError):
        ExperimentProvider(datafile="{nope")
    with pytest.raises(experiment.InvalidOptionError):
        ExperimentProvider(datafile=datafile_text, decide_options=["NO_SUCH_OPTION"])


# ------------------------------------------------------------------------------------------------
# Values of every type, variants, reasons, metadata
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("user, attrs, flag, enabled, variant, rule, reason", [
    ("u3", U3_ATTRS, "checkout_flow", True, "treatment", "checkout_test", Reason.SPLIT),
    ("u2", U2_ATTRS, "checkout_flow", True, "control", "checkout_test", Reason.SPLIT),
    ("forced_user", {}, "checkout_flow", True, "treatment", "checkout_test", Reason.SPLIT),
    ("u3", U3_ATTRS, "search_ranking", False, "classic", "search_test", Reason.SPLIT),
    ("u4", NL_ADULT, "checkout_flow", True, "on_nl", "checkout_nl_rule", Reason.TARGETING_MATCH),
    ("u2", U2_ATTRS, "search_ranking", True, "beta_on", "search_beta_rule", Reason.TARGETING_MATCH),
    ("u1", {}, "search_ranking", True, "on", "82002", Reason.TARGETING_MATCH),
    ("u1", {}, "checkout_flow", False, "off", "81002", Reason.DISABLED),
    ("user2", {}, "search_ranking", False, None, None, Reason.DEFAULT),
])
def test_boolean_flag_state(flags, provider: ExperimentProvider, user: str, attrs: Dict[str, Any], flag: str,
                            enabled: bool, variant: Optional[str], rule: Optional[str], reason: Reason) -> None:
    # the library's own decision, for the record
    d = provider.client.decide(user, flag, attrs)
    assert (d.enabled, d.variation_key, d.rule_key) == (enabled, variant, rule)

    for default in (True, False):
        details = flags.get_boolean_details(flag, default, ctx(user, **attrs))
        assert details.flag_key == flag
        assert details.value is enabled
        assert details.variant == variant
        assert details.reason == reason
        assert details.error_code is None and details.error_message is None
        expected_metadata: Dict[str, Any] = {"enabled": enabled}
        if rule is not None:
            expected_metadata["rule_key"] = rule
        assert dict(details.flag_metadata) == expected_metadata
        assert flags.get_boolean_value(flag, default, ctx(user, **attrs)) is enabled


def test_forced_decision_without_rule_is_targeting_match(flags, provider: ExperimentProvider) -> None:
    provider.client.set_forced_decision("fu", "search_ranking", "beta_on")
    details = flags.get_boolean_details("search_ranking", False, ctx("fu"))
    assert (details.value, details.variant, details.reason) == (True, "beta_on", Reason.TARGETING_MATCH)
    assert dict(details.flag_metadata) == {"enabled": True}
    assert flags.get_string_value("search_ranking.algorithm", "x", ctx("fu")) == "beta-ranker"


def test_variables_of_every_type(flags) -> None:
    treatment = ctx("u3", **U3_ATTRS)
    details = flags.get_boolean_details("checkout_flow.show_banner", False, treatment)
    assert (details.value, details.variant, details.reason) == (True, "treatment", Reason.SPLIT)
    assert details.flag_metadata["rule_key"] == "checkout_test"

    details = flags.get_string_details("checkout_flow.headline", "", treatment)
    assert (details.value, details.variant, details.reason) == ("Big sale", "treatment", Reason.SPLIT)

    details = flags.get_integer_details("checkout_flow.max_items", 0, treatment)
    assert details.value == 25 and type(details.value) is int

    details = flags.get_float_details("checkout_flow.discount", 0.0, treatment)
    assert details.value == 0.15 and type(details.value) is float

    details = flags.get_object_details("checkout_flow.layout", {}, treatment)
    assert details.value == {"columns": 3, "theme": "dark", "widgets": ["cart", "promo"]}
    assert details.reason == Reason.SPLIT and details.error_code is None

    # value getters
    assert flags.get_boolean_value("checkout_flow.show_banner", False, treatment) is True
    assert flags.get_string_value("checkout_flow.headline", "", treatment) == "Big sale"
    assert flags.get_integer_value("checkout_flow.max_items", 0, treatment) == 25
    assert flags.get_float_value("checkout_flow.discount", 0.0, treatment) == 0.15
    assert flags.get_object_value("checkout_flow.layout", {}, treatment)["columns"] == 3


def test_variables_per_variation_and_defaults(flags) -> None:
    # delivery rule on_nl overrides some variables; the others keep their defaults
    nl = ctx("u4", **NL_ADULT)
    assert flags.get_string_details("checkout_flow.headline", "", nl).value == "Hallo"
    assert flags.get_integer_details("checkout_flow.max_items", 0, nl).value == 12
    details = flags.get_float_details("checkout_flow.discount", 9.9, nl)
    assert (details.value, details.variant, details.reason) == (0.0, "on_nl", Reason.TARGETING_MATCH)

    # "off" delivery: the flag's default values, reason DISABLED
    off = ctx("u1")
    details = flags.get_string_details("checkout_flow.headline", "", off)
    assert (details.value, details.variant, details.reason) == ("Welcome", "off", Reason.DISABLED)
    assert flags.get_boolean_value("checkout_flow.show_banner", True, off) is False
    assert flags.get_object_value("checkout_flow.layout", [], off) == {
        "columns": 2, "theme": "light", "widgets": ["cart"]}

    # no variation at all: defaults, reason DEFAULT
    details = flags.get_float_details("search_ranking.boost", 7.0, ctx("user2"))
    assert (details.value, details.variant, details.reason) == (1.0, None, Reason.DEFAULT)
    details = flags.get_integer_details("search_ranking.page_size", 0, ctx("user2"))
    assert (details.value, details.reason) == (20, Reason.DEFAULT)

    # experiment variation with variables of its own
    details = flags.get_float_details("search_ranking.boost", 0.0, ctx("u2", **U2_ATTRS))
    assert (details.value, details.variant) == (1.75, "beta_on")


def test_object_values_are_fresh_copies(flags) -> None:
    first = flags.get_object_value("checkout_flow.layout", {}, ctx("u3", **U3_ATTRS))
    first["widgets"].append("mutated")
    second = flags.get_object_value("checkout_flow.layout", {}, ctx("u3", **U3_ATTRS))
    assert second["widgets"] == ["cart", "promo"]


def test_async_evaluation(flags) -> None:
    async def run() -> Any:
        return await asyncio.gather(
            flags.get_boolean_details_async("checkout_flow", False, ctx("u3", **U3_ATTRS)),
            flags.get_integer_details_async("checkout_flow.max_items", 0, ctx("u4", **NL_ADULT)),
            flags.get_string_details_async("nope", "dflt", ctx("u1")))

    boolean, integer, missing = asyncio.run(run())
    assert (boolean.value, boolean.reason) == (True, Reason.SPLIT)
    assert integer.value == 12
    assert_error(missing, ErrorCode.FLAG_NOT_FOUND, "dflt")


def test_decisions_send_impressions(datafile_text: str) -> None:
    dispatcher = RecordingDispatcher()
    p = ExperimentProvider(datafile=datafile_text, event_dispatcher=dispatcher)
    api.set_provider_and_wait(p)
    api.get_client().get_boolean_value("checkout_flow", False, ctx("u3", **U3_ATTRS))
    impressions = dispatcher.impressions()
    assert len(impressions) == 1
    decision = impressions[0]["visitors"][0]["snapshots"][0]["decisions"][0]
    assert decision["metadata"]["flag_key"] == "checkout_flow"
    assert decision["metadata"]["variation_key"] == "treatment"

    # provider-level decide options add to the client's
    dispatcher.clear()
    quiet = ExperimentProvider(datafile=datafile_text, event_dispatcher=dispatcher, decide_options=NO_EVENTS)
    api.set_provider_and_wait(quiet, domain="quiet")
    assert api.get_client("quiet").get_boolean_value("checkout_flow", False, ctx("u3", **U3_ATTRS)) is True
    assert dispatcher.impressions() == []


# ------------------------------------------------------------------------------------------------
# Flag key addressing
# ------------------------------------------------------------------------------------------------

def test_flag_key_with_a_dot(datafile_text: str) -> None:
    p = make_provider(modified_datafile(datafile_text))
    api.set_provider_and_wait(p)
    flags = api.get_client()
    details = flags.get_boolean_details("new.flag", True, ctx("u1"))
    assert (details.value, details.reason, details.error_code) == (False, Reason.DEFAULT, None)
    details = flags.get_string_details("new.flag.color", "", ctx("u1"))
    assert (details.value, details.reason) == ("red", Reason.DEFAULT)
    assert_error(flags.get_string_details("new.flag.size", "d", ctx("u1")), ErrorCode.FLAG_NOT_FOUND, "d", "size")
    assert_error(flags.get_string_details("new.nope", "d", ctx("u1")), ErrorCode.FLAG_NOT_FOUND, "d")


@pytest.mark.parametrize("key", ["checkout_flow.", ".checkout_flow", "checkout_flow..headline"])
def test_malformed_variable_keys(flags, key: str) -> None:
    assert_error(flags.get_string_details(key, "d", ctx("u1")), ErrorCode.FLAG_NOT_FOUND, "d")


# ------------------------------------------------------------------------------------------------
# Errors: codes and default values
# ------------------------------------------------------------------------------------------------

DEFAULTS = {"boolean": True, "string": "dflt", "integer": -5, "float": -2.5, "object": {"dflt": [1]}}


def details_of(flags: Any, kind: str, key: str, context: Optional[EvaluationContext]) -> Any:
    get = {"boolean": flags.get_boolean_details, "string": flags.get_string_details,
           "integer": flags.get_integer_details, "float": flags.get_float_details,
           "object": flags.get_object_details}[kind]
    return get(key, DEFAULTS[kind], context)


@pytest.mark.parametrize("kind", sorted(DEFAULTS))
def test_flag_not_found(flags, kind: str) -> None:
    for key in ("no_such_flag", "no_such_flag.var", "checkout_flow.no_such_variable", "",
                "bad\0key", "x" * 2000, "surrogate\ud800"):
        details = details_of(flags, kind, key, ctx("u3", **U3_ATTRS))
        assert_error(details, ErrorCode.FLAG_NOT_FOUND, DEFAULTS[kind])
    details = details_of(flags, kind, "checkout_flow.no_such_variable", ctx("u1"))
    assert "no_such_variable" in details.error_message and "headline" in details.error_message


VARIABLE_TYPES = {"checkout_flow.show_banner": "boolean", "checkout_flow.headline": "string",
                  "checkout_flow.max_items": "integer", "checkout_flow.discount": "float",
                  "checkout_flow.layout": "object"}


@pytest.mark.parametrize("key", sorted(VARIABLE_TYPES))
@pytest.mark.parametrize("kind", sorted(DEFAULTS))
def test_type_mismatch(flags, key: str, kind: str) -> None:
    details = details_of(flags, kind, key, ctx("u3", **U3_ATTRS))
    if VARIABLE_TYPES[key] == kind:
        assert details.error_code is None and details.reason == Reason.SPLIT
    else:
        assert_error(details, ErrorCode.TYPE_MISMATCH, DEFAULTS[kind], VARIABLE_TYPES[key])


@pytest.mark.parametrize("kind", ["string", "integer", "float", "object"])
def test_flag_without_variable_is_boolean_only(flags, kind: str) -> None:
    details = details_of(flags, kind, "checkout_flow", ctx("u3", **U3_ATTRS))
    assert_error(details, ErrorCode.TYPE_MISMATCH, DEFAULTS[kind], "boolean")


def test_integer_variable_is_not_a_float(flags) -> None:
    assert_error(flags.get_float_details("search_ranking.page_size", 1.5, ctx("u1")),
                 ErrorCode.TYPE_MISMATCH, 1.5)
    assert_error(flags.get_integer_details("search_ranking.boost", 3, ctx("u1")), ErrorCode.TYPE_MISMATCH, 3)


@pytest.mark.parametrize("kind", sorted(DEFAULTS))
def test_targeting_key_missing(flags, kind: str) -> None:
    key = "checkout_flow" if kind == "boolean" else [k for k, t in VARIABLE_TYPES.items() if t == kind][0]
    for context in (None, EvaluationContext(), ctx(None, country="NL"), ctx("")):
        assert_error(details_of(flags, kind, key, context), ErrorCode.TARGETING_KEY_MISSING, DEFAULTS[kind])


def test_api_level_context_supplies_the_targeting_key(flags) -> None:
    api.set_evaluation_context(EvaluationContext(targeting_key="u4", attributes={"country": "NL"}))
    details = flags.get_boolean_details("checkout_flow", False, ctx(None, age=30))
    assert (details.value, details.variant) == (True, "on_nl")  # both contexts' attributes count


@pytest.mark.parametrize("context", [
    EvaluationContext(targeting_key=123),                          # type: ignore[arg-type]
    ctx("x" * 2000),
    ctx("surrogate\ud800"),
    ctx("u1", big="x" * 70000),
    EvaluationContext(targeting_key="u1", attributes={"a%d" % i: i for i in range(1100)}),
], ids=["not-a-str", "long-key", "surrogate-key", "long-attribute", "too-many-attributes"])
def test_invalid_context(flags, context: EvaluationContext) -> None:
    for kind in ("boolean", "string"):
        key = "checkout_flow" if kind == "boolean" else "checkout_flow.headline"
        assert_error(details_of(flags, kind, key, context), ErrorCode.INVALID_CONTEXT, DEFAULTS[kind])


def test_nul_bytes_in_the_context_are_text(flags) -> None:
    """User ids and attribute strings with NUL reach the library whole (its length-delimited calls)."""
    for context in (ctx("user\0with-nul"), ctx("u1", country="N\0L")):
        details = details_of(flags, "boolean", "checkout_flow", context)
        assert details.error_code is None, details


def test_provider_not_ready(datafile_text: str) -> None:
    events = recorders()
    p = ExperimentProvider(default_decide_options=NO_EVENTS)  # no datafile
    api.set_provider(p)
    error = events[ProviderEvent.PROVIDER_ERROR].wait()[0]
    assert error.error_code == ErrorCode.PROVIDER_NOT_READY
    assert "datafile" in error.message
    flags = api.get_client()
    assert flags.get_provider_status() == ProviderStatus.ERROR
    assert p.status == ProviderStatus.ERROR
    for kind in sorted(DEFAULTS):
        key = "checkout_flow" if kind == "boolean" else "checkout_flow.headline"
        assert_error(details_of(flags, kind, key, ctx("u3", **U3_ATTRS)), ErrorCode.PROVIDER_NOT_READY,
                     DEFAULTS[kind])
    assert events[ProviderEvent.PROVIDER_READY].events == []

    # a datafile arrives: READY, then CONFIGURATION_CHANGED, and evaluations work
    p.update_datafile(datafile_text)
    ready = events[ProviderEvent.PROVIDER_READY].wait()[0]
    assert ready.metadata == {"revision": "42"}
    events[ProviderEvent.PROVIDER_CONFIGURATION_CHANGED].wait()
    assert flags.get_provider_status() == ProviderStatus.READY and p.status == ProviderStatus.READY
    assert flags.get_boolean_details("checkout_flow", False, ctx("u3", **U3_ATTRS)).value is True


def test_provider_not_ready_when_called_directly() -> None:
    p = ExperimentProvider()
    details = p.resolve_boolean_details("checkout_flow", True, ctx("u1"))
    assert_error(details, ErrorCode.PROVIDER_NOT_READY, True)
    p.shutdown()


@pytest.mark.parametrize("through", ["client", "provider"])
def test_initialize_waits_for_a_datafile(datafile_text: str, through: str) -> None:
    events = recorders()
    client = experiment.Client(default_decide_options=NO_EVENTS)
    p = ExperimentProvider(client, ready_timeout_s=WAIT_S)
    start = client.start if through == "client" else p.update_datafile
    timer = threading.Timer(0.1, start, args=(datafile_text,))
    timer.start()
    try:
        began = time.monotonic()
        api.set_provider_and_wait(p)
        assert time.monotonic() - began < WAIT_S  # the wait ended with the datafile, not the timeout
        assert api.get_client().get_provider_status() == ProviderStatus.READY
        assert api.get_client().get_boolean_value("checkout_flow", False, ctx("u3", **U3_ATTRS)) is True
        assert len(events[ProviderEvent.PROVIDER_READY].settle()) == 1
        assert events[ProviderEvent.PROVIDER_ERROR].events == []
    finally:
        timer.join()
        client.close()


def test_closed_client_is_fatal(datafile_text: str) -> None:
    events = recorders()
    client = experiment.Client(datafile=datafile_text)
    client.close()
    p = ExperimentProvider(client)
    api.set_provider(p)
    error = events[ProviderEvent.PROVIDER_ERROR].wait()[0]
    assert error.error_code == ErrorCode.PROVIDER_FATAL
    flags = api.get_client()
    assert flags.get_provider_status() == ProviderStatus.FATAL and p.status == ProviderStatus.FATAL
    # the SDK itself answers for a FATAL provider (without a message)
    assert_error(flags.get_boolean_details("checkout_flow", True, ctx("u1")), ErrorCode.PROVIDER_FATAL, True,
                 message=False)
    # and straight from the provider (the SDK stops at the FATAL status before calling it)
    assert_error(p.resolve_string_details("checkout_flow.headline", "d", ctx("u1")), ErrorCode.PROVIDER_FATAL, "d")


def test_client_closed_after_ready(flags, provider: ExperimentProvider) -> None:
    provider.client.close()
    assert_error(flags.get_integer_details("checkout_flow.max_items", 3, ctx("u1")), ErrorCode.PROVIDER_FATAL, 3)


class FailingClient(experiment.Client):
    """A client whose decide fails the way no other branch maps."""

    failure: BaseException = experiment.InternalError("simulated internal error")

    def _decide_strict(self, *args: Any, **kwargs: Any) -> Any:  # the provider's decide
        raise type(self).failure


@pytest.mark.parametrize("failure", [experiment.InternalError("simulated internal error"),
                                     RuntimeError("simulated bug")], ids=["library", "python"])
def test_general_error(datafile_text: str, failure: BaseException) -> None:
    client = FailingClient(datafile=datafile_text)
    FailingClient.failure = failure
    try:
        api.set_provider_and_wait(ExperimentProvider(client))
        flags = api.get_client()
        for kind in sorted(DEFAULTS):
            key = "checkout_flow" if kind == "boolean" else "checkout_flow.headline"
            details = details_of(flags, kind, key, ctx("u1"))
            assert_error(details, ErrorCode.GENERAL, DEFAULTS[kind], "simulated")
    finally:
        client.close()


def test_resolve_never_raises(provider: ExperimentProvider) -> None:
    weird_contexts = [None, EvaluationContext(), EvaluationContext(targeting_key=b"bytes"),  # type: ignore[arg-type]
                      EvaluationContext(targeting_key="u1", attributes=None),  # type: ignore[arg-type]
                      EvaluationContext(targeting_key="u1", attributes=["not", "a", "mapping"]),  # type: ignore
                      ctx("u1", x=object())]
    weird_keys: List[Any] = [None, 42, b"checkout_flow", "", ".", "..", "checkout_flow"]
    for resolve in (provider.resolve_boolean_details, provider.resolve_string_details,
                    provider.resolve_integer_details, provider.resolve_float_details,
                    provider.resolve_object_details):
        for key in weird_keys:
            for context in weird_contexts:
                details = resolve(key, "default", context)
                if details.error_code is not None:
                    assert details.value == "default" and details.reason == Reason.ERROR
    assert_error(provider.resolve_boolean_details(None, False, ctx("u1")), ErrorCode.FLAG_NOT_FOUND, False)
    assert_error(provider.resolve_boolean_details("checkout_flow", False,
                                                  EvaluationContext(targeting_key="u1",
                                                                    attributes=["x"])),  # type: ignore
                 ErrorCode.INVALID_CONTEXT, False)


# ------------------------------------------------------------------------------------------------
# Evaluation context mapping
# ------------------------------------------------------------------------------------------------

class RecordingClient(experiment.Client):
    """A real client that also keeps the (user id, flag, attributes) of every decide."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: List[Any] = []

    def _decide_strict(self, user_id: Any, flag_key: Any, attributes: Any, bits: int) -> Any:  # the provider's
        self.calls.append((user_id, flag_key, dict(attributes or {})))
        return super()._decide_strict(user_id, flag_key, attributes, bits)


def test_context_attributes_are_mapped(datafile_text: str) -> None:
    client = RecordingClient(datafile=datafile_text, default_decide_options=NO_EVENTS)
    try:
        api.set_provider_and_wait(ExperimentProvider(client))
        when = datetime.datetime(2024, 5, 17, 12, 30, tzinfo=datetime.timezone.utc)
        context = EvaluationContext(targeting_key="u4", attributes={
            "country": "NL", "age": 30, "score": 0.75, "beta": True, "nothing": None,
            "huge": 1 << 70, "signup": when, "birthday": datetime.date(1990, 1, 2),
            "nested": {"a": 1}, "items": [1, 2], "pair": (1, 2), "blob": b"raw", "obj": object(),
        })
        details = api.get_client().get_boolean_details("checkout_flow", False, context)
        assert details.error_code is None
        assert (details.value, details.variant) == (True, "on_nl")  # country + age reached the audience
        user_id, flag, attributes = client.calls[-1]
        assert (user_id, flag) == ("u4", "checkout_flow")
        assert attributes == {"country": "NL", "age": 30, "score": 0.75, "beta": True, "nothing": None,
                              "huge": float(1 << 70), "signup": "2024-05-17T12:30:00+00:00",
                              "birthday": "1990-01-02"}
        assert type(attributes["huge"]) is float
    finally:
        client.close()


def test_attributes_decide_targeting(flags) -> None:
    assert flags.get_boolean_details("checkout_flow", False, ctx("u4", **NL_ADULT)).variant == "on_nl"
    assert flags.get_boolean_details("checkout_flow", False, ctx("u4", country="NL", age="30")).variant == "off"
    assert flags.get_boolean_details("checkout_flow", False, ctx("u4", country="DE", age=30)).variant == "off"
    assert flags.get_boolean_details("checkout_flow", False, ctx("u4", country="BE", beta=True)).variant == "on_nl"
    # nested values are left out, not errors: the rest of the context still counts
    details = flags.get_boolean_details("checkout_flow", False,
                                        ctx("u4", country="NL", age=30, address={"city": "Utrecht"}, tags=["a"]))
    assert (details.variant, details.error_code) == ("on_nl", None)


def test_matches_the_client(flags, provider: ExperimentProvider) -> None:
    """Through OpenFeature, every flag and variable equals what Client.decide gives."""
    for i in range(60):
        user = "user-%d" % i
        attrs: Dict[str, Any] = [{}, NL_ADULT, U3_ATTRS][i % 3]
        for flag in ("checkout_flow", "search_ranking"):
            d = provider.client.decide(user, flag, attrs)
            details = flags.get_boolean_details(flag, not d.enabled, ctx(user, **attrs))
            assert (details.value, details.variant) == (d.enabled, d.variation_key)
            assert details.flag_metadata.get("rule_key") == d.rule_key
            for name, value in d.variables.items():
                getter = {bool: flags.get_boolean_value, int: flags.get_integer_value,
                          float: flags.get_float_value, str: flags.get_string_value,
                          dict: flags.get_object_value}[type(value)]
                assert getter("%s.%s" % (flag, name), type(value)(), ctx(user, **attrs)) == value


# ------------------------------------------------------------------------------------------------
# Events and datafile updates
# ------------------------------------------------------------------------------------------------

def test_ready_event_on_set_provider(datafile_text: str) -> None:
    events = recorders()
    client_ready = Recorder()
    flags = api.get_client()
    flags.add_handler(ProviderEvent.PROVIDER_READY, client_ready)
    api.set_provider(make_provider(datafile_text))  # initializes on a thread of the SDK
    ready = events[ProviderEvent.PROVIDER_READY].wait()[0]
    assert ready.provider_name == PROVIDER_NAME
    client_ready.wait()
    assert flags.get_provider_status() == ProviderStatus.READY
    assert events[ProviderEvent.PROVIDER_ERROR].settle() == []
    # a handler added later, while the provider is ready, runs at once
    late = Recorder()
    flags.add_handler(ProviderEvent.PROVIDER_READY, late)
    late.wait()


@pytest.fixture()
def watched(datafile_text: str):
    """(provider, OpenFeature client, recorders) with the handlers added before the provider, so that
    no handler gets the immediate READY of an already ready provider; the initial READY is consumed."""
    events = recorders()
    p = make_provider(datafile_text)
    api.set_provider_and_wait(p)
    assert len(events[ProviderEvent.PROVIDER_READY].wait()) == 1
    events[ProviderEvent.PROVIDER_READY].events.clear()
    return p, api.get_client(), events


def test_configuration_changed(watched: Any, datafile_text: str) -> None:
    provider, flags, events = watched
    before = flags.get_string_details("checkout_flow.headline", "", ctx("u1"))
    assert before.value == "Welcome"

    provider.update_datafile(modified_datafile(datafile_text))
    changed = events[ProviderEvent.PROVIDER_CONFIGURATION_CHANGED].wait()[0]
    assert changed.provider_name == PROVIDER_NAME
    assert changed.metadata == {"revision": "43"}
    assert sorted(changed.flags_changed or []) == ["checkout_flow", "new.flag", "search_ranking"]
    assert flags.get_string_details("checkout_flow.headline", "", ctx("u1")).value == "Welcome back"
    assert flags.get_boolean_details("new.flag", True, ctx("u1")).reason == Reason.DEFAULT
    assert provider.client.config["revision"] == "43"

    # back to the original: the flag that went away is among the changed ones
    provider.update_datafile(datafile_text)
    second = events[ProviderEvent.PROVIDER_CONFIGURATION_CHANGED].wait(2)[1]
    assert sorted(second.flags_changed or []) == ["checkout_flow", "new.flag", "search_ranking"]
    assert second.metadata == {"revision": "42"}
    assert_error(flags.get_boolean_details("new.flag", True, ctx("u1")), ErrorCode.FLAG_NOT_FOUND, True)

    # READY is not repeated while the provider stays ready
    assert events[ProviderEvent.PROVIDER_READY].settle() == []
    assert events[ProviderEvent.PROVIDER_ERROR].events == []
    assert flags.get_provider_status() == ProviderStatus.READY


@pytest.mark.parametrize("bad, code", [
    ("{not json", ErrorCode.PARSE_ERROR),
    ('{"version": "4"}', ErrorCode.PARSE_ERROR),
    ('{"version": "99", "projectId": "1"}', ErrorCode.PARSE_ERROR),
], ids=["invalid-json", "invalid-datafile", "unsupported-version"])
def test_failed_update_keeps_the_old_datafile(watched: Any, datafile_text: str, bad: str, code: ErrorCode) -> None:
    provider, flags, events = watched
    with pytest.raises(experiment.Error):
        provider.update_datafile(bad)
    # the last good datafile is still served: STALE (the specification's state for it), not ERROR
    stale = events[ProviderEvent.PROVIDER_STALE].wait()[0]
    assert stale.error_code == code
    assert "previous datafile" in stale.message
    assert flags.get_provider_status() == ProviderStatus.STALE and provider.status == ProviderStatus.STALE
    assert events[ProviderEvent.PROVIDER_CONFIGURATION_CHANGED].settle() == []
    assert events[ProviderEvent.PROVIDER_ERROR].events == []
    # a second failure while STALE says nothing new
    with pytest.raises(experiment.Error):
        provider.update_datafile(bad)
    assert len(events[ProviderEvent.PROVIDER_STALE].settle()) == 1

    # the old datafile still decides (status STALE does not stop evaluations)
    details = flags.get_boolean_details("checkout_flow", False, ctx("u3", **U3_ATTRS))
    assert (details.value, details.variant, details.error_code) == (True, "treatment", None)
    assert provider.client.config["revision"] == "42"

    # a good datafile recovers: READY, then CONFIGURATION_CHANGED
    provider.update_datafile(modified_datafile(datafile_text, revision="44"))
    assert events[ProviderEvent.PROVIDER_READY].wait()[0].metadata == {"revision": "44"}
    assert events[ProviderEvent.PROVIDER_CONFIGURATION_CHANGED].wait()[0].metadata == {"revision": "44"}
    assert flags.get_provider_status() == ProviderStatus.READY and provider.status == ProviderStatus.READY


def test_update_on_a_closed_client_is_fatal(flags, provider: ExperimentProvider, datafile_text: str) -> None:
    events = recorders()
    provider.client.close()
    with pytest.raises(experiment.ClosedError):
        provider.update_datafile(datafile_text)
    assert events[ProviderEvent.PROVIDER_ERROR].wait()[0].error_code == ErrorCode.PROVIDER_FATAL
    assert flags.get_provider_status() == ProviderStatus.FATAL


def test_update_before_registration_emits_nothing(datafile_text: str) -> None:
    events = recorders()
    p = ExperimentProvider(default_decide_options=NO_EVENTS)
    p.update_datafile(datafile_text)  # not attached to the SDK yet: no handlers to tell
    assert p.status == ProviderStatus.READY
    api.set_provider_and_wait(p)
    assert len(events[ProviderEvent.PROVIDER_READY].wait()) == 1
    assert events[ProviderEvent.PROVIDER_CONFIGURATION_CHANGED].settle() == []


def test_domain_client_handlers_only_see_their_provider(datafile_text: str) -> None:
    default_p = make_provider(datafile_text)
    scoped_p = make_provider(datafile_text)
    api.set_provider_and_wait(default_p)
    api.set_provider_and_wait(scoped_p, domain="scoped")
    default_changes, scoped_changes = Recorder(), Recorder()
    api.get_client().add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, default_changes)
    api.get_client("scoped").add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, scoped_changes)
    scoped_p.update_datafile(modified_datafile(datafile_text))
    scoped_changes.wait()
    assert default_changes.settle() == []
    assert api.get_client("scoped").get_string_value("checkout_flow.headline", "", ctx("u1")) == "Welcome back"
    assert api.get_client().get_string_value("checkout_flow.headline", "", ctx("u1")) == "Welcome"


# ------------------------------------------------------------------------------------------------
# Shutdown, tracking
# ------------------------------------------------------------------------------------------------

def test_shutdown_closes_only_an_owned_client(datafile_text: str) -> None:
    owned = make_provider(datafile_text)
    api.set_provider_and_wait(owned)
    external = experiment.Client(datafile=datafile_text)
    borrowed = ExperimentProvider(external)
    api.set_provider_and_wait(borrowed, domain="borrowed")
    api.shutdown()
    assert owned.client.closed
    assert not external.closed and external.ready
    external.close()

    forced = ExperimentProvider(experiment.Client(datafile=datafile_text), close_client=True)
    api.set_provider_and_wait(forced)
    api.shutdown()
    assert forced.client.closed


def test_track(datafile_text: str) -> None:
    dispatcher = RecordingDispatcher()
    api.set_provider_and_wait(ExperimentProvider(datafile=datafile_text, event_dispatcher=dispatcher))
    flags = api.get_client()
    flags.track("purchase", ctx("u1", country="NL", nested={"x": 1}),
                TrackingEventDetails(value=9.5, attributes={"revenue": 4200, "note": "gift", "skip": [1]}))
    conversions = dispatcher.conversions()
    assert len(conversions) == 1
    visitor = conversions[0]["visitors"][0]
    assert visitor["visitor_id"] == "u1"
    keys = [a["key"] for a in visitor["attributes"]]
    assert "country" in keys and "nested" not in keys
    event = visitor["snapshots"][0]["events"][0]
    assert event["key"] == "purchase"
    assert event["revenue"] == 4200 and event["value"] == 9.5
    assert event["tags"] == {"revenue": 4200, "note": "gift", "value": 9.5}

    # failures are logged, never raised
    flags.track("no_such_event", ctx("u1"))
    flags.track("purchase", ctx(None))
    flags.track("purchase", None)
    assert len(dispatcher.conversions()) == 1


# ------------------------------------------------------------------------------------------------
# Threads
# ------------------------------------------------------------------------------------------------

def test_concurrent_evaluations_while_the_datafile_changes(flags, provider: ExperimentProvider,
                                                           datafile_text: str) -> None:
    changes = Recorder()
    api.add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, changes)
    cases = [
        ("checkout_flow", "boolean", ctx("u3", **U3_ATTRS), {True}),
        ("checkout_flow.max_items", "integer", ctx("u4", **NL_ADULT), {12}),
        ("checkout_flow.discount", "float", ctx("u3", **U3_ATTRS), {0.15}),
        ("checkout_flow.headline", "string", ctx("u1"), {"Welcome", "Welcome back"}),  # changes with the datafile
        ("checkout_flow.layout", "object", ctx("u2", **U2_ATTRS), {json.dumps({"columns": 2, "theme": "light",
                                                                                "widgets": ["cart"]})}),
        ("no_such_flag", "string", ctx("u1"), {DEFAULTS["string"]}),
        ("checkout_flow", "boolean", ctx(None), {DEFAULTS["boolean"]}),
    ]
    problems: List[str] = []
    stop = threading.Event()
    barrier = threading.Barrier(7)

    def evaluate(offset: int) -> None:
        barrier.wait()
        for i in range(300):
            key, kind, context, allowed = cases[(i + offset) % len(cases)]
            details = details_of(flags, kind, key, context)
            value = json.dumps(details.value) if kind == "object" else details.value
            if value not in allowed:
                problems.append("%s %s -> %r" % (key, kind, details))
            if key.startswith("checkout_flow") and context.targeting_key and details.error_code is not None:
                problems.append("%s: unexpected %r" % (key, details))

    def update() -> None:
        barrier.wait()
        texts = [modified_datafile(datafile_text), datafile_text]
        n = 0
        while not stop.is_set() and n < 200:
            provider.update_datafile(texts[n % 2])
            n += 1

    workers = [threading.Thread(target=evaluate, args=(k,)) for k in range(6)]
    updater = threading.Thread(target=update)
    for t in workers + [updater]:
        t.start()
    for t in workers:
        t.join(60)
    stop.set()
    updater.join(60)
    assert not any(t.is_alive() for t in workers + [updater])
    assert problems == []
    assert changes.wait(1)
    assert flags.get_provider_status() == ProviderStatus.READY
