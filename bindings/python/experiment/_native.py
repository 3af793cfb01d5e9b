"""Loading libexperiment.so and declaring its C ABI (include/experiment.h) for ctypes.

Search order for the shared library:

1. the path in the environment variable ``EXPERIMENT_LIBRARY`` (if set, it must exist);
2. ``libexperiment.so`` shipped inside this package directory;
3. the repository build, ``<repo>/.build/release/libexperiment.so`` (relative to this file);
4. ``ctypes.util.find_library("experiment")`` (the system's library path).

Every function of the header gets its argtypes/restype here. Structures mirror the header exactly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_void_p,
)
from typing import Any, Callable, List, Optional, Tuple

__all__ = [
    "lib",
    "library_path",
    "missing_symbols",
    "ExpValue",
    "ExpAttribute",
    "ExpAttributeN",
    "ExpDecision",
    "ExpEvent",
    "EXP_EVENT_DISPATCH_FN",
    "find_library",
    "LibraryNotFoundError",
]

ENV_VAR = "EXPERIMENT_LIBRARY"
LIBRARY_FILE = "libexperiment.so"
#: the header's EXP_VERSION_MAJOR this binding was written against
ABI_MAJOR = 0

# exp_value_type
EXP_VALUE_NULL = 0
EXP_VALUE_BOOL = 1
EXP_VALUE_INT = 2
EXP_VALUE_DOUBLE = 3
EXP_VALUE_STRING = 4
EXP_VALUE_OTHER = 5
EXP_VALUE_BIG_INT = 6

# decide options
EXP_DECIDE_DISABLE_DECISION_EVENT = 1 << 0
EXP_DECIDE_ENABLED_FLAGS_ONLY = 1 << 1
EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE = 1 << 2
EXP_DECIDE_INCLUDE_REASONS = 1 << 3
EXP_DECIDE_EXCLUDE_VARIABLES = 1 << 4
EXP_DECIDE_IGNORE_CMAB_CACHE = 1 << 5
EXP_DECIDE_RESET_CMAB_CACHE = 1 << 6
EXP_DECIDE_INVALIDATE_USER_CMAB_CACHE = 1 << 7

# limits
# exp_decision_field: the strings of a decision, for exp_decision_text_n
EXP_DECISION_FLAG_KEY = 0
EXP_DECISION_VARIATION_KEY = 1
EXP_DECISION_RULE_KEY = 2
EXP_DECISION_VARIABLES_JSON = 3
EXP_DECISION_REASON = 4

EXP_MAX_DATAFILE_BYTES = 64 * 1024 * 1024
EXP_MAX_JSON_DEPTH = 64
EXP_MAX_INPUT_JSON_BYTES = 1024 * 1024
EXP_MAX_KEY_BYTES = 1024
EXP_MAX_STRING_BYTES = 65536
EXP_MAX_ATTRIBUTES = 1024


class LibraryNotFoundError(ImportError):
    """libexperiment.so could not be found or loaded."""


# ------------------------------------------------------------------------------------------------
# Structures
# ------------------------------------------------------------------------------------------------

class ExpValue(Structure):
    """typedef struct exp_value { int type; int bool_value; int64_t int_value; double double_value;
    const char *string_value; } exp_value;"""
    _fields_ = [
        ("type", c_int),
        ("bool_value", c_int),
        ("int_value", c_int64),
        ("double_value", c_double),
        ("string_value", c_char_p),
    ]


class ExpAttribute(Structure):
    """typedef struct exp_attribute { const char *key; exp_value value; } exp_attribute;"""
    _fields_ = [
        ("key", c_char_p),
        ("value", ExpValue),
    ]


class ExpAttributeN(Structure):
    """typedef struct exp_attribute_n { const char *key; size_t key_length; exp_value value;
    size_t string_length; } exp_attribute_n;  (keys and strings may contain NUL)"""
    _fields_ = [
        ("key", c_char_p),
        ("key_length", c_size_t),
        ("value", ExpValue),
        ("string_length", c_size_t),
    ]


class ExpDecision(Structure):
    """typedef struct exp_decision { ... } exp_decision; (see the header)"""
    _fields_ = [
        ("flag_key", c_char_p),
        ("variation_key", c_char_p),
        ("rule_key", c_char_p),
        ("variables_json", c_char_p),
        ("enabled", c_int),
        ("reserved", c_int),
        ("reasons", POINTER(c_char_p)),
        ("reason_count", c_size_t),
        ("internal", c_void_p * 2),
    ]


class ExpEvent(Structure):
    """typedef struct exp_event { const char *url; const char *http_verb; const char *body;
    size_t body_length; } exp_event;"""
    _fields_ = [
        ("url", c_char_p),
        ("http_verb", c_char_p),
        ("body", POINTER(c_char)),  # read with ctypes.string_at(body, body_length)
        ("body_length", c_size_t),
    ]


#: typedef int (*exp_event_dispatch_fn)(const exp_event *event, void *user_data);
EXP_EVENT_DISPATCH_FN = CFUNCTYPE(c_int, POINTER(ExpEvent), c_void_p)
EXP_LOG_FN = CFUNCTYPE(None, c_int, c_char_p, c_void_p)
#: typedef void (*exp_notification_fn)(int type, const char *payload_json, void *user_data);
EXP_NOTIFICATION_FN = CFUNCTYPE(None, c_int, c_char_p, c_void_p)
#: typedef void (*exp_ready_fn)(int status, void *user_data);
EXP_READY_FN = CFUNCTYPE(None, c_int, c_void_p)
#: typedef void (*exp_delivery_fn)(exp_status status, size_t sent, void *user_data);
EXP_DELIVERY_FN = CFUNCTYPE(None, c_int, c_size_t, c_void_p)
#: typedef void (*exp_segments_fn)(exp_status status, const char *segments_json, const char *message,
#:                                 void *user_data);
EXP_SEGMENTS_FN = CFUNCTYPE(None, c_int, c_char_p, c_char_p, c_void_p)
#: typedef int (*exp_profile_lookup_fn)(const char *user_id, exp_profile_reply *reply, void *user_data);
EXP_PROFILE_LOOKUP_FN = CFUNCTYPE(c_int, c_char_p, c_void_p, c_void_p)
#: typedef int (*exp_profile_save_fn)(const char *user_id, const char *profile_json, void *user_data);
EXP_PROFILE_SAVE_FN = CFUNCTYPE(c_int, c_char_p, c_char_p, c_void_p)

# Opaque handle: exp_client *
exp_client_p = c_void_p
# char ** out-parameters: read with .value, release with exp_free(out)
c_char_pp = POINTER(c_char_p)

# name: (restype, argtypes). Every function of include/experiment.h.
_PROTOTYPES: List[Tuple[str, object, List[Any]]] = [
    # version, errors, memory
    ("exp_version", c_char_p, []),
    ("exp_status_str", c_char_p, [c_int]),
    ("exp_last_error", c_char_p, []),
    ("exp_free", None, [c_void_p]),
    # client lifecycle
    ("exp_client_create", c_int, [c_char_p, POINTER(exp_client_p)]),
    ("exp_client_start", c_int, [exp_client_p, c_char_p, c_size_t]),
    ("exp_client_is_ready", c_int, [exp_client_p, POINTER(c_int)]),
    ("exp_client_config_json", c_int, [exp_client_p, c_char_pp]),
    ("exp_client_optimizely_config_json", c_int, [exp_client_p, c_char_pp]),
    ("exp_client_datafile_json", c_int, [exp_client_p, c_char_pp, POINTER(c_size_t)]),
    ("exp_client_close", c_int, [exp_client_p]),
    ("exp_client_free", None, [exp_client_p]),
    ("exp_validate_datafile", c_int, [c_char_p, c_size_t]),
    # decisions
    ("exp_decide", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(ExpAttribute), c_size_t, c_uint,
                           POINTER(ExpDecision)]),
    ("exp_decision_release", None, [POINTER(ExpDecision)]),
    ("exp_decision_text_n", c_int, [POINTER(ExpDecision), c_int, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_flag_count", c_int, [exp_client_p, POINTER(c_size_t)]),
    ("exp_decide_all", c_int, [exp_client_p, c_char_p, POINTER(ExpAttribute), c_size_t, c_uint,
                               POINTER(ExpDecision), c_size_t, POINTER(c_size_t)]),
    ("exp_decide_for_keys", c_int, [exp_client_p, c_char_p, POINTER(c_char_p), c_size_t, POINTER(ExpAttribute),
                                    c_size_t, c_uint, POINTER(ExpDecision), c_size_t, POINTER(c_size_t)]),
    ("exp_decisions_release", None, [POINTER(ExpDecision), c_size_t]),
    # length-delimited forms (NUL bytes allowed in user ids, keys and attribute strings)
    ("exp_decide_n", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(ExpAttributeN),
                             c_size_t, c_uint, POINTER(ExpDecision)]),
    ("exp_decide_all_n", c_int, [exp_client_p, c_char_p, c_size_t, POINTER(ExpAttributeN), c_size_t, c_uint,
                                 POINTER(ExpDecision), c_size_t, POINTER(c_size_t)]),
    ("exp_decide_for_keys_n", c_int, [exp_client_p, c_char_p, c_size_t, POINTER(c_char_p), POINTER(c_size_t),
                                      c_size_t, POINTER(ExpAttributeN), c_size_t, c_uint, POINTER(ExpDecision),
                                      c_size_t, POINTER(c_size_t)]),
    ("exp_get_variation_n", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(ExpAttributeN),
                                    c_size_t, c_char_pp]),
    ("exp_activate_n", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(ExpAttributeN),
                               c_size_t, c_char_pp]),
    # The _len forms give the returned key's length: a variation key may contain NUL bytes.
    ("exp_get_variation_len", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(ExpAttributeN),
                                      c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_activate_len", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(ExpAttributeN),
                                 c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_track_n", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(ExpAttributeN),
                            c_size_t, c_char_p]),
    ("exp_decide_json", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p, c_uint, c_char_pp]),
    ("exp_decide_for_keys_json", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p, c_uint, c_char_pp]),
    ("exp_decide_options_parse", c_int, [c_char_p, POINTER(c_uint)]),
    # experiments
    ("exp_get_variation", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(ExpAttribute), c_size_t,
                                  c_char_pp]),
    ("exp_activate", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(ExpAttribute), c_size_t,
                             c_char_pp]),
    ("exp_trigger_experiment", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(ExpAttribute), c_size_t,
                                       c_char_pp]),
    # forced variations / decisions
    ("exp_set_forced_variation", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p]),
    ("exp_get_forced_variation", c_int, [exp_client_p, c_char_p, c_char_p, c_char_pp]),
    ("exp_get_forced_variation_len", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_set_forced_variation_n", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_size_t]),
    ("exp_get_forced_variation_n", c_int, [exp_client_p, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(c_void_p),
                                           POINTER(c_size_t)]),
    ("exp_set_forced_decision", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p, c_char_p]),
    ("exp_remove_forced_decisions", c_int, [exp_client_p, c_char_p]),
    # user properties
    ("exp_set_user_property", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(ExpValue)]),
    ("exp_set_user_property_json", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p]),
    ("exp_remove_user_property", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_clear_user_properties", c_int, [exp_client_p, c_char_p]),
    ("exp_get_user_properties_json", c_int, [exp_client_p, c_char_p, c_char_pp]),
    # conversions, events
    ("exp_track", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(ExpAttribute), c_size_t, c_char_p]),
    ("exp_client_set_event_dispatcher", c_int, [exp_client_p, EXP_EVENT_DISPATCH_FN, c_void_p]),
    ("exp_client_set_logger", c_int, [exp_client_p, EXP_LOG_FN, c_void_p]),
    ("exp_client_set_log_level", c_int, [exp_client_p, c_int]),
    # notification listeners
    ("exp_add_notification_listener", c_int, [exp_client_p, c_int, EXP_NOTIFICATION_FN, c_void_p, POINTER(c_int64)]),
    ("exp_remove_notification_listener", c_int, [exp_client_p, c_int64]),
    # datafile lifecycle: asynchronous start, readiness, refresh, named clients
    ("exp_client_start_async", c_int, [exp_client_p, c_char_p, c_size_t, EXP_READY_FN, c_void_p]),
    ("exp_client_wait_ready", c_int, [exp_client_p, c_int64]),
    ("exp_client_refresh", c_int, [exp_client_p]),
    ("exp_client_find", c_int, [c_char_p, POINTER(exp_client_p)]),
    ("exp_client_datafile_status_json", c_int, [exp_client_p, c_char_pp]),
]

# -- Sigma: user properties, typed flag values, the user's flags / experiments / holdouts ----------
# exp_experiment * handles cross as plain addresses (c_void_p).
_ATTRS = [POINTER(ExpAttribute), c_size_t]
_PROTOTYPES += [
    ("exp_set_user_properties", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_edit_user_properties", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_flag_bool", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p] + _ATTRS + [POINTER(c_int), POINTER(c_int)]),
    ("exp_flag_int", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p] + _ATTRS + [POINTER(c_int64), POINTER(c_int)]),
    ("exp_flag_double", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p] + _ATTRS
     + [POINTER(c_double), POINTER(c_int)]),
    ("exp_flag_string", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p] + _ATTRS + [c_char_pp, POINTER(c_int)]),
    ("exp_flag_json", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p] + _ATTRS + [c_char_pp, POINTER(c_int)]),
    ("exp_user_flags_json", c_int, [exp_client_p, c_char_p] + _ATTRS + [c_char_pp]),
    ("exp_user_experiments", c_int, [exp_client_p, c_char_p] + _ATTRS + [c_char_pp]),
    ("exp_user_experiments_json", c_int, [exp_client_p, c_char_p] + _ATTRS + [c_char_pp]),
    ("exp_user_holdouts", c_int, [exp_client_p, c_char_p] + _ATTRS + [c_char_pp]),
    ("exp_user_holdouts_json", c_int, [exp_client_p, c_char_p] + _ATTRS + [c_char_pp]),
    ("exp_get_holdout", c_int, [exp_client_p, c_char_p, c_char_p] + _ATTRS + [POINTER(c_int)]),
    ("exp_get_experiment", c_int, [exp_client_p, c_char_p, c_char_p] + _ATTRS + [POINTER(c_void_p)]),
    ("exp_get_experiment_json", c_int, [exp_client_p, c_char_p, c_char_p] + _ATTRS + [c_char_pp]),
    ("exp_experiment_id", c_char_p, [c_void_p]),
    ("exp_experiment_key", c_char_p, [c_void_p]),
    ("exp_experiment_variation_id", c_char_p, [c_void_p]),
    ("exp_experiment_variation_key", c_char_p, [c_void_p]),
    ("exp_experiment_parameters_json", c_char_p, [c_void_p]),
    ("exp_experiment_group_index", c_int, [c_void_p]),
    ("exp_experiment_param_bool", c_int, [c_void_p, c_char_p, POINTER(c_int), POINTER(c_int)]),
    ("exp_experiment_param_int", c_int, [c_void_p, c_char_p, POINTER(c_int64), POINTER(c_int)]),
    ("exp_experiment_param_double", c_int, [c_void_p, c_char_p, POINTER(c_double), POINTER(c_int)]),
    ("exp_experiment_param_string", c_int, [c_void_p, c_char_p, c_char_pp, POINTER(c_int)]),
    ("exp_experiment_param_json", c_int, [c_void_p, c_char_p, c_char_pp, POINTER(c_int)]),
    ("exp_experiment_free", None, [c_void_p]),
    # real-time segments (ODP)
    ("exp_fetch_qualified_segments", c_int, [exp_client_p, c_char_p, c_uint, c_char_pp]),
    ("exp_fetch_qualified_segments_async", c_int, [exp_client_p, c_char_p, c_uint, EXP_SEGMENTS_FN, c_void_p]),
    ("exp_is_qualified_for", c_int, [exp_client_p, c_char_p, c_char_p, POINTER(c_int)]),
    ("exp_get_qualified_segments_json", c_int, [exp_client_p, c_char_p, c_char_pp]),
    ("exp_set_qualified_segments_json", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_identify_user", c_int, [exp_client_p, c_char_p]),
    ("exp_send_odp_event", c_int, [exp_client_p, c_char_p, c_char_p, c_char_p, c_char_p]),
    ("exp_flush_odp_events", c_int, [exp_client_p, c_int64]),
    ("exp_get_vuid", c_int, [exp_client_p, c_char_pp]),
    # sticky bucketing (user profiles), Sigma forced memberships
    ("exp_client_set_profile_store", c_int, [exp_client_p, EXP_PROFILE_LOOKUP_FN, EXP_PROFILE_SAVE_FN, c_void_p]),
    ("exp_profile_reply_set", c_int, [c_void_p, c_char_p, c_size_t]),
    ("exp_profile_reply_user_id", c_int, [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_client_profile_stats", c_int, [exp_client_p, c_char_pp]),
    ("exp_force_include", c_int, [exp_client_p, c_char_p, c_char_p, c_int]),
    ("exp_force_exclude", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_force_exclude_all", c_int, [exp_client_p, c_char_p]),
    ("exp_force_clear", c_int, [exp_client_p, c_char_p, c_char_p]),
    # event pipeline and Kameleoon user data
    ("exp_flush", c_int, [exp_client_p]),
    ("exp_client_stats", c_int, [exp_client_p, c_char_pp]),
    ("exp_track_conversion", c_int, [exp_client_p, c_char_p, c_int64, c_double]),
    ("exp_add_user_data", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_flush_user", c_int, [exp_client_p, c_char_p]),
]

# Kameleoon and Sigma: run-when-ready, completion callbacks, forced memberships by key, an experiment's
# flag values.
_PROTOTYPES += [
    ("exp_client_run_when_ready", c_int, [exp_client_p, c_int64, EXP_READY_FN, c_void_p]),
    ("exp_track_conversion_with_callback", c_int, [exp_client_p, c_char_p, c_int64, c_double, EXP_DELIVERY_FN,
                                                   c_void_p]),
    ("exp_flush_user_with_callback", c_int, [exp_client_p, c_char_p, EXP_DELIVERY_FN, c_void_p]),
    ("exp_client_flush_async", c_int, [exp_client_p, EXP_DELIVERY_FN, c_void_p]),
    ("exp_force_include_key", c_int, [exp_client_p, c_char_p, c_char_p, c_int]),
    ("exp_force_exclude_key", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_force_clear_key", c_int, [exp_client_p, c_char_p, c_char_p]),
    ("exp_experiment_flag_bool", c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_int), POINTER(c_int)]),
    ("exp_experiment_flag_int", c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_int64), POINTER(c_int)]),
    ("exp_experiment_flag_double", c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_double), POINTER(c_int)]),
    ("exp_experiment_flag_string", c_int, [c_void_p, c_char_p, c_char_p, c_char_pp, POINTER(c_int)]),
    ("exp_experiment_flag_json", c_int, [c_void_p, c_char_p, c_char_p, c_char_pp, POINTER(c_int)]),
]

# Stored profiles (sticky bucketing), by user id.
_PROTOTYPES += [
    ("exp_profile_get", c_int, [exp_client_p, c_char_p, c_size_t, c_char_pp]),
    ("exp_profile_delete", c_int, [exp_client_p, c_char_p, c_size_t, POINTER(c_int)]),
]

# Synchronous start with datafile management (the Swift SDK's S1-S3).
_PROTOTYPES += [("exp_client_start_sync", c_int, [exp_client_p, c_char_p, c_size_t, c_int, POINTER(c_int)])]

# User contexts (exp_user *): every string comes with its byte length.
exp_user_p = c_void_p
_PROTOTYPES += [
    ("exp_user_create", c_int, [exp_client_p, c_char_p, c_size_t, c_void_p, c_size_t, POINTER(exp_user_p)]),
    ("exp_user_create_n", c_int, [exp_client_p, c_char_p, c_size_t, c_void_p, c_size_t, POINTER(exp_user_p)]),
    ("exp_user_free", None, [exp_user_p]),
    ("exp_user_clone", c_int, [exp_user_p, POINTER(exp_user_p)]),
    ("exp_user_id", c_int, [exp_user_p, POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_user_set_attribute", c_int, [exp_user_p, c_char_p, c_size_t, POINTER(ExpValue)]),
    ("exp_user_set_attribute_n", c_int, [exp_user_p, POINTER(ExpAttributeN)]),
    ("exp_user_remove_attribute", c_int, [exp_user_p, c_char_p, c_size_t]),
    ("exp_user_attributes_json", c_int, [exp_user_p, c_char_pp]),
    ("exp_user_decide", c_int, [exp_user_p, c_char_p, c_size_t, c_uint, c_void_p]),
    ("exp_user_decide_all", c_int, [exp_user_p, c_uint, POINTER(ExpDecision), c_size_t, POINTER(c_size_t)]),
    ("exp_user_decide_for_keys", c_int, [exp_user_p, POINTER(c_char_p), POINTER(c_size_t), c_size_t, c_uint,
                                         POINTER(ExpDecision), c_size_t, POINTER(c_size_t)]),
    ("exp_user_track", c_int, [exp_user_p, c_char_p, c_size_t, c_char_p]),
    ("exp_user_set_forced_decision", c_int, [exp_user_p, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p,
                                             c_size_t]),
    ("exp_user_get_forced_decision", c_int, [exp_user_p, c_char_p, c_size_t, c_char_p, c_size_t, c_char_pp]),
    ("exp_user_get_forced_decision_len", c_int, [exp_user_p, c_char_p, c_size_t, c_char_p, c_size_t,
                                                 POINTER(c_void_p), POINTER(c_size_t)]),
    ("exp_user_remove_forced_decision", c_int, [exp_user_p, c_char_p, c_size_t, c_char_p, c_size_t,
                                                POINTER(c_int)]),
    ("exp_user_remove_all_forced_decisions", c_int, [exp_user_p]),
    ("exp_user_fetch_qualified_segments", c_int, [exp_user_p, c_uint, c_char_pp]),
    ("exp_user_is_qualified_for", c_int, [exp_user_p, c_char_p, c_size_t, POINTER(c_int)]),
    ("exp_user_get_qualified_segments_json", c_int, [exp_user_p, c_char_pp]),
    ("exp_user_set_qualified_segments_json", c_int, [exp_user_p, c_char_p]),
]

FUNCTION_NAMES = tuple(name for name, _, _ in _PROTOTYPES)


# ------------------------------------------------------------------------------------------------
# Finding and loading the library
# ------------------------------------------------------------------------------------------------

def _candidates() -> List[Tuple[str, Optional[str]]]:
    """(description, path) in search order; path None when that source gives nothing."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo_build = os.path.normpath(os.path.join(here, "..", "..", "..", ".build", "release", LIBRARY_FILE))
    return [
        ("package directory", os.path.join(here, LIBRARY_FILE)),
        ("repository build", repo_build),
    ]


