"""An OpenFeature provider backed by :class:`experiment.Client`.

Needs the ``openfeature-sdk`` package (``pip install 'libexperiment[openfeature]'``)::

    from openfeature import api
    from openfeature.evaluation_context import EvaluationContext
    from experiment.openfeature import ExperimentProvider

    provider = ExperimentProvider(datafile=open("datafile.json").read())
    api.set_provider(provider)        # (openfeature-sdk 0.10+ also has set_provider_and_wait)
    flags = api.get_client()
    ctx = EvaluationContext(targeting_key="user-123", attributes={"country": "NL", "age": 31})
    flags.get_boolean_value("checkout_flow", False, ctx)               # the flag's enabled state
    flags.get_integer_value("checkout_flow.max_items", 10, ctx)         # one of its variables
    provider.update_datafile(new_text)                                  # CONFIGURATION_CHANGED

    # or fetched by SDK key, kept fresh by polling; READY once a datafile is in place
    provider = ExperimentProvider(sdk_key="YOUR_SDK_KEY", polling_interval_s=60)

Mapping
=======

Evaluation context
    ``targeting_key`` is the user id. A missing (``None``) or empty targeting key gives
    ``TARGETING_KEY_MISSING``; one that is not a ``str`` gives ``INVALID_CONTEXT``.
    ``attributes`` become the user's attributes for this decision: ``str``, ``bool``, ``int``,
    ``float`` and ``None`` as they are; an ``int`` outside 64 bits as a ``float``; a ``datetime`` as
    its ISO 8601 text (``datetime.isoformat()``). Nested values (dicts, lists and other sequences) and
    anything else are not attributes and are left out, as are attributes whose key is not a ``str``.
    A context the library still refuses (a NUL character or unencodable text, a string longer than
    the library's limit, too many attributes) gives ``INVALID_CONTEXT``.

Flag keys
    ``"<flag>"`` addresses a feature flag as a whole: only ``resolve_boolean_details`` accepts it, and
    its value is the decision's ``enabled``. ``"<flag>.<variable>"`` (split at the last dot) addresses
    a variable of the flag, resolved with the function of the variable's type: ``boolean`` ->
    boolean, ``string`` -> string, ``integer`` -> integer, ``double`` -> float and ``json`` -> object.
    (The type is read from the decided value, so a ``json`` variable holding a scalar resolves as that
    scalar's type.) When ``"<flag>.<variable>"`` names no known flag but the whole text is a flag key,
    the whole text is taken as a flag key. Other types give ``TYPE_MISMATCH``; no widening is done
    (an ``integer`` variable does not resolve as a float).

Result
    ``value``: ``enabled`` or the variable's value. ``variant``: the decision's ``variation_key``
    (``None`` when the user got no variation). ``flag_metadata``: ``enabled`` (bool) and, when a rule
    decided, ``rule_key``. ``reason``:

    ==================  =========================================================================
    ``DEFAULT``         the user got no variation (no rule admitted them): ``enabled`` is false
                        and variables have their default values
    ``TARGETING_MATCH`` a variation without a rule (a flag-level forced decision for this user),
                        or a delivery rule (the flag's rollout) whose variation turns the flag on
    ``DISABLED``        a delivery rule whose variation turns the flag off (how a flag switched
                        off in an environment, or its "off" everyone-else rule, decides)
    ``SPLIT``           an experiment (A/B test) rule decided: the variation came from bucketing
                        the user among the experiment's variations (this includes a variation
                        forced for the user inside that experiment, which the decision does not
                        tell apart)
    ``ERROR``           with ``error_code`` and ``error_message``; the value is the default value
    ==================  =========================================================================

    Whether a rule key is an experiment is read from the client's datafile (``Client.config``),
    remembered per rule key and forgotten when the datafile is replaced through this provider.

Errors (``resolve_*`` never raise; they return the caller's default value with):
    ``FLAG_NOT_FOUND``        no such flag, or the flag has no such variable (also a key no flag can
                              have: not text, empty, a NUL character, longer than the key limit)
    ``TYPE_MISMATCH``         a variable resolved with the function of another type, or a flag key
                              without a variable resolved other than as a boolean
    ``PROVIDER_NOT_READY``    the client has no datafile yet
    ``PROVIDER_FATAL``        the client was closed (e.g. after ``shutdown()``)
    ``TARGETING_KEY_MISSING`` / ``INVALID_CONTEXT``  as above
    ``GENERAL``               anything else, with the library's message

Lifecycle and events (the OpenFeature specification's provider states)
    ``ExperimentProvider(sdk_key=...)`` without a ``client`` starts the client asynchronously
    (``Client.start_async``: fetch, else the cached datafile, else ``datafile`` as the bundled fallback;
    then polling or the cache-TTL mode); with ``datafile`` alone it starts synchronously; with neither it
    starts with no datafile (see :meth:`update_datafile`). A ``client`` passed in is used as it is.

    ``initialize()`` returns when the client has a datafile (waiting up to ``ready_timeout_s``); the SDK
    then emits ``PROVIDER_READY``. Without one it raises ``ProviderNotReadyError`` (the SDK emits
    ``PROVIDER_ERROR``, status ERROR); for a closed client ``ProviderFatalError`` (FATAL).

    Afterwards the provider follows the client's datafile, whatever changes it (a fetch at start, a poll,
    a cache-TTL refresh, ``Client.refresh``, ``Client.start`` or :meth:`update_datafile`):

    =====================================  =================================================================
    a new revision is in place             ``PROVIDER_READY`` first if the provider was not READY (ERROR or
                                           STALE), then ``PROVIDER_CONFIGURATION_CHANGED``
                                           (``flags_changed``: every flag key of the old and the new
                                           datafile; ``metadata``: ``{"revision": ...}``)
    an update failed (fetch failed or      STALE (``PROVIDER_STALE``, with the reason and, for a rejected
    rejected, or a datafile given to       datafile, ``error_code`` ``PARSE_ERROR``) while a last good
    ``update_datafile`` was refused)       datafile is served; ERROR (``PROVIDER_ERROR``) only when the
                                           client has no datafile at all
    a later fetch succeeds (new datafile   READY again (``PROVIDER_READY``)
    or not modified)
    the client is closed                   FATAL
    =====================================  =================================================================

    Evaluations go on in every state but FATAL: STALE and ERROR evaluate with the datafile in use (or
    answer ``PROVIDER_NOT_READY`` without one). ``status`` is the provider's own view
    (``ProviderStatus``). ``shutdown()`` closes the client if the provider created it (``close_client``
    overrides), else detaches from it.

Tracking
    ``track(name, context, details)`` records a conversion (``Client.track``) for the context's user:
    ``details.value`` becomes the ``"value"`` tag and scalar ``details.attributes`` further tags.
    Failures are logged, never raised.

Thread safety: resolutions may run on any number of threads at once, also while ``update_datafile``
replaces the datafile.
"""

