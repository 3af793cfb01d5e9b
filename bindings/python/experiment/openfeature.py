"""An OpenFeature provider backed by :class:`experiment.Client`.

Needs the ``openfeature-sdk`` package (``pip install 'libexperiment[openfeature]'``)::

    from openfeature import api
    from openfeature.evaluation_context import EvaluationContext
    from experiment.openfeature import ExperimentProvider

    provider = ExperimentProvider(datafile=open("datafile.json").read())
    api.set_provider_and_wait(provider)
    flags = api.get_client()
    ctx = EvaluationContext(targeting_key="user-123", attributes={"country": "NL", "age": 31})
    flags.get_boolean_value("checkout_flow", False, ctx)               # the flag's enabled state
    flags.get_integer_value("checkout_flow.max_items", 10, ctx)         # one of its variables
    provider.update_datafile(new_text)                                  # CONFIGURATION_CHANGED

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

Lifecycle and events
    ``initialize()`` returns when the client has a datafile (waiting up to ``ready_timeout_s``); the
    SDK then emits ``PROVIDER_READY``. Without a datafile it raises ``ProviderNotReadyError`` (the SDK
    emits ``PROVIDER_ERROR``, status ERROR); for a closed client ``ProviderFatalError`` (FATAL).
    ``update_datafile(text)`` replaces the datafile (``Client.start``). On success it emits
    ``PROVIDER_READY`` first if the provider was in the ERROR state (no datafile at initialize, or
    after a failed update) and then ``PROVIDER_CONFIGURATION_CHANGED`` (``flags_changed``: every flag key of the old and
    the new datafile, ``metadata``: ``{"revision": ...}``). On failure the client keeps its current
    datafile, ``PROVIDER_ERROR`` is emitted (``PARSE_ERROR`` for a datafile the library rejects,
    ``PROVIDER_FATAL`` for a closed client, else ``GENERAL``) and the library's error is raised.
    ``status`` is the provider's own view (``ProviderStatus``). ``shutdown()`` closes the client if the
    provider created it (``close_client`` overrides).

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
        else:
            client = Client(sdk_key=sdk_key, datafile=datafile, **client_options)
            owned = True
        self._client = client
        self._close_client = owned if close_client is None else bool(close_client)
        self._bits = bits
        self._hooks: List[Hook] = list(hooks)
        self._ready_timeout_s = float(ready_timeout_s)
        self._lock = threading.Lock()          # serializes initialize / update_datafile / shutdown
        self._status = ProviderStatus.NOT_READY
        self._rule_is_experiment: Dict[str, bool] = {}

    # -- provider interface --------------------------------------------------------------------

    @property
    def client(self) -> Client:
        """The experiment.Client the provider decides with."""
        return self._client

    @property
    def status(self) -> ProviderStatus:
        """The provider's own view of its state: NOT_READY, READY, ERROR (last update failed, or no
        datafile at initialize) or FATAL (client closed)."""
        return self._status

    def get_metadata(self) -> Metadata:
        return Metadata(name=PROVIDER_NAME)

    def get_provider_hooks(self) -> List[Hook]:
        return list(self._hooks)

    def initialize(self, evaluation_context: Optional[EvaluationContext] = None) -> None:
        # wait without the lock: update_datafile (which takes it) may be what makes the client ready
        try:
            self._client.wait_ready(self._ready_timeout_s)
            with self._lock:
                self._rule_is_experiment = {}
                ready = self._client.ready  # again, under the lock: an update may just have finished
                self._status = ProviderStatus.READY if ready else ProviderStatus.ERROR
        except ClosedError as exc:
            self._status = ProviderStatus.FATAL
            raise ProviderFatalError("the experiment client is closed: %s" % exc) from None
        if not ready:
            raise ProviderNotReadyError("the experiment client has no datafile yet: call update_datafile(text)")

    def shutdown(self) -> None:
        with self._lock:
            if self._close_client:
                try:
                    self._client.close()
                except Error:  # pragma: no cover - close is idempotent
                    _log.exception("closing the experiment client failed")
                self._status = ProviderStatus.FATAL
            else:
                self._status = ProviderStatus.NOT_READY

    def update_datafile(self, datafile: Union[str, bytes]) -> None:
        """Replaces the client's datafile. Emits PROVIDER_CONFIGURATION_CHANGED (preceded by
        PROVIDER_READY if the provider was in the ERROR state) on success; on failure keeps the current datafile,
        emits PROVIDER_ERROR and raises the library's error."""
        with self._lock:
            client = self._client
            try:
                old_flags = self._flag_keys()
                client.start(datafile)
                config = client.config
            except Exception as exc:
                if isinstance(exc, ClosedError):
                    code, self._status = ErrorCode.PROVIDER_FATAL, ProviderStatus.FATAL
                elif isinstance(exc, _DATAFILE_ERRORS):
                    code, self._status = ErrorCode.PARSE_ERROR, ProviderStatus.ERROR
                else:
                    code, self._status = ErrorCode.GENERAL, ProviderStatus.ERROR
                self.emit_provider_error(ProviderEventDetails(
                    message="datafile update failed, the previous datafile stays in use: %s" % exc,
                    error_code=code))
                raise
            self._rule_is_experiment = {}
            # READY again after an ERROR (no datafile at initialize, or a failed update). Before initialize
            # has concluded (NOT_READY) the SDK emits READY itself when initialize returns.
            recovered = self._status is ProviderStatus.ERROR
            self._status = ProviderStatus.READY
            new_flags = list(config.get("flags") or ())
            seen = set(new_flags)
            changed = new_flags + [key for key in old_flags if key not in seen]
            metadata = {"revision": str(config.get("revision") or "")}
            if recovered:
                self.emit_provider_ready(ProviderEventDetails(metadata=dict(metadata)))
            self.emit_provider_configuration_changed(ProviderEventDetails(
                flags_changed=changed, message="datafile replaced", metadata=metadata))

    def track(self, tracking_event_name: str, evaluation_context: Optional[EvaluationContext] = None,
              tracking_event_details: Any = None) -> None:
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
        return self._resolve(_BOOLEAN, flag_key, default_value, evaluation_context)

    def resolve_string_details(self, flag_key: str, default_value: str,
                               evaluation_context: Optional[EvaluationContext] = None
                               ) -> FlagResolutionDetails[str]:
        return self._resolve(_STRING, flag_key, default_value, evaluation_context)

    def resolve_integer_details(self, flag_key: str, default_value: int,
                                evaluation_context: Optional[EvaluationContext] = None
                                ) -> FlagResolutionDetails[int]:
        return self._resolve(_INTEGER, flag_key, default_value, evaluation_context)

    def resolve_float_details(self, flag_key: str, default_value: float,
                              evaluation_context: Optional[EvaluationContext] = None
                              ) -> FlagResolutionDetails[float]:
        return self._resolve(_FLOAT, flag_key, default_value, evaluation_context)

    def resolve_object_details(self, flag_key: str, default_value: Union[Sequence[Any], Mapping[str, Any]],
                               evaluation_context: Optional[EvaluationContext] = None
                               ) -> FlagResolutionDetails[Union[Sequence[Any], Mapping[str, Any]]]:
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
        except NotReadyError:
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
