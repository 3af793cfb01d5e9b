"""Sigma's experiment handle (exp_experiment *): the variation a user has in one experiment and its
typed parameters. Made by Client.get_experiment; see include/experiment.h, section "Sigma"."""

from __future__ import annotations

import json
from ctypes import byref, c_char_p, c_double, c_int, c_int64
from typing import Any, Dict, Optional

from . import _native
from .errors import error_for_status

__all__ = ["UserExperiment"]

_lib = _native.lib


def _raise(status: int) -> None:
    raw = _lib.exp_last_error()
    raise error_for_status(status, raw.decode("utf-8", "replace") if raw else "")


def _decode(raw: Optional[bytes]) -> str:
    return raw.decode("utf-8") if raw is not None else ""


class UserExperiment:
    """The user's place in an experiment: ``id``, ``key``, ``variation_id``, ``variation_key``,
    ``group_index`` (the variation's position in the experiment) and ``parameters`` (a dict), plus typed
    getters that apply the library's type rules (TypeMismatchError, NotFoundError; None when the variation
    has no value)."""

    def __init__(self, address: int) -> None:
        self._address = address
        self.id = _decode(_lib.exp_experiment_id(address))
        self.key = _decode(_lib.exp_experiment_key(address))
        self.variation_id = _decode(_lib.exp_experiment_variation_id(address))
        self.variation_key = _decode(_lib.exp_experiment_variation_key(address))
        self.group_index: int = _lib.exp_experiment_group_index(address)
        self.parameters: Dict[str, Any] = json.loads(_decode(_lib.exp_experiment_parameters_json(address)) or "{}")

    def __del__(self) -> None:
        address: Optional[int] = getattr(self, "_address", None)
        self._address = None  # type: ignore[assignment]
        if address:
            _lib.exp_experiment_free(address)

    def __repr__(self) -> str:
        return "UserExperiment(key=%r, variation_key=%r, group_index=%d)" % (self.key, self.variation_key,
                                                                            self.group_index)

    def _get(self, function: Any, out: Any, name: str) -> bool:
        if not isinstance(name, str):
            raise TypeError("parameter name: expected str, got %s" % type(name).__name__)
        found = c_int()
        status = function(self._address, name.encode("utf-8"), byref(out), byref(found))
        if status:
            _raise(status)
        return bool(found.value)

    def param_bool(self, name: str) -> Optional[bool]:
        """The boolean parameter ``name`` (None when absent); TypeMismatchError for another type."""
        out = c_int()
        return bool(out.value) if self._get(_lib.exp_experiment_param_bool, out, name) else None

    def param_int(self, name: str) -> Optional[int]:
        """The integer parameter ``name`` (None when absent); TypeMismatchError for another type."""
        out = c_int64()
        return out.value if self._get(_lib.exp_experiment_param_int, out, name) else None

    def param_double(self, name: str) -> Optional[float]:
        """The double parameter ``name`` (None when absent); TypeMismatchError for another type."""
        out = c_double()
        return out.value if self._get(_lib.exp_experiment_param_double, out, name) else None

    def _text(self, function: Any, name: str) -> Optional[str]:
        out = c_char_p()
        found = self._get(function, out, name)
        raw = out.value
        if raw is not None:
            _lib.exp_free(out)
        return raw.decode("utf-8") if found and raw is not None else None

    def param_string(self, name: str) -> Optional[str]:
        """The string parameter ``name`` (None when absent); TypeMismatchError for another type."""
        return self._text(_lib.exp_experiment_param_string, name)

    def param_json(self, name: str) -> Any:
        """The parameter's value parsed from JSON (None when absent: a JSON null is not a value)."""
        text = self._text(_lib.exp_experiment_param_json, name)
        return json.loads(text) if text is not None else None

    # -- the experiment's flag values (Sigma SigmaExperiment.getFeatureFlagValue) ------------------------

    def _flag(self, function: Any, out: Any, flag_key: str, variable_key: Optional[str]) -> bool:
        if not isinstance(flag_key, str):
            raise TypeError("flag_key: expected str, got %s" % type(flag_key).__name__)
        if variable_key is not None and not isinstance(variable_key, str):
            raise TypeError("variable_key: expected str or None, got %s" % type(variable_key).__name__)
        found = c_int()
        status = function(self._address, flag_key.encode("utf-8"),
                          None if variable_key is None else variable_key.encode("utf-8"), byref(out), byref(found))
        if status:
            _raise(status)
        return bool(found.value)

    def flag_bool(self, flag_key: str, variable_key: Optional[str] = None) -> Optional[bool]:
        """Sigma getFeatureFlagValue: the value flag ``flag_key`` gets from this variation when this
        experiment decides it — with no ``variable_key`` whether the variation enables the flag, else that
        boolean variable (the variation's value when it enables the flag, the default when it disables it).
        UnknownFlagError; NotFoundError when the flag does not use this experiment or lacks the variable;
        TypeMismatchError for a variable of another type."""
        out = c_int()
        return bool(out.value) if self._flag(_lib.exp_experiment_flag_bool, out, flag_key, variable_key) else None

    def flag_int(self, flag_key: str, variable_key: str) -> Optional[int]:
        """The integer variable ``variable_key`` of flag ``flag_key`` as :meth:`flag_bool` reads it."""
        out = c_int64()
        return out.value if self._flag(_lib.exp_experiment_flag_int, out, flag_key, variable_key) else None

    def flag_double(self, flag_key: str, variable_key: str) -> Optional[float]:
        """The double variable ``variable_key`` of flag ``flag_key`` as :meth:`flag_bool` reads it."""
        out = c_double()
        return out.value if self._flag(_lib.exp_experiment_flag_double, out, flag_key, variable_key) else None

    def _flag_text(self, function: Any, flag_key: str, variable_key: str) -> Optional[str]:
        out = c_char_p()
        found = self._flag(function, out, flag_key, variable_key)
        raw = out.value
        if raw is not None:
            _lib.exp_free(out)
        return raw.decode("utf-8") if found and raw is not None else None

    def flag_string(self, flag_key: str, variable_key: str) -> Optional[str]:
        """The string variable ``variable_key`` of flag ``flag_key`` as :meth:`flag_bool` reads it."""
        return self._flag_text(_lib.exp_experiment_flag_string, flag_key, variable_key)

    def flag_json(self, flag_key: str, variable_key: str) -> Any:
        """The json variable ``variable_key`` of flag ``flag_key``, parsed, as :meth:`flag_bool` reads it."""
        text = self._flag_text(_lib.exp_experiment_flag_json, flag_key, variable_key)
        return json.loads(text) if text is not None else None