from __future__ import annotations

import datetime as _datetime
import logging
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

try:
    from openfeature.evaluation_context import EvaluationContext
    from openfeature.event import ProviderEventDetails
    from openfeature.exception import ErrorCode, ProviderFatalError, ProviderNotReadyError
    from openfeature.flag_evaluation import FlagResolutionDetails, Reason
    from openfeature.hook import Hook
    from openfeature.provider import AbstractProvider, Metadata, ProviderStatus
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError("experiment.openfeature needs the openfeature-sdk package: "
                      "pip install 'libexperiment[openfeature]' (%s)" % _exc) from _exc

from ._native import EXP_DECIDE_EXCLUDE_VARIABLES, EXP_MAX_KEY_BYTES
from .client import Client
from .decision import Decision, OptionsArg, decide_options_to_int
from .errors import (
    ClosedError,
    Error,
    InvalidArgumentError,
    InvalidDatafileError,
    InvalidJSONError,
    InvalidUTF8Error,
    NotReadyError,
    TooDeepError,
    TooLargeError,
    UnknownFlagError,
)

__all__ = ["ExperimentProvider", "PROVIDER_NAME"]

_log = logging.getLogger("experiment.openfeature")

PROVIDER_NAME = "libexperiment"

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_RULE_CACHE_MAX = 4096

# OpenFeature type names, as used in messages
_BOOLEAN, _STRING, _INTEGER, _FLOAT, _OBJECT = "boolean", "string", "integer", "float", "object"