def find_library() -> str:
    """The path (or loader name) of libexperiment to load, following the documented search order."""
    env = os.environ.get(ENV_VAR)
    if env:
        if not os.path.exists(env):
            raise LibraryNotFoundError(
                "%s=%r: no such file (unset it to search the default locations)" % (ENV_VAR, env))
        return env
    tried = []
    for what, path in _candidates():
        if path and os.path.isfile(path):
            return path
        tried.append("%s (%s)" % (path, what))
    found = ctypes.util.find_library("experiment")
    if found:
        return found
    tried.append('ctypes.util.find_library("experiment")')
    raise LibraryNotFoundError(
        "libexperiment.so not found. Set %s to its path, or build it with `make lib` in the repository. "
        "Tried: %s" % (ENV_VAR, "; ".join(tried)))


def _missing(name: str) -> Callable[..., object]:
    def stub(*_args: object, **_kwargs: object) -> object:
        raise NotImplementedError(
            "%s is not exported by %s (library older than include/experiment.h?)" % (name, library_path))
    stub.__name__ = name
    return stub


def _load() -> Tuple[ctypes.CDLL, str, List[str]]:
    path = find_library()
    try:
        handle = ctypes.CDLL(path)
    except OSError as exc:
        raise LibraryNotFoundError("cannot load libexperiment from %r: %s" % (path, exc)) from exc
    missing = []
    for name, restype, argtypes in _PROTOTYPES:
        try:
            fn = getattr(handle, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return handle, path, missing


lib, library_path, missing_symbols = _load()

# Functions whose absence makes the binding useless: fail the import with a clear message.
_ESSENTIAL = ("exp_version", "exp_last_error", "exp_free", "exp_client_create", "exp_client_free")
_essential_missing = [n for n in _ESSENTIAL if n in missing_symbols]
if _essential_missing:
    raise LibraryNotFoundError("%s does not export %s; is it libexperiment?" % (
        library_path, ", ".join(_essential_missing)))
for _name in missing_symbols:
    setattr(lib, _name, _missing(_name))


def _check_version() -> str:
    raw = lib.exp_version()
    version = raw.decode("utf-8", "replace") if raw else ""
    try:
        major = int(version.split(".", 1)[0])
    except ValueError:
        raise LibraryNotFoundError("%s reports an unreadable version %r" % (library_path, version))
    if major != ABI_MAJOR:
        raise LibraryNotFoundError("%s is version %s; this binding needs major version %d" % (
            library_path, version, ABI_MAJOR))
    return version


version = _check_version()


def status_str(status: int) -> str:
    raw = lib.exp_status_str(status)
    return raw.decode("utf-8", "replace") if raw else ""


def last_error() -> str:
    raw = lib.exp_last_error()
    return raw.decode("utf-8", "replace") if raw else ""