# errors of the library that a bad evaluation context (or flag key) causes
_INPUT_ERRORS = (InvalidArgumentError, InvalidUTF8Error, TooLargeError)
# errors of Client.start that mean "this datafile is unusable"
_DATAFILE_ERRORS = (InvalidJSONError, InvalidDatafileError, TooLargeError, TooDeepError, InvalidUTF8Error)


def _type_of(value: Any) -> Optional[str]:
    """The OpenFeature type of a decided variable value (bool before int: bool is an int)."""
    if isinstance(value, bool):
        return _BOOLEAN
    if isinstance(value, int):
        return _INTEGER
    if isinstance(value, float):
        return _FLOAT
    if isinstance(value, str):
        return _STRING
    if isinstance(value, (dict, list)):
        return _OBJECT
    return None


def _attribute(value: Any) -> Tuple[bool, Any]:
    """(keep, converted) for one context attribute value."""
    if value is None or isinstance(value, (bool, str, float)):
        return True, value
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return True, value
        return True, float(value)
    if isinstance(value, (_datetime.datetime, _datetime.date)):
        return True, value.isoformat()
    return False, None  # dicts, lists, other sequences and objects are not attributes


def _impossible_flag_key(key: Any) -> Optional[str]:
    """Why no flag can have this key, or None if one could."""
    if not isinstance(key, str):
        return "flag key must be a str, got %s" % type(key).__name__
    if not key:
        return "flag key is empty"
    if "\0" in key:
        return "flag key %r contains a NUL character" % key
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "flag key %r cannot be encoded as UTF-8" % key
    if size > EXP_MAX_KEY_BYTES:
        return "flag key is longer than %d bytes" % EXP_MAX_KEY_BYTES
    return None


class _Failure(Exception):
    """Carries an OpenFeature error code and message out of the evaluation path."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ExperimentProvider(AbstractProvider):
    """OpenFeature provider deciding flags with libexperiment (see the module docstring for the mapping).

    ``ExperimentProvider(client=None, *, datafile=None, sdk_key=None, decide_options=(), hooks=(),
    ready_timeout_s=0.0, close_client=None, **client_options)``

    Give either an existing :class:`experiment.Client` (``client``) or what creates one: ``datafile``
    (optional: without one the provider starts not ready; see :meth:`update_datafile`), ``sdk_key``
    and further ``Client`` keyword arguments (``default_decide_options``, ``event_dispatcher``, ...).
    ``decide_options`` are added to every decide. ``close_client`` says whether :meth:`shutdown`
    closes the client; by default only a client the provider created is closed.
    """

    def __init__(self, client: Optional[Client] = None, *, datafile: Union[str, bytes, None] = None,
                 sdk_key: Optional[str] = None, decide_options: OptionsArg = (),
                 hooks: Iterable[Hook] = (), ready_timeout_s: float = 0.0,
                 close_client: Optional[bool] = None, **client_options: Any) -> None:
        super().__init__()
        bits = decide_options_to_int(decide_options)  # before a client exists that would need closing
        if client is not None:
            if datafile is not None or sdk_key is not None or client_options:
                raise TypeError("ExperimentProvider: pass either client or the arguments that create one "
                                "(datafile, sdk_key, client options), not both")
            if not isinstance(client, Client):
                raise TypeError("ExperimentProvider: client must be an experiment.Client, got %s"
                                % type(client).__name__)
            owned = False
            start = None
        else:
            # The client starts only once the listeners below are in place, so no revision goes unseen.
            start = client_options.pop("start", None)
            if start is None:
                start = "async" if sdk_key is not None else "sync" if datafile is not None else "none"
            client = Client(sdk_key=sdk_key, start="none", **client_options)
            owned = True
        self._client = client
        self._close_client = owned if close_client is None else bool(close_client)
        self._bits = bits
        self._hooks: List[Hook] = list(hooks)
        self._ready_timeout_s = float(ready_timeout_s)
        # Serializes the state changes (initialize, updates, library notifications, shutdown). Reentrant:
        # Client.start inside update_datafile calls the config_update listener on this same thread.
        self._lock = threading.RLock()
        self._status = ProviderStatus.NOT_READY
        self._initialized = False              # initialize() concluded: from then on, events are emitted
        self._rule_is_experiment: Dict[str, bool] = {}
        self._listener_ids: List[int] = []
        try:
            self._listener_ids = [client.add_listener("config_update", self._on_config_update),
                                  client.add_listener("datafile_fetch", self._on_datafile_fetch)]
        except ClosedError:
            pass  # initialize() reports a closed client (FATAL)
        self._flags: List[str] = self._flag_keys()  # the flag keys of the datafile in use
        try:
            if start == "sync":
                client.start(datafile)  # type: ignore[arg-type]
            elif start == "async":
                client.start_async(datafile)
        except BaseException:
            if owned:
                client.close()
            raise

    # -- provider interface --------------------------------------------------------------------

    @property
    def client(self) -> Client:
        """The experiment.Client the provider decides with."""
        return self._client

    @property
    def status(self) -> ProviderStatus:
        """The provider's own view of its state: NOT_READY (before initialize), READY, STALE (serving
        the last good datafile after a failed update), ERROR (no datafile to serve) or FATAL (client
        closed)."""
        return self._status

    def get_metadata(self) -> Metadata:
        """The provider's metadata: its name, ``"libexperiment"``."""
        return Metadata(name=PROVIDER_NAME)

    def get_provider_hooks(self) -> List[Hook]:
        """The hooks given to the constructor (``hooks=``)."""
        return list(self._hooks)

    def initialize(self, evaluation_context: Optional[EvaluationContext] = None) -> None:
        """Called by the SDK when the provider is set: waits up to ``ready_timeout_s`` for a datafile.
        Raises ``ProviderNotReadyError`` without one (status ERROR until one arrives, then READY with
        ``PROVIDER_READY``), ``ProviderFatalError`` for a closed client."""
        # wait without the lock: the listener that records a new datafile takes it
        try:
            self._client.wait_ready(self._ready_timeout_s)
            with self._lock:
                self._rule_is_experiment = {}
                ready = self._client.ready  # again, under the lock: an update may just have finished
                self._flags = self._flag_keys()
                self._status = ProviderStatus.READY if ready else ProviderStatus.ERROR
                self._initialized = True
        except ClosedError as exc:
            self._status = ProviderStatus.FATAL
            raise ProviderFatalError("the experiment client is closed: %s" % exc) from None
        if not ready:
            status = self._datafile_status()
            why = status.get("last_error") or "no datafile yet"
            raise ProviderNotReadyError("the experiment client has no datafile (%s): it becomes ready when one "
                                        "arrives (fetch, cache or update_datafile(text))" % why)

    def shutdown(self) -> None:
        """Called by the SDK when the provider is replaced or the API shuts down: closes the client
        if the provider created it (or ``close_client=True``), else stops following it."""
        with self._lock:
            self._initialized = False
            if self._close_client:
                try:
                    self._client.close()
                except Error:  # pragma: no cover - close is idempotent
                    _log.exception("closing the experiment client failed")
                self._status = ProviderStatus.FATAL
            else:
                for listener_id in self._listener_ids:
                    try:
                        self._client.remove_listener(listener_id)
                    except Error:
                        pass  # a closed client has no listeners left
                self._listener_ids = []
                self._status = ProviderStatus.NOT_READY

    def update_datafile(self, datafile: Union[str, bytes]) -> None:
        """Replaces the client's datafile (``Client.start``). A new revision emits
        PROVIDER_CONFIGURATION_CHANGED (preceded by PROVIDER_READY when the provider was not READY). A
        datafile the library refuses changes nothing but the state: STALE (PROVIDER_STALE) while a last
        good datafile is served, else ERROR (PROVIDER_ERROR); the library's error is raised."""
        with self._lock:
            try:
                self._client.start(datafile)  # a new revision reaches _on_config_update on this thread
            except Exception as exc:
                if isinstance(exc, ClosedError):
                    self._status = ProviderStatus.FATAL
                    self.emit_provider_error(ProviderEventDetails(
                        message="datafile update failed: the client is closed: %s" % exc,
                        error_code=ErrorCode.PROVIDER_FATAL))
                else:
                    code = ErrorCode.PARSE_ERROR if isinstance(exc, _DATAFILE_ERRORS) else ErrorCode.GENERAL
                    self._update_failed("datafile update failed, the previous datafile stays in use: %s" % exc,
                                        code)
                raise
            if self._status in (ProviderStatus.STALE, ProviderStatus.ERROR):
                self._recovered()  # the same revision again: fresh, though not a change

    # -- following the client's datafile (library notifications, on library threads) -------------

    def _on_config_update(self, payload: Any) -> None:
        """A new revision is in place (from any source): READY if it was not, then CONFIGURATION_CHANGED."""
        with self._lock:
            self._rule_is_experiment = {}
            old_flags = self._flags
            try:
                config = self._client.config
            except Error:
                return  # closed meanwhile
            new_flags = list(config.get("flags") or ())
            self._flags = new_flags
            if self._status is ProviderStatus.FATAL:
                return
            revision = str(config.get("revision") or "")
            metadata: Dict[str, Union[bool, int, float, str]] = {"revision": revision}
            if not self._initialized:
                # before initialize concluded: the SDK emits READY when it returns
                self._status = ProviderStatus.READY
                return
            if self._status is not ProviderStatus.READY:
                self._status = ProviderStatus.READY
                self.emit_provider_ready(ProviderEventDetails(metadata=dict(metadata)))
            seen = set(new_flags)
            changed = new_flags + [key for key in old_flags if key not in seen]
            self.emit_provider_configuration_changed(ProviderEventDetails(
                flags_changed=changed, message="datafile revision %s in use" % revision, metadata=metadata))

    def _on_datafile_fetch(self, payload: Any) -> None:
        """How a fetch ended: a failure makes the provider STALE (or ERROR with nothing to serve); a
        success after one makes it READY again."""
        if not isinstance(payload, dict):
            return
        outcome = payload.get("outcome")
        with self._lock:
            if not self._initialized or self._status is ProviderStatus.FATAL:
                return
            if outcome in ("failed", "rejected"):
                code = ErrorCode.PARSE_ERROR if outcome == "rejected" else ErrorCode.GENERAL
                self._update_failed("datafile %s: %s" % ("rejected" if outcome == "rejected" else "fetch failed",
                                                         payload.get("error") or "unknown error"),
                                    code, served=bool(payload.get("ready")))
            elif outcome in ("updated", "not_modified") and payload.get("ready"):
                if self._status in (ProviderStatus.STALE, ProviderStatus.ERROR):
                    self._recovered()

    def _update_failed(self, message: str, code: ErrorCode, served: Optional[bool] = None) -> None:
        """(Under the lock.) STALE when a datafile is still served, else ERROR; the event once per change."""
        if served is None:
            try:
                served = self._client.ready
            except Error:
                served = False
        if served:
            if self._status is not ProviderStatus.STALE and self._initialized:
                self._status = ProviderStatus.STALE
                self.emit_provider_stale(ProviderEventDetails(message=message, error_code=code))
            elif not self._initialized:
                self._status = ProviderStatus.STALE
        else:
            if self._status is not ProviderStatus.ERROR and self._initialized:
                self._status = ProviderStatus.ERROR
                self.emit_provider_error(ProviderEventDetails(message=message, error_code=code))
            elif not self._initialized:
                self._status = ProviderStatus.ERROR

    def _recovered(self) -> None:
        """(Under the lock.) Back to READY after STALE or ERROR, with the revision in use."""
        self._status = ProviderStatus.READY
        if self._initialized:
            revision = ""
            try:
                revision = str(self._client.config.get("revision") or "")
            except Error:
                pass
            metadata: Dict[str, Union[bool, int, float, str]] = {"revision": revision}
            self.emit_provider_ready(ProviderEventDetails(metadata=metadata))

    def _datafile_status(self) -> Dict[str, Any]:
        try:
            return self._client.datafile_status()
        except Error:
            return {}

    def track(self, tracking_event_name: str, evaluation_context: Optional[EvaluationContext] = None,
              tracking_event_details: Any = None) -> None:
        """Records conversion ``tracking_event_name`` for the context's user (``Client.track``):
        ``details.value`` becomes the ``"value"`` tag, scalar ``details.attributes`` further tags.
        Failures are logged, never raised."""
        try:
            user_id, attributes = self._user(evaluation_context)
            tags: Dict[str, Any] = {}
            if tracking_event_details is not None:
                for key, value in (getattr(tracking_event_details, "attributes", None) or {}).items():
                    if isinstance(key, str) and (value is None or isinstance(value, (bool, int, float, str))):
                        tags[key] = value
                value = getattr(tracking_event_details, "value", None)
                if value is not None:
                    tags["value"] = value
            self._client.track(tracking_event_name, user_id, attributes, tags or None)
        except _Failure as failure:
            _log.warning("track %r: %s", tracking_event_name, failure.message)
        except Error as exc:
            _log.warning("track %r: %s: %s", tracking_event_name, exc.status, exc)
        except Exception:
            _log.exception("track %r failed", tracking_event_name)

    # -- resolution ----------------------------------------------------------------------------

    def resolve_boolean_details(self, flag_key: str, default_value: bool,
                                evaluation_context: Optional[EvaluationContext] = None
                                ) -> FlagResolutionDetails[bool]:
        """Resolves ``flag_key`` as a boolean (see the module docstring); never raises."""
        return self._resolve(_BOOLEAN, flag_key, default_value, evaluation_context)

    def resolve_string_details(self, flag_key: str, default_value: str,
                               evaluation_context: Optional[EvaluationContext] = None
                               ) -> FlagResolutionDetails[str]:
        """Resolves ``flag_key`` as a string (see the module docstring); never raises."""
        return self._resolve(_STRING, flag_key, default_value, evaluation_context)

    def resolve_integer_details(self, flag_key: str, default_value: int,
                                evaluation_context: Optional[EvaluationContext] = None
                                ) -> FlagResolutionDetails[int]:
        """Resolves ``flag_key`` as an integer (see the module docstring); never raises."""
        return self._resolve(_INTEGER, flag_key, default_value, evaluation_context)

    def resolve_float_details(self, flag_key: str, default_value: float,
                              evaluation_context: Optional[EvaluationContext] = None
                              ) -> FlagResolutionDetails[float]:
        """Resolves ``flag_key`` as a float (see the module docstring); never raises."""
        return self._resolve(_FLOAT, flag_key, default_value, evaluation_context)

    def resolve_object_details(self, flag_key: str, default_value: Union[Sequence[Any], Mapping[str, Any]],
                               evaluation_context: Optional[EvaluationContext] = None
                               ) -> FlagResolutionDetails[Union[Sequence[Any], Mapping[str, Any]]]:
        """Resolves ``"<flag>.<variable>"`` of a json variable as an object; never raises."""
        return self._resolve(_OBJECT, flag_key, default_value, evaluation_context)

    def _resolve(self, kind: str, flag_key: Any, default_value: Any,
                 context: Optional[EvaluationContext]) -> FlagResolutionDetails[Any]:
        try:
            return self._evaluate(kind, flag_key, context)
        except _Failure as failure:
            code, message = failure.code, failure.message
        except Exception as exc:  # never raise out of a resolution
            _log.debug("resolving %r failed", flag_key, exc_info=True)
            code, message = ErrorCode.GENERAL, "%s: %s" % (type(exc).__name__, exc)
        return FlagResolutionDetails(value=default_value, reason=Reason.ERROR, error_code=code,
                                     error_message=message)

    def _evaluate(self, kind: str, flag_key: Any, context: Optional[EvaluationContext]
                  ) -> FlagResolutionDetails[Any]:
        problem = _impossible_flag_key(flag_key)
        if problem is not None:
            raise _Failure(ErrorCode.FLAG_NOT_FOUND, problem)
        user_id, attributes = self._user(context)
        flag, dot, variable = flag_key.rpartition(".")
        if not (dot and flag and variable):  # "a", ".a", "a.": the whole text is the flag key
            flag, variable = flag_key, None
        try:
            decision = self._decide(user_id, flag, attributes, kind, variable)
        except _Failure as failure:
            if variable is None or failure.code is not ErrorCode.FLAG_NOT_FOUND:
                raise
            # "a.b" is no flag "a": perhaps "a.b" is the flag key itself
            try:
                decision = self._decide(user_id, flag_key, attributes, kind, None)
            except _Failure as whole:
                if whole.code is ErrorCode.FLAG_NOT_FOUND:
                    raise failure from None
                raise
            flag, variable = flag_key, None

        if variable is None:
            if kind != _BOOLEAN:
                raise _Failure(ErrorCode.TYPE_MISMATCH,
                               "flag %r without a variable key resolves as a boolean (its enabled state), "
                               "not as %s; use \"%s.<variable>\" for a variable" % (flag, kind, flag))
            value: Any = decision.enabled
        else:
            variables = decision.variables
            if variable not in variables:
                raise _Failure(ErrorCode.FLAG_NOT_FOUND, "flag %r has no variable %r (it has: %s)"
                               % (flag, variable, ", ".join(sorted(variables)) or "none"))
            value = variables[variable]
            actual = _type_of(value)
            if actual != kind:
                raise _Failure(ErrorCode.TYPE_MISMATCH, "variable %r of flag %r has type %s, not %s"
                               % (variable, flag, actual or type(value).__name__, kind))

        metadata: Dict[str, Union[bool, int, float, str]] = {"enabled": decision.enabled}
        if decision.rule_key is not None:
            metadata["rule_key"] = decision.rule_key
        return FlagResolutionDetails(value=value, reason=self._reason(decision),
                                     variant=decision.variation_key, flag_metadata=metadata)

    def _decide(self, user_id: str, flag: str, attributes: Dict[str, Any], kind: str,
                variable: Optional[str]) -> Decision:
        bits = self._bits
        if variable is None:
            bits |= EXP_DECIDE_EXCLUDE_VARIABLES  # the enabled state needs no variables
        try:
            return self._client._decide_strict(user_id, flag, attributes, bits)
        except UnknownFlagError:
            raise _Failure(ErrorCode.FLAG_NOT_FOUND, "no flag %r in the datafile" % flag) from None
        except NotReadyError as exc:
            raise _Failure(ErrorCode.PROVIDER_NOT_READY, str(exc)) from None
        except ClosedError as exc:
            raise _Failure(ErrorCode.PROVIDER_FATAL, str(exc)) from None
        except _INPUT_ERRORS as exc:
            # the flag key was checked before (_impossible_flag_key): what the library refuses is the context
            raise _Failure(ErrorCode.INVALID_CONTEXT, str(exc)) from None
        except Error as exc:
            raise _Failure(ErrorCode.GENERAL, "%s: %s" % (exc.status, exc)) from None

    def _reason(self, decision: Decision) -> str:
        if decision.variation_key is None:
            return Reason.DEFAULT
        rule = decision.rule_key
        if rule is None:
            return Reason.TARGETING_MATCH  # a forced decision for this user, outside any rule
        if self._is_experiment(rule):
            return Reason.SPLIT
        return Reason.TARGETING_MATCH if decision.enabled else Reason.DISABLED

    def _is_experiment(self, rule_key: str) -> bool:
        cache = self._rule_is_experiment
        known = cache.get(rule_key)
        if known is None:
            try:
                experiments = self._client.config.get("experiments") or ()
            except Error:
                return False
            known = rule_key in experiments
            if len(cache) >= _RULE_CACHE_MAX:
                cache.clear()
            cache[rule_key] = known
        return known

    def _flag_keys(self) -> List[str]:
        try:
            return list(self._client.config.get("flags") or ())
        except Error:  # not ready (no flags yet) or closed
            return []

    @staticmethod
    def _user(context: Optional[EvaluationContext]) -> Tuple[str, Dict[str, Any]]:
        """(user id, attributes) from an evaluation context; raises _Failure for an unusable one."""
        if context is None:
            raise _Failure(ErrorCode.TARGETING_KEY_MISSING, "the evaluation context has no targeting key")
        user_id = context.targeting_key
        if user_id is None or user_id == "":
            raise _Failure(ErrorCode.TARGETING_KEY_MISSING, "the evaluation context has no targeting key")
        if not isinstance(user_id, str):
            raise _Failure(ErrorCode.INVALID_CONTEXT, "the targeting key must be a str, got %s"
                           % type(user_id).__name__)
        attributes: Dict[str, Any] = {}
        source = context.attributes
        if source:
            try:
                items = source.items()
            except AttributeError:
                raise _Failure(ErrorCode.INVALID_CONTEXT, "the context attributes must be a mapping, got %s"
                               % type(source).__name__) from None
            for key, value in items:
                if not isinstance(key, str):
                    continue
                keep, converted = _attribute(value)
                if keep:
                    attributes[key] = converted
        return user_id, attributes
