/*
 * experiment.h — the C API of libexperiment.
 *
 * libexperiment decides which variation of an experiment or feature flag a user gets, exactly as
 * Optimizely's reference SDK does for the same Optimizely v4 datafile, and builds the impression and
 * conversion events that record it.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *
 *  - Handles are opaque. Every function accepts NULL for any pointer and answers EXP_ERR_INVALID_ARGUMENT
 *    instead of crashing.
 *  - Every fallible function returns an exp_status: EXP_OK (0) or a negative error code. Results come back
 *    through out-parameters, which are written only on success unless stated otherwise.
 *    exp_last_error() then gives a message naming the problem; exp_status_str() a short static name.
 *  - Ownership: inputs are borrowed for the duration of the call (the library copies what it keeps).
 *    Strings returned through `char **` are owned by the caller and released with exp_free().
 *    Strings inside an exp_decision belong to the decision and live until exp_decision_release().
 *  - Text is UTF-8 and NUL-terminated, except in the length-delimited *_n forms of the evaluation calls
 *    (exp_decide_n, ...), where any bytes, NUL included, are text. Invalid UTF-8 is rejected with
 *    EXP_ERR_INVALID_UTF8.
 *  - Booleans cross as int (0 = false, anything else = true).
 *  - Thread-safety: a client may be used from any number of threads at once, including while its
 *    datafile is being replaced. Only exp_client_free() must not race with other calls on that client.
 *  - Processes: a client created before fork() keeps working in the parent and in every child, with no
 *    call from the program (pre-fork servers: gunicorn --preload, uwsgi, Celery prefork, PHP-FPM, Unicorn).
 *    Handlers registered with pthread_atfork when the first client is created hold the client's event and
 *    log locks across the fork. A child sets the parent's event pipeline aside and, on its first event,
 *    opens its own: its own journal segments, SQLite connection, HTTP connections and dispatcher threads.
 *    It opens its own profile store connection (SQLite or Redis) on its first decision and its own
 *    forced-variation connection on first use. Events queued before the fork are delivered by the parent
 *    only; the child's events by the child, each once. Several processes may share one state directory
 *    (state_dir): each delivers its own events while it runs (by batch size and flush interval), and what
 *    one leaves undelivered at close the next client sends (a POST cut short by close_timeout_ms after the
 *    endpoint took it is sent again: deduplicate by the event's uuid). Not carried into a child yet: the
 *    datafile poller (the child decides on the datafile it inherited) and the ODP threads; and a fork
 *    while another thread is inside a profile or forced-variation write (its locks are not held across).
 *  - Nothing on the decision path parses JSON: attributes have a typed form (exp_attribute). The *_json
 *    variants exist for convenience.
 *
 * Quick start:
 *
 *     exp_client *client = NULL;
 *     if (exp_client_create("{\"sdk_key\": \"demo\"}", &client) != EXP_OK) { puts(exp_last_error()); return 1; }
 *     if (exp_client_start(client, datafile, datafile_len) != EXP_OK) { puts(exp_last_error()); return 1; }
 *     exp_attribute attrs[] = { exp_attr_string("country", "NL"), exp_attr_int("age", 31) };
 *     exp_decision d = {0};
 *     if (exp_decide(client, "user-123", "checkout_flow", attrs, 2, 0, &d) == EXP_OK)
 *         printf("%s -> %s (enabled=%d)\n", d.flag_key, d.variation_key ? d.variation_key : "-", d.enabled);
 *     exp_decision_release(&d);
 *     exp_client_free(client);
 */
#ifndef EXPERIMENT_H
#define EXPERIMENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* strlen, for EXP_STR */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Version                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

#define EXP_VERSION_MAJOR 0
#define EXP_VERSION_MINOR 1
#define EXP_VERSION_PATCH 0
#define EXP_VERSION_STRING "0.1.0"

/* The library's version as "MAJOR.MINOR.PATCH". Static storage; never free it. Thread-safe. */
const char *exp_version(void);

/* ---------------------------------------------------------------------------------------------- */
/* Status codes and errors                                                                         */
/* ---------------------------------------------------------------------------------------------- */

typedef enum exp_status {
    EXP_OK = 0,
    EXP_ERR_INVALID_ARGUMENT = -1,      /* a required pointer is NULL, a count is out of range, a bad enum */
    EXP_ERR_INVALID_JSON = -2,          /* malformed JSON text (options, attributes, tags, datafile) */
    EXP_ERR_INVALID_OPTION = -3,        /* unknown option key, or an option of the wrong type or range */
    EXP_ERR_INVALID_DATAFILE = -4,      /* the datafile is valid JSON but not a usable v4 datafile */
    EXP_ERR_UNSUPPORTED_VERSION = -5,   /* the datafile's "version" is not one this library reads */
    EXP_ERR_NOT_READY = -6,             /* the client has no datafile yet */
    EXP_ERR_UNKNOWN_FLAG = -7,          /* no feature flag with that key in the current datafile */
    EXP_ERR_UNKNOWN_EXPERIMENT = -8,    /* no experiment with that key or id in the current datafile */
    EXP_ERR_UNKNOWN_EVENT = -9,         /* no event with that key in the current datafile */
    EXP_ERR_UNKNOWN_VARIATION = -10,    /* no variation with that key in the experiment or flag */
    EXP_ERR_NOT_TARGETED = -11,         /* trigger_experiment: the user does not meet the audience */
    EXP_ERR_NOT_ALLOCATED = -12,        /* trigger_experiment: not running, or user outside the traffic */
    EXP_ERR_INVALID_UTF8 = -13,         /* a string argument is not valid UTF-8 */
    EXP_ERR_TOO_LARGE = -14,            /* an input exceeds a documented limit (see EXP_MAX_*) */
    EXP_ERR_TOO_DEEP = -15,             /* a JSON document nests deeper than its limit */
    EXP_ERR_INVALID_EVENT_TAGS = -16,   /* event tags are not a JSON object (nor false in Python) */
    EXP_ERR_CLOSED = -17,               /* the client was closed */
    EXP_ERR_BUFFER_TOO_SMALL = -18,     /* a caller-provided array is too short; the needed size is returned */
    EXP_ERR_TIMEOUT = -19,              /* a wait (exp_client_wait_ready, flush, close drain) ran out of time */
    EXP_ERR_TAG_IN_USE = -20,           /* exp_client_create: another open client already has this tag */
    EXP_ERR_TYPE_MISMATCH = -21,        /* a typed accessor asked for a type the value does not have */
    EXP_ERR_QUEUE_FULL = -22,           /* the event queue is at capacity and its policy is "reject" */
    EXP_ERR_STORE = -23,                /* the local state store (SQLite file, Redis, callbacks) failed */
    EXP_ERR_ODP_NOT_ENABLED = -24,      /* real-time segments are disabled or not configured */
    EXP_ERR_INVALID_USER_ID = -25,      /* the segments service does not know or accept this user identifier */
    EXP_ERR_FETCH_FAILED = -26,         /* a network fetch (datafile, segments) failed */
    EXP_ERR_NOT_FOUND = -27,            /* no such entry (e.g. no client with that tag) */
    EXP_ERR_DELIVERY_FAILED = -28,      /* a delivery callback: the endpoint failed the event (it stays queued
                                           and is retried) or refused it for good (event_dead_letter), or
                                           the event had nowhere to go (event_endpoint "none") */
    EXP_ERR_INTERNAL = -99              /* a bug: please report it with exp_last_error() */
} exp_status;

/* A short, static name for a status code, e.g. "EXP_ERR_UNKNOWN_FLAG". Never NULL; never free it. */
const char *exp_status_str(exp_status status);

/*
 * The message of the last error on the calling thread, e.g.
 * "datafile: experiments[2].trafficAllocation[0].endOfRange: expected an integer, got a string".
 * Thread-local: each thread sees its own last error. Valid until the next exp_* call on this thread;
 * copy it to keep it. Never NULL ("" when the last call on this thread succeeded).
 */
const char *exp_last_error(void);

/*
 * Frees a string (or any buffer) the library returned through a `char **` out-parameter. NULL is a no-op.
 * Thread-safe (any thread may free what another received).
 *
 *     char *json = NULL;
 *     if (exp_client_config_json(c, &json) == EXP_OK) puts(json);
 *     exp_free(json);
 */
void exp_free(void *pointer);

/* ---------------------------------------------------------------------------------------------- */
/* Limits (inputs past them fail with EXP_ERR_TOO_LARGE or EXP_ERR_TOO_DEEP)                        */
/* ---------------------------------------------------------------------------------------------- */

#define EXP_MAX_DATAFILE_BYTES   (64u * 1024u * 1024u)  /* size of one datafile */
#define EXP_MAX_JSON_DEPTH       64u                    /* nesting of any JSON document the library reads */
#define EXP_MAX_INPUT_JSON_BYTES (1024u * 1024u)        /* options, attributes, tags, property values */
#define EXP_MAX_KEY_BYTES        1024u                  /* a user id or key passed in, and any flag,
                                                           experiment, variation, event or attribute key
                                                           in a datafile (longer ones are refused) */
#define EXP_MAX_STRING_BYTES     65536u                 /* a string attribute or property value */
#define EXP_MAX_ATTRIBUTES       1024u                  /* attributes passed to one call */
#define EXP_MAX_DECISIONS        (1024u * 1024u)        /* key_count of exp_decide_for_keys; count of
                                                           exp_decisions_release */
#define EXP_MAX_PROFILE_BYTES    (1024u * 1024u)        /* length of exp_profile_reply_set */

/* Every size_t count or length parameter is checked against its limit above, whatever its value: a count
 * of 2^63 or more (e.g. `int n = -1` passed as a count) is EXP_ERR_TOO_LARGE like any other count past the
 * limit, never a crash. exp_client_start / exp_client_start_async / exp_validate_datafile lengths are bound
 * by EXP_MAX_DATAFILE_BYTES. Output capacities (exp_decide_all, exp_decide_for_keys) take any value: only
 * what is needed is written. exp_decisions_release, which has no status, releases nothing for a count past
 * EXP_MAX_DECISIONS and sets exp_last_error(). */

/* ---------------------------------------------------------------------------------------------- */
/* Values and attributes                                                                           */
/* ---------------------------------------------------------------------------------------------- */

typedef enum exp_value_type {
    EXP_VALUE_NULL = 0,     /* an explicit null: present, but no value */
    EXP_VALUE_BOOL = 1,     /* bool_value */
    EXP_VALUE_INT = 2,      /* int_value */
    EXP_VALUE_DOUBLE = 3,   /* double_value */
    EXP_VALUE_STRING = 4,   /* string_value (UTF-8, NUL-terminated, borrowed) */
    EXP_VALUE_OTHER = 5,    /* a value of a type conditions cannot use (a map, a list, any other object of the
                               caller's language); no field is read. As the reference SDK: an "exists"
                               condition is true, every other match type is unknown, and event payloads
                               leave the attribute out. */
    EXP_VALUE_BIG_INT = 6   /* an integer of any size as decimal text in string_value ("-?[0-9]+", borrowed):
                               one within 64 bits is EXP_VALUE_INT; beyond them it is never a finite number
                               (as any integer past 2^53): only "exists" matches, payloads leave it out.
                               Malformed text: EXP_ERR_INVALID_ARGUMENT. */
} exp_value_type;

/* A typed value. Only the field named by `type` is read. */
typedef struct exp_value {
    int type;                   /* an exp_value_type */
    int bool_value;
    int64_t int_value;
    double double_value;
    const char *string_value;
} exp_value;

/* One user attribute: a key and a typed value. Audience conditions treat int and double alike, and bool
 * as distinct from numbers, exactly as the reference SDK does. */
typedef struct exp_attribute {
    const char *key;
    exp_value value;
} exp_attribute;

static inline exp_attribute exp_attr_string(const char *key, const char *value) {
    exp_attribute a = {key, {EXP_VALUE_STRING, 0, 0, 0.0, value}}; return a;
}
static inline exp_attribute exp_attr_int(const char *key, int64_t value) {
    exp_attribute a = {key, {EXP_VALUE_INT, 0, value, 0.0, NULL}}; return a;
}
static inline exp_attribute exp_attr_double(const char *key, double value) {
    exp_attribute a = {key, {EXP_VALUE_DOUBLE, 0, 0, value, NULL}}; return a;
}
static inline exp_attribute exp_attr_bool(const char *key, int value) {
    exp_attribute a = {key, {EXP_VALUE_BOOL, value ? 1 : 0, 0, 0.0, NULL}}; return a;
}
static inline exp_attribute exp_attr_null(const char *key) {
    exp_attribute a = {key, {EXP_VALUE_NULL, 0, 0, 0.0, NULL}}; return a;
}
static inline exp_attribute exp_attr_other(const char *key) {
    exp_attribute a = {key, {EXP_VALUE_OTHER, 0, 0, 0.0, NULL}}; return a;
}
static inline exp_attribute exp_attr_big_int(const char *key, const char *decimal) {
    exp_attribute a = {key, {EXP_VALUE_BIG_INT, 0, 0, 0.0, decimal}}; return a;
}

/*
 * Length-delimited attributes, for keys and strings that may contain NUL bytes (any string a Python or
 * C++ caller has): `key` is key_length bytes of UTF-8 and, for EXP_VALUE_STRING and EXP_VALUE_BIG_INT,
 * value.string_value is string_length bytes; neither needs a terminating NUL. Every other field means what
 * it means in exp_attribute. Used with the *_n entry points below (exp_decide_n, ...), which take the user
 * id and keys with explicit lengths too. Borrowed for the call only, like exp_attribute.
 */
typedef struct exp_attribute_n {
    const char *key;
    size_t key_length;
    exp_value value;
    size_t string_length;
} exp_attribute_n;

static inline exp_attribute_n exp_attr_string_n(const char *key, size_t key_length, const char *value,
                                                size_t value_length) {
    exp_attribute_n a = {key, key_length, {EXP_VALUE_STRING, 0, 0, 0.0, value}, value_length}; return a;
}
/* Any exp_attribute as exp_attribute_n (`key` and a string value measured with strlen). */
static inline exp_attribute_n exp_attr_n(exp_attribute attribute) {
    exp_attribute_n a = {attribute.key, attribute.key ? strlen(attribute.key) : 0, attribute.value, 0};
    if ((attribute.value.type == EXP_VALUE_STRING || attribute.value.type == EXP_VALUE_BIG_INT) &&
        attribute.value.string_value)
        a.string_length = strlen(attribute.value.string_value);
    return a;
}

/* ---------------------------------------------------------------------------------------------- */
/* Client lifecycle                                                                                */
/* ---------------------------------------------------------------------------------------------- */

typedef struct exp_client exp_client;

/*
 * Creates a client from a JSON object of options (NULL or "" means all defaults). Unknown keys are an
 * error, not ignored. Options understood by this version:
 *
 *   "sdk_key"                 string   the project environment's key: names the datafile URL and cache entry
 *                                      (more options: see "Datafile lifecycle" below). A plain token: 1 to
 *                                      256 letters, digits, '-', '_', '.', not starting with '.'.
 *   "default_decide_options"  array    decide option names applied to every decide, e.g.
 *                                      ["DISABLE_DECISION_EVENT", "INCLUDE_REASONS"]
 *   "user_store_capacity"     integer  how many users' properties (exp_set_user_property) are kept;
 *                                      least recently used users are evicted first. Default 10000. Also
 *                                      bounds the users whose forced state (forced variations, forced
 *                                      decisions, forced memberships) is cached in memory: with a state
 *                                      file it lives there and is read back when an evicted user is decided.
 *   "log_level"               string   "error", "warning" (default), "info" or "debug": the most detailed
 *                                      level passed to the logger (see exp_client_set_logger).
 *   "bucket_by_profile_id"    bool     Sigma: exp_set/edit_user_properties also store profile_id as
 *                                      "$opt_bucketing_id" (see exp_set_user_properties). Default false.
 *   "keep_datafile"           bool     keep the text of the datafile in use beside its compiled config, for
 *                                      exp_client_datafile_json. Default false (it costs memory equal to
 *                                      the datafile's size).
 *   "profile_cache"           bool     keep recently used profiles of the profile store in memory (default
 *                                      true). False: every call looks the user's profile up in the store and
 *                                      saves it without reading it again first, as optimizely-sdk does.
 *   "cmab_prediction_endpoint" string  CMAB experiments' prediction URL; "{rule_id}" is replaced by the
 *                                      experiment's id, percent-encoded (bytes other than A-Z a-z 0-9
 *                                      - _ . ~ become %XX). Default
 *                                      "https://prediction.cmab.optimizely.com/predict/{rule_id}".
 *   "cmab_cache_size"         integer  predictions cached (one per user and CMAB rule, least recently used
 *                                      evicted). Default 10000; 0 caches nothing.
 *   "cmab_cache_timeout_s"    integer  a cached prediction older than this is asked again. Default 1800;
 *                                      0: never stale.
 *   "cmab_request_timeout_ms" integer  each prediction request's limit (two attempts, 100 ms apart).
 *                                      Default 10000.
 *
 * CMAB experiments: an experiment whose datafile entry has a "cmab" object ({"attributeIds": [...],
 * "trafficAllocation": n}) is decided as optimizely-sdk 5.7.0 decides it. A user who passes its
 * audiences (and group) and whose bucket is below trafficAllocation gets the variation a prediction
 * service names: exp_decide POSTs {"instances": [{"visitorId", "experimentId", "attributes": [{"id",
 * "value", "type": "custom_attribute"}], "cmabUUID"}]} (the user's attributes listed in attributeIds, by
 * id) to cmab_prediction_endpoint and reads predictions[0].variation_id; that call blocks the deciding
 * thread. Predictions are cached per user and rule while the listed attributes keep their values
 * (EXP_DECIDE_IGNORE_CMAB_CACHE, EXP_DECIDE_RESET_CMAB_CACHE, EXP_DECIDE_INVALIDATE_USER_CMAB_CACHE), never
 * saved for sticky bucketing, and the impression's metadata carries "cmab_uuid". When the service fails
 * (no answer, a status other than 2xx, or an answer without a prediction, after one retry) the flag gets
 * the reference's error decision: disabled, no variation or rule, variables "{}", no impression, and its
 * reasons (ending "Failed to fetch CMAB data for experiment <key>.") whatever the options; decide_all
 * keeps it under EXP_DECIDE_ENABLED_FLAGS_ONLY.
 *
 * On success *out_client receives a new client, not yet ready: give it a datafile with exp_client_start.
 * Errors: EXP_ERR_INVALID_ARGUMENT (out_client NULL), EXP_ERR_INVALID_JSON ("options: not valid JSON (...)"),
 * EXP_ERR_INVALID_OPTION (the message names the option). Values that reach a URL, an HTTP header, a file
 * path or a log line (datafile_url_template, datafile_access_token, state_dir, event_endpoint, odp.host,
 * odp.api_key, profile_store.redis.url) are refused when they hold a control character (NUL, CR, LF, ...).
 * The state directory (state_dir, or the default $XDG_STATE_HOME/libexperiment, ~/.local/state/libexperiment,
 * /tmp/libexperiment-<uid>) is used only when it is a real directory, not a symlink, owned by the effective
 * uid and not writable by group or others (directories the library creates are 0700); otherwise the client
 * logs an error ("state_dir ... refused for safety: ...") and runs without persistence. State files are
 * 0600 and never opened through a symlink; one that is not a database is renamed to
 * state.sqlite.corrupt-<pid>-<ms> (logged) and a fresh one started. Log lines escape control characters.
 * Ownership: release the client with exp_client_free(). Thread-safe.
 *
 *     exp_client *c = NULL;
 *     exp_status s = exp_client_create("{\"default_decide_options\": [\"INCLUDE_REASONS\"]}", &c);
 */
exp_status exp_client_create(const char *options_json, exp_client **out_client);

/*
 * Starts the client synchronously with a datafile (Optimizely v4 JSON) held in `datafile[0..length)`;
 * the buffer need not be NUL-terminated and is not kept. Calling it again replaces the datafile: the new
 * one is validated and compiled off to the side and swapped in atomically; decisions in flight finish on
 * the old one. A datafile that fails validation changes nothing: the client keeps its current config.
 *
 * Errors: EXP_ERR_INVALID_JSON (including trailing garbage), EXP_ERR_UNSUPPORTED_VERSION,
 * EXP_ERR_INVALID_DATAFILE (the message names the place, e.g. "featureFlags[3].rolloutId: unknown
 * rollout \"99\""), EXP_ERR_TOO_LARGE, EXP_ERR_TOO_DEEP, EXP_ERR_CLOSED. Thread-safe.
 *
 *     if (exp_client_start(c, text, strlen(text)) != EXP_OK) fprintf(stderr, "%s\n", exp_last_error());
 */
exp_status exp_client_start(exp_client *client, const char *datafile, size_t length);

/*
 * Writes 1 to *out_ready if the client has a datafile, else 0. Errors: EXP_ERR_INVALID_ARGUMENT (NULLs),
 * EXP_ERR_CLOSED. Thread-safe.
 *
 *     int ready = 0;
 *     if (exp_client_is_ready(c, &ready) == EXP_OK && !ready) puts("no datafile yet");
 */
exp_status exp_client_is_ready(exp_client *client, int *out_ready);

/*
 * Returns facts about the current datafile as a JSON object:
 * {"revision": "...", "project_id": "...", "account_id": "...", "environment_key": "...",
 *  "flags": [...keys], "experiments": [...keys], "events": [...keys]}.
 * Free *out_json with exp_free(). Errors: EXP_ERR_NOT_READY, EXP_ERR_CLOSED. Thread-safe. Example: exp_free.
 */
exp_status exp_client_config_json(exp_client *client, char **out_json);

/*
 * optimizely-sdk's OptimizelyConfig (get_optimizely_config()) of the datafile in use, as one JSON object:
 *   {"revision", "sdk_key", "environment_key" (the datafile's; "" when it has none), "datafile" (the text),
 *    "attributes": [{"id", "key"}], "events": [{"id", "key", "experiment_ids"}],
 *    "audiences": [{"id", "name", "conditions"}],
 *    "experiments_map": {key: experiment}, "features_map": {key: feature}}
 *   experiment: {"id", "key", "audiences" (e.g. "\"us\" OR \"fr\""), "variations_map": {key: variation}}
 *   variation:  {"id", "key", "feature_enabled", "variables_map": {key: variable}}
 *   variable:   {"id", "key", "type", "value" (the datafile's text of the value)}
 *   feature:    {"id", "key", "experiments_map", "variables_map", "experiment_rules": [experiment],
 *                "delivery_rules": [experiment]}
 * Values are the datafile's, as the reference copies them (an id or value of another JSON type stays so);
 * a variation's variables are its flag's defaults with its own values when it enables the feature.
 * Computed on the first call for each datafile revision (never on the decision path), then kept.
 * Needs the client option "keep_datafile": true (the document is computed from, and carries, the text).
 *
 * Ownership: *out_json receives a NUL-terminated string the caller frees with exp_free(); unchanged on error.
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULLs), EXP_ERR_NOT_READY (no datafile yet), EXP_ERR_NOT_FOUND (the
 * client does not keep its datafile's text), EXP_ERR_CLOSED. Thread-safe.
 *
 *     char *config = NULL;
 *     if (exp_client_optimizely_config_json(c, &config) == EXP_OK) puts(config);
 *     exp_free(config);
 */
exp_status exp_client_optimizely_config_json(exp_client *client, char **out_json);

/*
 * The text of the datafile in use, byte for byte as it was given (exp_client_start, the bundled datafile of
 * an asynchronous or synchronous start), fetched or read from the cache: after a poll swaps in a new revision
 * it is the new one. Needs the option "keep_datafile": true. The text and the config decisions use are
 * swapped together, so the text is always the one the current config was compiled from.
 *
 * Ownership: *out_json receives a NUL-terminated copy the caller frees with exp_free(); *out_length (may be
 * NULL) its length in bytes, without the NUL (a datafile holds no NUL byte: JSON escapes it). On error
 * *out_json and *out_length are left unchanged.
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULL client or out_json), EXP_ERR_NOT_READY (no datafile yet),
 * EXP_ERR_NOT_FOUND (the client was created without "keep_datafile": true), EXP_ERR_CLOSED. Thread-safe:
 * it may run while another thread swaps the datafile (it returns the old text or the new one, whole).
 *
 *     char *text = NULL;
 *     size_t length = 0;
 *     if (exp_client_datafile_json(c, &text, &length) == EXP_OK) fwrite(text, 1, length, cache_file);
 *     exp_free(text);
 */
exp_status exp_client_datafile_json(exp_client *client, char **out_json, size_t *out_length);

/*
 * Closes the client: later calls on it fail with EXP_ERR_CLOSED. Idempotent (closing twice is EXP_OK).
 * The handle stays valid until exp_client_free(). With the built-in event pipeline it first delivers this
 * client's queued events, retrying failures, for up to "close_timeout_ms" (see "Event pipeline").
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULL); EXP_ERR_TIMEOUT: the client is closed, but some of its events
 * were not delivered in time (they stay on disk; the next client on the state directory sends them).
 * Thread-safe.
 *
 *     exp_client_close(c);      // other threads now get EXP_ERR_CLOSED
 *     ...join them...
 *     exp_client_free(c);
 */
exp_status exp_client_close(exp_client *client);

/*
 * Closes (if needed) and frees the client. NULL is a no-op. Never fails. Not thread-safe with respect to
 * this client: no other call on it may run or follow (close first, join your threads, then free).
 * Example: exp_client_close.
 */
void exp_client_free(exp_client *client);

/*
 * Validates a datafile without a client. EXP_OK if a client would accept it; otherwise the error a client
 * would give, with exp_last_error() naming the first problem. The buffer is borrowed. Thread-safe.
 * A datafile is refused only where the reference SDK refuses it; what it accepts but is likely a mistake
 * (an audience id defined nowhere, an endOfRange above 10000...) is EXP_OK: its warnings are listed by
 * exp_client_datafile_status_json ("warnings") once a client uses it, and by `experiment-cli validate`.
 *
 *     if (exp_validate_datafile(text, len) != EXP_OK) fprintf(stderr, "%s\n", exp_last_error());
 */
exp_status exp_validate_datafile(const char *datafile, size_t length);

/* ---------------------------------------------------------------------------------------------- */
/* Decisions (feature flags)                                                                       */
/* ---------------------------------------------------------------------------------------------- */

/* Decide options, OR-ed together into the `options` argument (they add to the client's defaults). */
#define EXP_DECIDE_DISABLE_DECISION_EVENT       (1u << 0)  /* do not send an impression event */
#define EXP_DECIDE_ENABLED_FLAGS_ONLY           (1u << 1)  /* decide_all: leave out disabled flags */
#define EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE  (1u << 2)  /* skip sticky-bucketing lookup and save */
#define EXP_DECIDE_INCLUDE_REASONS              (1u << 3)  /* fill `reasons` */
#define EXP_DECIDE_EXCLUDE_VARIABLES            (1u << 4)  /* leave `variables_json` as "{}" */
/* CMAB experiments (see "CMAB experiments" below); the names are the reference SDK's. */
#define EXP_DECIDE_IGNORE_CMAB_CACHE            (1u << 5)  /* ask the prediction service, bypassing the cache */
#define EXP_DECIDE_RESET_CMAB_CACHE             (1u << 6)  /* empty the client's whole CMAB cache first */
#define EXP_DECIDE_INVALIDATE_USER_CMAB_CACHE   (1u << 7)  /* drop this user's cached prediction for the rule */

/*
 * The result of deciding one flag for one user. Fill it by passing a zero-initialized struct to
 * exp_decide / exp_decide_all, and release it with exp_decision_release(). All strings point into
 * storage the decision keeps alive (even if the client's datafile is replaced meanwhile) and are valid
 * until exp_decision_release(). Deciding allocates nothing unless reasons are requested.
 */
typedef struct exp_decision {
    const char *flag_key;
    const char *variation_key;       /* NULL when the user got no variation */
    const char *rule_key;            /* the experiment or delivery rule that decided; NULL when none */
    const char *variables_json;      /* the flag's variables as a JSON object ("{}" when excluded), as
                                        Python's json writes it: a double variable that is NaN or infinite
                                        is NaN / Infinity / -Infinity (as optimizely-sdk's float() gives it),
                                        a json variable is its datafile text */
    int enabled;                     /* the variation's featureEnabled; 0 when no variation */
    int reserved;
    const char *const *reasons;      /* reason strings when EXP_DECIDE_INCLUDE_REASONS, else NULL */
    size_t reason_count;
    void *internal[2];               /* owned by the library */
} exp_decision;

/*
 * Decides `flag_key` for `user_id` with per-call `attributes[0..attribute_count)` (NULL with count 0 for
 * none). The user's stored properties (exp_set_user_property) are used too; per-call attributes win.
 * Sends an impression to the event dispatcher when the reference SDK would (a flag experiment decided it,
 * or the datafile has sendFlagDecisions), unless EXP_DECIDE_DISABLE_DECISION_EVENT.
 *
 * *out must be zero-initialized or previously released; it is filled on success, and with
 * EXP_ERR_NOT_READY and EXP_ERR_UNKNOWN_FLAG it holds the reference SDK's error decision: flag_key the
 * key asked for, enabled 0, no variation or rule, variables "{}", and one reason whatever the options,
 * "Optimizely SDK not configured properly yet." or "No flag was found for key \"<key>\"." (release it as
 * any decision). Other errors leave *out zeroed.
 * Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_FLAG, EXP_ERR_INVALID_UTF8, EXP_ERR_TOO_LARGE,
 * EXP_ERR_INVALID_ARGUMENT (NULL user_id/flag_key/out, bad attribute type, attributes NULL with a
 * count), EXP_ERR_CLOSED. Thread-safe; allocation-free unless reasons are requested.
 *
 *     exp_decision d = {0};
 *     if (exp_decide(c, "user-1", "new_checkout", NULL, 0, EXP_DECIDE_INCLUDE_REASONS, &d) == EXP_OK) {
 *         for (size_t i = 0; i < d.reason_count; i++) puts(d.reasons[i]);
 *     }
 *     exp_decision_release(&d);
 */
exp_status exp_decide(exp_client *client, const char *user_id, const char *flag_key,
                      const exp_attribute *attributes, size_t attribute_count, unsigned options,
                      exp_decision *out);

/*
 * Releases what a decision holds and zeroes it. NULL and zeroed decisions are no-ops. Idempotent. Any thread
 * may release a decision, but not while another thread reads or releases the same one. Example: exp_decide.
 */
void exp_decision_release(exp_decision *decision);

/* The strings of an exp_decision, for exp_decision_text_n. */
typedef enum exp_decision_field {
    EXP_DECISION_FLAG_KEY = 0,
    EXP_DECISION_VARIATION_KEY = 1,
    EXP_DECISION_RULE_KEY = 2,
    EXP_DECISION_VARIABLES_JSON = 3,
    EXP_DECISION_REASON = 4          /* reasons[index] */
} exp_decision_field;

/*
 * One string of a filled decision with its length in bytes (without the terminating NUL), for strings
 * that may contain NUL bytes: a flag, variation or rule key from a datafile ("a\u0000b"), or a reason
 * quoting a user id given through exp_decide_n. `index` is the reason's index for EXP_DECISION_REASON and
 * must be 0 for every other field. *text receives the same pointer as the struct's field (NULL, with
 * *length 0, for a NULL variation or rule key) and is valid until exp_decision_release; the text is
 * always NUL-terminated as well, so strlen(*text) < *length means it holds a NUL. The length is stored
 * when the decision is filled: reading it costs no scan and no allocation. variables_json never holds a
 * NUL byte (JSON escapes it). On error *text and *length are left unchanged.
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULL decision/text/length, unknown field, index past reason_count for
 * a reason, nonzero index otherwise). Thread-safe: it only reads the decision (which must not be released
 * meanwhile).
 *
 *     const char *text; size_t length;
 *     for (size_t i = 0; i < d.reason_count; i++)
 *         if (exp_decision_text_n(&d, EXP_DECISION_REASON, i, &text, &length) == EXP_OK)
 *             fwrite(text, 1, length, stdout);
 */
exp_status exp_decision_text_n(const exp_decision *decision, exp_decision_field field, size_t index,
                               const char **text, size_t *length);

/*
 * The number of feature flags in the current datafile (the capacity exp_decide_all needs). It can change when
 * the datafile is replaced: exp_decide_all then answers EXP_ERR_BUFFER_TOO_SMALL with the new count.
 * Errors: EXP_ERR_NOT_READY, EXP_ERR_CLOSED, EXP_ERR_INVALID_ARGUMENT. Thread-safe. Example: exp_decide_all.
 */
exp_status exp_flag_count(exp_client *client, size_t *out_count);

/*
 * Decides every flag of the datafile, in datafile order, into out[0..capacity) and writes how many were
 * filled to *out_count. With EXP_DECIDE_ENABLED_FLAGS_ONLY disabled flags are left out. If capacity is
 * too small nothing is filled, *out_count receives the capacity needed and EXP_ERR_BUFFER_TOO_SMALL is
 * returned. Release each filled element (or use exp_decisions_release). The user's sticky-bucketing
 * profile is looked up once and saved once for the whole call. Other errors and thread-safety as
 * exp_decide.
 *
 *     size_t n = 0, cap = 0; exp_flag_count(c, &cap);
 *     exp_decision *ds = calloc(cap, sizeof *ds);
 *     if (exp_decide_all(c, "user-1", NULL, 0, 0, ds, cap, &n) == EXP_OK) { ... }
 *     exp_decisions_release(ds, n); free(ds);
 */
/*
 * Length-delimited forms of the evaluation calls, for user ids, keys and attribute strings that may
 * contain NUL bytes: each string argument is followed by its byte length, and attributes are
 * exp_attribute_n. Otherwise each behaves exactly as the function it is named after (results, ownership,
 * errors, thread-safety); a key with a NUL byte simply names no flag, experiment or event.
 *
 *     static const char user[] = {'u', 0, '1'};                    // 3 bytes, one of them NUL
 *     exp_attribute_n attrs[] = { exp_attr_string_n("plan", 4, "pro\0x", 5) };
 *     exp_decision d;
 *     if (exp_decide_n(c, user, sizeof user, "checkout_flow", 13, attrs, 1, 0, &d) == EXP_OK) exp_decision_release(&d);
 */
exp_status exp_decide_n(exp_client *client, const char *user_id, size_t user_id_length, const char *flag_key,
                        size_t flag_key_length, const exp_attribute_n *attributes, size_t attribute_count,
                        unsigned options, exp_decision *out);
exp_status exp_decide_all_n(exp_client *client, const char *user_id, size_t user_id_length,
                            const exp_attribute_n *attributes, size_t attribute_count, unsigned options,
                            exp_decision *out, size_t capacity, size_t *out_count);
/* keys[i] is key_lengths[i] bytes. */
exp_status exp_decide_for_keys_n(exp_client *client, const char *user_id, size_t user_id_length,
                                 const char *const *keys, const size_t *key_lengths, size_t key_count,
                                 const exp_attribute_n *attributes, size_t attribute_count, unsigned options,
                                 exp_decision *out, size_t capacity, size_t *out_count);

exp_status exp_decide_all(exp_client *client, const char *user_id, const exp_attribute *attributes,
                          size_t attribute_count, unsigned options, exp_decision *out, size_t capacity,
                          size_t *out_count);

/*
 * Decides the flags named in keys[0..key_count) into out[0..capacity) (capacity must be at least
 * key_count; key_count at most EXP_MAX_DECISIONS, else EXP_ERR_TOO_LARGE), in the order given, and writes
 * how many were filled to *out_count. A key the datafile does not have gives a decision with enabled 0,
 * NULL variation and rule, "{}" variables, no reasons and flag_key a copy of the caller's key (valid until
 * the decision is released), as the reference SDK does — even with
 * EXP_DECIDE_ENABLED_FLAGS_ONLY, which leaves out only the disabled flags the datafile has.
 * A key given more than once is decided each time; with EXP_DECIDE_INCLUDE_REASONS each later decision of
 * it carries the reasons of all its evaluations so far, so the last one has the reference's reasons for
 * the key (the reference keeps one reasons list per key).
 * Errors and thread-safety as exp_decide_all.
 *
 *     const char *keys[] = {"free_shipping", "dark_mode"};
 *     exp_decision ds[2] = {{0}}; size_t n = 0;
 *     if (exp_decide_for_keys(c, "user-1", keys, 2, NULL, 0, 0, ds, 2, &n) == EXP_OK) { ... }
 *     exp_decisions_release(ds, n);
 */
exp_status exp_decide_for_keys(exp_client *client, const char *user_id, const char *const *keys,
                               size_t key_count, const exp_attribute *attributes, size_t attribute_count,
                               unsigned options, exp_decision *out, size_t capacity, size_t *out_count);

/* Releases decisions[0..count) as exp_decision_release does. NULL is a no-op; never fails. A count past
 * EXP_MAX_DECISIONS (e.g. `int n = -1` passed as the count) releases nothing and sets exp_last_error().
 * Thread-safe for distinct arrays (each array belongs to one caller). Example: exp_decide_all. */
void exp_decisions_release(exp_decision *decisions, size_t count);

/*
 * JSON conveniences. `attributes_json` is a JSON object of attribute values (string, number, bool, null)
 * or NULL. `flag_keys_json` is a JSON array of flag keys, or NULL for every flag. *out_json receives
 * {"flag_key": {"flag_key": ..., "enabled": ..., "variation_key": ..., "rule_key": ..., "variables": {...},
 * "reasons": [...]}, ...} — for exp_decide_json a single decision object instead of the map. Unknown keys
 * in flag_keys_json give a decision with enabled false and null variation, as the reference SDK does.
 * Free *out_json with exp_free(). Errors as exp_decide, plus EXP_ERR_INVALID_JSON / EXP_ERR_TOO_DEEP.
 * These parse JSON on every call: use the typed calls on hot paths. Thread-safe.
 *
 *     char *json = NULL;
 *     if (exp_decide_json(c, "user-1", "free_shipping", "{\"country\": \"NL\"}", 0, &json) == EXP_OK) puts(json);
 *     exp_free(json);
 */
exp_status exp_decide_json(exp_client *client, const char *user_id, const char *flag_key,
                           const char *attributes_json, unsigned options, char **out_json);
exp_status exp_decide_for_keys_json(exp_client *client, const char *user_id, const char *flag_keys_json,
                                    const char *attributes_json, unsigned options, char **out_json);

/*
 * Parses decide option names ("DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY",
 * "IGNORE_USER_PROFILE_SERVICE", "INCLUDE_REASONS", "EXCLUDE_VARIABLES", "IGNORE_CMAB_CACHE",
 * "RESET_CMAB_CACHE", "INVALIDATE_USER_CMAB_CACHE") given as a JSON array into the
 * EXP_DECIDE_* bit set. Errors: EXP_ERR_INVALID_JSON, EXP_ERR_INVALID_OPTION (unknown name). Thread-safe.
 *
 *     unsigned options = 0;
 *     exp_decide_options_parse("[\"INCLUDE_REASONS\", \"DISABLE_DECISION_EVENT\"]", &options);
 */
exp_status exp_decide_options_parse(const char *names_json, unsigned *out_options);

/* ---------------------------------------------------------------------------------------------- */
/* Experiments (Optimizely activate / get_variation; Kameleoon trigger_experiment)                 */
/* ---------------------------------------------------------------------------------------------- */

/*
 * The variation key `user_id` gets in experiment `experiment_key`, without sending an event.
 * *out_variation_key receives a string to free with exp_free(), or NULL when the user is in no variation
 * (not running, not targeted, outside the traffic): that is EXP_OK, not an error.
 * Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_EXPERIMENT, argument errors as exp_decide. Thread-safe.
 *
 *     char *v = NULL;
 *     if (exp_get_variation(c, "checkout_test", "user-1", NULL, 0, &v) == EXP_OK && v) { puts(v); }
 *     exp_free(v);
 */
exp_status exp_get_variation(exp_client *client, const char *experiment_key, const char *user_id,
                             const exp_attribute *attributes, size_t attribute_count,
                             char **out_variation_key);

/* As exp_get_variation (ownership, errors, thread-safety and example alike), and when the user gets a
 * variation an impression event is sent. A variation whose key is "" activates nobody, as in the
 * reference (it tests the key for truth): no impression, and *out_variation_key is NULL. */
exp_status exp_activate(exp_client *client, const char *experiment_key, const char *user_id,
                        const exp_attribute *attributes, size_t attribute_count, char **out_variation_key);

/* Length-delimited exp_get_variation and exp_activate (see exp_decide_n): keys, user id and attribute
 * strings may contain NUL bytes. Everything else as exp_get_variation / exp_activate.
 *     char *v = NULL;
 *     exp_get_variation_n(c, "checkout_test", 13, "u\0001", 3, NULL, 0, &v); exp_free(v); */
exp_status exp_get_variation_n(exp_client *client, const char *experiment_key, size_t experiment_key_length,
                               const char *user_id, size_t user_id_length, const exp_attribute_n *attributes,
                               size_t attribute_count, char **out_variation_key);
exp_status exp_activate_n(exp_client *client, const char *experiment_key, size_t experiment_key_length,
                          const char *user_id, size_t user_id_length, const exp_attribute_n *attributes,
                          size_t attribute_count, char **out_variation_key);

/* exp_get_variation_n and exp_activate_n that also give the variation key's length in bytes through
 * *out_variation_key_length (0 when *out_variation_key is NULL): a datafile's variation key may contain NUL
 * bytes, which a reader stopping at the first NUL would cut off. *out_variation_key is still NUL-terminated
 * and freed with exp_free(); out_variation_key_length may be NULL. Ownership, errors and thread-safety as
 * exp_get_variation.
 *     char *v = NULL; size_t n = 0;
 *     if (exp_get_variation_len(c, "checkout_test", 13, "user-1", 6, NULL, 0, &v, &n) == EXP_OK && v)
 *         fwrite(v, 1, n, stdout);
 *     exp_free(v); */
exp_status exp_get_variation_len(exp_client *client, const char *experiment_key, size_t experiment_key_length,
                                 const char *user_id, size_t user_id_length, const exp_attribute_n *attributes,
                                 size_t attribute_count, char **out_variation_key, size_t *out_variation_key_length);
exp_status exp_activate_len(exp_client *client, const char *experiment_key, size_t experiment_key_length,
                            const char *user_id, size_t user_id_length, const exp_attribute_n *attributes,
                            size_t attribute_count, char **out_variation_key, size_t *out_variation_key_length);

/*
 * Kameleoon-style: decides the experiment with id `experiment_id` for `user_id` and returns the variation
 * id through *out_variation_id (free with exp_free()), sending an impression event. The user's stored
 * properties and forced variations apply as for any decision; the result is sticky once a profile store
 * is configured.
 * Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_EXPERIMENT (no such id), EXP_ERR_NOT_TARGETED (the user
 * does not meet the experiment's audiences), EXP_ERR_NOT_ALLOCATED (the experiment is not running, or the
 * user falls outside its traffic or group), argument errors as exp_decide. Thread-safe.
 *
 *     char *variation_id = NULL;
 *     switch (exp_trigger_experiment(c, "user-1", "20110", NULL, 0, &variation_id)) {
 *     case EXP_OK: printf("variation %s\n", variation_id); break;
 *     case EXP_ERR_NOT_TARGETED: case EXP_ERR_NOT_ALLOCATED: puts("default experience"); break;
 *     default: fprintf(stderr, "%s\n", exp_last_error());
 *     }
 *     exp_free(variation_id);
 */
exp_status exp_trigger_experiment(exp_client *client, const char *user_id, const char *experiment_id,
                                  const exp_attribute *attributes, size_t attribute_count,
                                  char **out_variation_id);

/* ---------------------------------------------------------------------------------------------- */
/* Forced variations and forced decisions (kept in the state file; see user_store_capacity)       */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Forces `user_id` into `variation_key` of experiment `experiment_key` (Optimizely set_forced_variation);
 * variation_key NULL removes the forcing. It wins over whitelisting and bucketing but not over the
 * experiment's running status. Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_EXPERIMENT,
 * EXP_ERR_UNKNOWN_VARIATION, argument errors. Thread-safe.
 *
 *     exp_set_forced_variation(c, "checkout_test", "qa-user", "treatment");   // QA sees the treatment
 *     exp_set_forced_variation(c, "checkout_test", "qa-user", NULL);          // back to bucketing
 */
exp_status exp_set_forced_variation(exp_client *client, const char *experiment_key, const char *user_id,
                                    const char *variation_key);

/* The forced variation key, or NULL (EXP_OK) when none. Free *out_variation_key with exp_free().
 * Errors as exp_set_forced_variation. Thread-safe.
 *     char *v = NULL; exp_get_forced_variation(c, "checkout_test", "qa-user", &v); ... exp_free(v); */
exp_status exp_get_forced_variation(exp_client *client, const char *experiment_key, const char *user_id,
                                    char **out_variation_key);
/* exp_get_forced_variation that also gives the key's length in bytes (it may contain NUL bytes; 0 when
 * *out_variation_key is NULL; out_variation_key_length may be NULL). Everything else as exp_get_forced_variation.
 *     char *v = NULL; size_t n = 0;
 *     exp_get_forced_variation_len(c, "checkout_test", "qa-user", &v, &n); ... exp_free(v); */
exp_status exp_get_forced_variation_len(exp_client *client, const char *experiment_key, const char *user_id,
                                        char **out_variation_key, size_t *out_variation_key_length);

/* exp_set_forced_variation and exp_get_forced_variation_len with every string given with its byte length, so
 * user ids and keys may hold NUL bytes (as the _n evaluation calls take them); variation_key NULL removes the
 * forced variation. Everything else as the functions they are named after. */
exp_status exp_set_forced_variation_n(exp_client *client, const char *experiment_key, size_t experiment_key_length,
                                      const char *user_id, size_t user_id_length, const char *variation_key,
                                      size_t variation_key_length);
exp_status exp_get_forced_variation_n(exp_client *client, const char *experiment_key, size_t experiment_key_length,
                                      const char *user_id, size_t user_id_length, char **out_variation_key,
                                      size_t *out_variation_key_length);

/*
 * Sets a forced decision (Optimizely user-context set_forced_decision) for `user_id`: for flag `flag_key`
 * and rule `rule_key` (NULL for the flag as a whole) the user gets the flag variation `variation_key`;
 * NULL variation_key removes it. A forced variation key the flag does not have is ignored at decide time,
 * as in the reference SDK. Errors: argument errors, EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_set_forced_decision(c, "qa-user", "free_shipping", NULL, "on");     // the whole flag
 */
exp_status exp_set_forced_decision(exp_client *client, const char *user_id, const char *flag_key,
                                   const char *rule_key, const char *variation_key);

/* Removes every forced decision of `user_id`. Errors: argument errors, EXP_ERR_CLOSED. Thread-safe. */
exp_status exp_remove_forced_decisions(exp_client *client, const char *user_id);

/* ---------------------------------------------------------------------------------------------- */
/* User properties (kept by the client, used by every call that names the user)                    */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Sets property `key` of `user_id` to `value` (copied). Every later decision, trigger and track for that
 * user sees it as an attribute; per-call attributes with the same key win. The store holds at most
 * "user_store_capacity" users, evicting the least recently used.
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULLs, bad type), EXP_ERR_INVALID_UTF8, EXP_ERR_TOO_LARGE,
 * EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_value plan = {EXP_VALUE_STRING, 0, 0, 0.0, "premium"};
 *     exp_set_user_property(c, "user-1", "plan", &plan);
 */
exp_status exp_set_user_property(exp_client *client, const char *user_id, const char *key,
                                 const exp_value *value);

/* As exp_set_user_property with the value given as JSON text: a string, number, true/false or null; plus
 * EXP_ERR_INVALID_JSON. Thread-safe.   exp_set_user_property_json(c, "user-1", "age", "31"); */
exp_status exp_set_user_property_json(exp_client *client, const char *user_id, const char *key,
                                      const char *value_json);

/* Removes one property (EXP_OK if it was not set). Errors as exp_set_user_property. Thread-safe.
 *     exp_remove_user_property(c, "user-1", "plan"); */
exp_status exp_remove_user_property(exp_client *client, const char *user_id, const char *key);

/* Removes every property of the user. Errors: argument errors, EXP_ERR_CLOSED. Thread-safe. */
exp_status exp_clear_user_properties(exp_client *client, const char *user_id);

/* The user's stored properties as a JSON object (in the order they were first set); "{}" when none.
 * Free *out_json with exp_free(). Errors: argument errors, EXP_ERR_CLOSED. Thread-safe. */
exp_status exp_get_user_properties_json(exp_client *client, const char *user_id, char **out_json);

/* ---------------------------------------------------------------------------------------------- */
/* Conversions                                                                                      */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Records conversion `event_key` for `user_id` and sends the conversion event. `tags_json` is NULL or a
 * JSON object of event tags. As in the reference SDK, an integer "revenue" (cents) and a numeric "value"
 * (a number or numeric string) are also reported as the event's revenue and value; tags of other types
 * are sent as ordinary tags only. Tags that Python reads as false (`[]`, `0`, `0.0`, `""`, `false`) are
 * sent as they are, as the reference's validator lets them through; other non-objects are refused.
 * Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_EVENT, EXP_ERR_INVALID_EVENT_TAGS, EXP_ERR_INVALID_JSON,
 * argument errors as exp_decide. Thread-safe.
 *
 *     exp_track(c, "purchase", "user-1", NULL, 0, "{\"revenue\": 4200, \"category\": \"shoes\"}");
 */
exp_status exp_track(exp_client *client, const char *event_key, const char *user_id,
                     const exp_attribute *attributes, size_t attribute_count, const char *tags_json);

/* Length-delimited exp_track (see exp_decide_n): the event key, user id and attribute strings may contain
 * NUL bytes; tags_json stays NUL-terminated JSON (a NUL inside a tag string is written \u0000).
 * Everything else as exp_track.   exp_track_n(c, "purchase", 8, "u\0001", 3, NULL, 0, NULL); */
exp_status exp_track_n(exp_client *client, const char *event_key, size_t event_key_length, const char *user_id,
                       size_t user_id_length, const exp_attribute_n *attributes, size_t attribute_count,
                       const char *tags_json);

/* ---------------------------------------------------------------------------------------------- */
/* Events                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* One outgoing event batch, in the reference SDK's event-batch format. All fields borrowed for the
 * duration of the callback. */
typedef struct exp_event {
    const char *url;          /* e.g. "https://logx.optimizely.com/v1/events" */
    const char *http_verb;    /* "POST" */
    const char *body;         /* the JSON payload (NUL-terminated) */
    size_t body_length;
} exp_event;

/* Receives each event. Return 0 when accepted; any other value counts as a failed dispatch. */
typedef int (*exp_event_dispatch_fn)(const exp_event *event, void *user_data);

/*
 * Installs a custom event dispatcher: every impression and conversion is handed to `dispatch` with
 * `user_data`, synchronously on the thread whose call produced it. NULL `dispatch` removes it (events are
 * then go to the built-in pipeline, see below). The callback must not call exp_client_free on this client.
 * Errors: EXP_ERR_INVALID_ARGUMENT (client NULL), EXP_ERR_CLOSED. Thread-safe.
 *
 *     static int post(const exp_event *e, void *queue) { return enqueue(queue, e->url, e->body) ? 0 : 1; }
 *     exp_client_set_event_dispatcher(c, post, my_queue);
 */
exp_status exp_client_set_event_dispatcher(exp_client *client, exp_event_dispatch_fn dispatch,
                                           void *user_data);

/* ---------------------------------------------------------------------------------------------- */
/* Event pipeline: durable queue, batching, delivery, stats                                         */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Without a host dispatcher, events go to the built-in pipeline:
 * - exp_track (and every impression) copies the event into the client's event journal before returning
 *   EXP_OK: files <state_dir>/event-journal-*.bin mapped into memory, so the event is in the kernel's page
 *   cache and survives the process being killed (not an OS crash). The dispatcher thread sends journaled
 *   events and clears them once acknowledged; events that fail (or are left at close) move to
 *   <state_dir>/state.sqlite (table event_queue, WAL) for their retries; a client moves journals left by
 *   dead processes there at start. Each event carries its own "uuid": receivers deduplicate by it (a
 *   retry repeats the uuid).
 * - A background thread POSTs batches of up to "event_batch_size" events every "event_flush_interval_ms"
 *   (sooner once a batch is full; back to back while a backlog waits), with up to "event_max_inflight"
 *   POSTs at once (integer 1..64, default 4), to "event_endpoint" (default "https://logx.optimizely.com/v1/events";
 *   "none" turns the pipeline off, and events without a host dispatcher are then dropped and counted;
 *   the EXPERIMENT_EVENT_ENDPOINT environment variable changes the default). Events sharing account,
 *   project, revision and anonymize_ip are merged into one reference-format payload, one visitor each.
 * - An event leaves the queue only after a 2xx. 5xx, 408, 429 and transport errors are retried with
 *   exponential backoff (200 ms doubling to 60 s, with jitter); other 4xx make the event poison: it is
 *   moved to table event_dead_letter, counted, logged, and reported to EXP_NOTIFY_LOG_EVENT listeners.
 * - Every event's life is bounded: after "event_max_attempts" failed attempts (integer 1..1000000,
 *   default 1000) or "event_max_age_s" seconds after it was queued (integer 1..315360000, default 604800 =
 *   7 days) it moves to event_dead_letter (reason names the bound), counted in stats "expired", logged.
 * - Queued events go to the endpoint of the client that sends them, whatever endpoint they were queued
 *   under: a program restarted with a corrected "event_endpoint" delivers what the old one could not.
 * - The state file is shared by every program using the state directory. Each client waits (exp_flush,
 *   exp_client_close) only for its own events; events other programs or earlier runs left are sent by any
 *   client's background rounds, never by a flush or a close (they do not delay it).
 * - A repeating problem (a full disk refusing every exp_track, a failing endpoint) is logged once per 10 s
 *   with the number of repeats. On a full disk, delivered events are still removed (a 1 MB reserve file
 *   <state_dir>/event-reserve.bin is released for that), so the backlog drains to a healthy endpoint.
 * - "event_queue_capacity" bounds the queue; "event_queue_full_policy" "reject" (default) makes exp_track
 *   fail with EXP_ERR_QUEUE_FULL, "drop_oldest" evicts the oldest event. Impressions are never refused
 *   to their decision: one that does not fit is dropped. Every dropped event is counted.
 * - exp_client_close (and exp_client_free) deliver this client's events for up to "close_timeout_ms",
 *   retrying failures (backoff shortened to fit); what is not delivered by then stays on disk and the next
 *   client on the same state_dir sends it (exp_client_close then answers EXP_ERR_TIMEOUT).
 * - EXP_NOTIFY_LOG_EVENT listeners and the log callback may run on the dispatcher's thread: they must not
 *   call exp_flush, exp_client_close or exp_client_free on this client (the drain would wait for itself).
 * - Disk: two 4 MB journal files per client with an event pipeline (mapped; the page cache holds what is
 *   in use), the 1 MB event-reserve.bin per state directory, plus the event_queue rows of undelivered events.
 */

/*
 * Sends this client's queued events now (backoff delays are skipped) and keeps retrying those that fail,
 * with backoff shortened to fit, until none is left or "close_timeout_ms" passed. EXP_OK when all of this
 * client's events were delivered; EXP_ERR_TIMEOUT when some remain (the endpoint is failing or slow: they
 * stay queued and are retried). Events other programs left in the state file are not waited for. With a
 * host dispatcher (or
 * event_endpoint "none") there is nothing to flush: EXP_OK. Errors: EXP_ERR_INVALID_ARGUMENT,
 * EXP_ERR_CLOSED, EXP_ERR_TIMEOUT. Thread-safe; blocks the caller.
 *
 *     if (exp_flush(c) == EXP_ERR_TIMEOUT) fprintf(stderr, "events pending: %s\n", exp_last_error());
 */
exp_status exp_flush(exp_client *client);

/*
 * The event counters of this client as a JSON object through *out_json (free with exp_free()):
 * {"queued": accepted into the durable queue, "sent": delivered (2xx, or accepted by the host
 *  dispatcher), "retried": events rescheduled after a failed attempt, "failed": failed deliveries (POSTs
 *  and host-dispatcher refusals), "dropped": events not kept (no dispatcher, queue full, evicted, state
 *  file failure), "poisoned": events refused for good (4xx), "batches_sent": successful POSTs,
 *  "expired": events moved to event_dead_letter after event_max_attempts / event_max_age_s,
 *  "pending": this client's undelivered events on disk now (journal + its event_queue rows, counted by
 *  SQLite), "backlog": every event waiting in the state file (other programs' and earlier runs' too),
 *  "dead_letter": rows of event_dead_letter, "last_error": the latest delivery problem or null}. After
 *  exp_client_close the disk figures are those at close.
 * Errors: EXP_ERR_INVALID_ARGUMENT. Thread-safe; works after close.
 *
 *     char *stats; exp_client_stats(c, &stats); puts(stats); exp_free(stats);
 */
exp_status exp_client_stats(exp_client *client, char **out_json);

/* ---------------------------------------------------------------------------------------------- */
/* Kameleoon conversions and user data                                                               */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Kameleoon's user data, kept per user in memory until it is sent with the user's next
 * exp_trigger_experiment, exp_activate, exp_track or exp_track_conversion, or by exp_flush_user.
 * On the wire it is one visitor in the reference batch format (so it shares the queue, batching and
 * retries of every other event):
 * - custom data -> attribute {"entity_id": "kameleoon_custom_<index>", "key": same, "type": "custom",
 *   "value": the string (or array of strings)}; a later value for the same index replaces the earlier;
 * - interest -> attribute {"entity_id": "kameleoon_interest_<index>", ..., "value": true};
 * - conversion -> snapshot event {"entity_id": "<goal_id>", "key": the datafile event key with that id or
 *   "goal_<goal_id>", "uuid", "timestamp", "value": revenue (when given), "tags": {"goal_id", "revenue",
 *   "negative"}}; data without a conversion travels in one event with key "kameleoon_data".
 * Bounds: 1,000 pending entries per user and 100,000 users with pending data (EXP_ERR_TOO_LARGE past them).
 */

/*
 * Adds user data for `user_id`. `data_json` is one entry or an array of entries:
 *   {"type": "custom", "index": 1, "value": "gold"}      (value: a string or a non-empty array of strings)
 *   {"type": "interest", "index": 2}
 *   {"type": "conversion", "goal_id": 32, "revenue": 10.0, "negative": false}   (revenue, negative optional)
 * Nothing is sent yet. Both strings are borrowed (copied). Errors: EXP_ERR_INVALID_ARGUMENT (unknown type
 * or key, wrong value), EXP_ERR_INVALID_JSON, EXP_ERR_TOO_LARGE, EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_add_user_data(c, "user-1", "[{\"type\": \"interest\", \"index\": 2},"
 *                                    " {\"type\": \"custom\", \"index\": 1, \"value\": \"gold\"}]");
 */
exp_status exp_add_user_data(exp_client *client, const char *user_id, const char *data_json);

/*
 * Kameleoon trackConversion: records goal `goal_id` for `user_id` with `revenue` (NAN for none) and sends
 * it now, together with the user's pending user data. Errors: EXP_ERR_INVALID_ARGUMENT (negative goal,
 * infinite revenue), EXP_ERR_NOT_READY, EXP_ERR_QUEUE_FULL, EXP_ERR_STORE, EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_track_conversion(c, "user-1", 128763, 10.0);
 */
exp_status exp_track_conversion(exp_client *client, const char *user_id, int64_t goal_id, double revenue);

/*
 * Kameleoon flush(user): sends `user_id`'s pending user data now (EXP_OK with nothing when there is none).
 * Errors: EXP_ERR_NOT_READY, EXP_ERR_QUEUE_FULL, EXP_ERR_STORE, EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_flush_user(c, "user-1");
 */
exp_status exp_flush_user(exp_client *client, const char *user_id);

/*
 * Receives the outcome of a delivery: `status` and `sent`, how many events were delivered (acknowledged
 * with a 2xx by the endpoint, or accepted by the host's dispatcher), with the `user_data` given. Inside the
 * callback exp_last_error() describes a failure.
 */
typedef void (*exp_delivery_fn)(exp_status status, size_t sent, void *user_data);

/*
 * Completion callbacks (Kameleoon trackConversion / flush with a completion handler). Each does what the
 * call without a callback does, and when it returns EXP_OK `callback` is called exactly once with the
 * first outcome of the one event it sent (the conversion travels with the user's pending data as one event):
 *   EXP_OK, sent 1               the endpoint acknowledged it with a 2xx (or the host's dispatcher took it);
 *   EXP_ERR_DELIVERY_FAILED, 0   the endpoint failed it (5xx, 408, 429, transport error: it stays queued
 *                                and is retried as usual) or refused it for good (other 4xx: moved to
 *                                event_dead_letter), the host's dispatcher refused it, or it had nowhere to
 *                                go (no dispatcher and event_endpoint "none": dropped);
 *   EXP_ERR_TIMEOUT, 0           the client was closed with the event still on disk (not yet attempted, or
 *                                evicted by "drop_oldest"): the next client on the state directory sends it;
 *   EXP_OK, sent 0               exp_flush_user_with_callback: the user had no pending data.
 * Which thread: with the built-in pipeline, a library thread of its own once the event's POST ended (no lock
 * of the library is held: the callback may call into the client, even exp_flush or exp_client_close); with a
 * host dispatcher, no data or nowhere to go, the calling thread before the function returns. The event is
 * sent in the background either way: the call does not wait for the endpoint.
 * Lifetime: exp_client_close (and exp_client_free) return only after every pending callback was called and
 * returned (those of events still on disk with EXP_ERR_TIMEOUT), unless called from such a callback.
 * Errors returned directly (callback then never called): those of exp_track_conversion / exp_flush_user,
 * EXP_ERR_INVALID_ARGUMENT for a NULL callback. Thread-safe.
 *
 *     static void on_sent(exp_status status, size_t sent, void *user_data) {
 *         (void)user_data;
 *         if (status == EXP_OK) printf("%zu delivered\n", sent); else printf("not yet: %s\n", exp_last_error());
 *     }
 *     exp_track_conversion_with_callback(c, "user-1", 128763, 1.0, on_sent, NULL);
 *     exp_add_user_data(c, "user-1", "{\"type\": \"interest\", \"index\": 2}");
 *     exp_flush_user_with_callback(c, "user-1", on_sent, NULL);
 */
exp_status exp_track_conversion_with_callback(exp_client *client, const char *user_id, int64_t goal_id,
                                              double revenue, exp_delivery_fn callback, void *user_data);
exp_status exp_flush_user_with_callback(exp_client *client, const char *user_id, exp_delivery_fn callback,
                                        void *user_data);

/*
 * exp_flush without blocking: returns at once, and when it returns EXP_OK the flush runs on a library thread
 * of its own and `callback` is called exactly once from that thread (holding no lock of the library) with
 * what exp_flush would have returned — EXP_OK when none of this client's events is left, EXP_ERR_TIMEOUT
 * when some remain after close_timeout_ms (they stay queued and are retried), EXP_ERR_CLOSED when the client
 * was closed meanwhile — and `sent`, how many of this client's events the pipeline delivered while the flush
 * ran (0 with a host dispatcher or event_endpoint "none": nothing to flush). Lifetime as the completion
 * callbacks above. Errors returned directly (callback then never called): EXP_ERR_INVALID_ARGUMENT (NULL
 * client or callback), EXP_ERR_CLOSED, EXP_ERR_INTERNAL (no thread could be started). Thread-safe.
 *
 *     exp_client_flush_async(c, on_sent, NULL);    // on_sent: see exp_track_conversion_with_callback
 */
exp_status exp_client_flush_async(exp_client *client, exp_delivery_fn callback, void *user_data);

/* ---------------------------------------------------------------------------------------------- */
/* Logging                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

typedef enum exp_log_level {
    EXP_LOG_ERROR = 1,      /* something failed: a rejected datafile */
    EXP_LOG_WARNING = 2,    /* the library kept going, but a person should look: a failed event dispatch */
    EXP_LOG_INFO = 3,       /* lifecycle: client created, datafile revision in use */
    EXP_LOG_DEBUG = 4       /* detail: events dropped for want of a dispatcher */
} exp_log_level;

/* Receives each message at or above the client's "log_level". `message` is borrowed for the call. */
typedef void (*exp_log_fn)(int level, const char *message, void *user_data);

/*
 * Sends the client's log messages to `log` with `user_data`, synchronously on the thread that produced them;
 * NULL restores the default, which writes "libexperiment [level] message" lines to standard error.
 * Messages never contain SDK keys, tokens or API keys in full. The callback must not call
 * exp_client_free on this client. Errors: EXP_ERR_INVALID_ARGUMENT, EXP_ERR_CLOSED. Thread-safe.
 *
 *     static void to_syslog(int level, const char *message, void *user_data) {
 *         (void)user_data;
 *         syslog(level == EXP_LOG_ERROR ? LOG_ERR : level == EXP_LOG_WARNING ? LOG_WARNING : LOG_INFO, "%s", message);
 *     }
 *     exp_client_set_logger(c, to_syslog, NULL);
 */
exp_status exp_client_set_logger(exp_client *client, exp_log_fn log, void *user_data);

/* Changes the client's log level (an exp_log_level). Errors: EXP_ERR_INVALID_ARGUMENT. Thread-safe.
 *     exp_client_set_log_level(c, EXP_LOG_DEBUG); */
exp_status exp_client_set_log_level(exp_client *client, int level);

/* ---------------------------------------------------------------------------------------------- */
/* Notification listeners                                                                          */
/* ---------------------------------------------------------------------------------------------- */

/* What a listener hears about. */
typedef enum exp_notification_type {
    /* a decision: {"type": "flag", "user_id", "attributes", "decision_info": {"flag_key", "enabled",
       "variables", "variation_key", "rule_key", "reasons", "decision_event_dispatched", "experiment_id",
       "variation_id"}} from decide, or
       {"type": "ab-test" (or "feature-test" for an experiment a flag lists), ..., "decision_info":
       {"experiment_key", "variation_key"}} from get_variation / activate / trigger_experiment, as
       optimizely-sdk's DECISION notifications; decide's also has "experiment_id" and "variation_id"
       (null without a rule or variation) and "variables" {} under EXCLUDE_VARIABLES */
    EXP_NOTIFY_DECISION = 1,
    EXP_NOTIFY_TRACK = 2,          /* a tracked conversion: {"event_key", "user_id", "attributes", "event_tags"} */
    /* an event batch was handed on: {"url", "http_verb", "status" (HTTP status; 0 for a transport error;
       null for a host dispatcher), "event_count", "outcome": "sent" | "retry" | "poisoned" | "failed"} */
    EXP_NOTIFY_LOG_EVENT = 3,
    EXP_NOTIFY_CONFIG_UPDATE = 4,  /* the datafile changed: {"revision", "project_id", "sdk_key"} */
    /* a datafile fetch ended (asynchronous start, poll, cache-TTL refresh, exp_client_refresh), after the
       EXP_NOTIFY_CONFIG_UPDATE it may have caused: {"outcome": "updated" | "not_modified" | "failed" |
       "rejected", "ready" (the client has a datafile), "revision" (the one in use, or null), "error_code",
       "error" (null unless failed or rejected)}. A client serving its datafile after "failed" or
       "rejected" serves a stale one until the next "updated" or "not_modified". */
    EXP_NOTIFY_DATAFILE_FETCH = 5,
    /* an event (impression, conversion) was built and is now handed on, to the host's dispatcher or the
       built-in pipeline's queue (or, with "event_endpoint": "none", nowhere): {"url", "http_verb", "params"
       (the event batch: the JSON body as it is sent)}. One per event, on the thread that caused it, before
       it is handed on: what the reference SDK's LOG_EVENT listeners receive with its default dispatcher,
       while the pipeline still batches and delivers. With a listener of this type, events are built even
       when nothing else would receive them. */
    EXP_NOTIFY_EVENT = 6
} exp_notification_type;

/* Receives one notification: `payload_json` (a JSON object, borrowed for the call) and the `user_data`
   given when the listener was added. Called synchronously on the thread that caused the notification,
   outside the library's locks; it may call into the client but must not free it. */
typedef void (*exp_notification_fn)(int type, const char *payload_json, void *user_data);

/*
 * Adds a listener for one exp_notification_type. *out_id (may be NULL) receives an id for
 * exp_remove_notification_listener. The listener stays until removed or the client is freed.
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULL client or listener, unknown type), EXP_ERR_CLOSED. Thread-safe.
 *
 *     static void on_update(int type, const char *payload, void *user_data) {
 *         (void)type; (void)user_data; printf("new datafile: %s\n", payload);
 *     }
 *     int64_t id;
 *     exp_add_notification_listener(c, EXP_NOTIFY_CONFIG_UPDATE, on_update, NULL, &id);
 */
exp_status exp_add_notification_listener(exp_client *client, int type, exp_notification_fn listener,
                                         void *user_data, int64_t *out_id);

/* Removes the listener with `id`. Errors: EXP_ERR_INVALID_ARGUMENT (NULL client), EXP_ERR_NOT_FOUND (no
 * such listener). Thread-safe.   exp_remove_notification_listener(c, id); */
exp_status exp_remove_notification_listener(exp_client *client, int64_t id);

/* ---------------------------------------------------------------------------------------------- */
/* Datafile lifecycle: asynchronous start, readiness, refresh, named clients                       */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Options of the datafile lifecycle (exp_client_create):
 *
 *   "sdk_key"                string   names the datafile URL and the cache entry (required for start_async)
 *   "datafile_url_template"  string   default "https://cdn.optimizely.com/datafiles/{sdk_key}.json";
 *                                     {sdk_key} is replaced by the (percent-encoded) key
 *   "datafile_access_token"  string   sent as "Authorization: Bearer <token>" (never logged)
 *   "polling_interval_s"     integer  seconds between conditional fetches (default 300; 1..9 are raised to
 *                                     10 with a warning; 0 disables polling)
 *   "request_timeout_ms"     integer  bound of one fetch, connect included (default 10000)
 *   "retry_count"            integer  retries of a failed fetch (network error, 5xx, 429), with back-off
 *                                     200 ms, 400 ms, 800 ms ... at most 5 s (default 3)
 *   "cache_ttl_s"            integer  cache-TTL mode instead of polling (0 or absent: off): when the
 *                                     datafile is older than this (minimum 10), the next decision wakes a
 *                                     background refresh; the decision itself never waits and uses the
 *                                     current datafile
 *   "state_dir"              string   the last good datafile per SDK key is kept in its state file
 *   "tag"                    string   names the client in the process (see exp_client_find); a second
 *                                     open client with the same tag fails with EXP_ERR_TAG_IN_USE
 *   "ca_file"                string   a PEM file of the CA certificates HTTPS requests of this client trust
 *                                     (datafile fetches, event posts, ODP), instead of the default: the
 *                                     environment's SSL_CERT_FILE (and SSL_CERT_DIR, a hashed directory),
 *                                     else libcurl's compiled-in bundle when that file exists, else the first
 *                                     existing of the usual places (/etc/ssl/certs/ca-certificates.crt,
 *                                     /etc/pki/tls/certs/ca-bundle.crt, /etc/pki/ca-trust/extracted/pem/
 *                                     tls-ca-bundle.pem, /etc/ssl/ca-bundle.pem, /etc/ssl/cert.pem, ...), so
 *                                     a libcurl built on one distribution (the Python wheel's) verifies
 *                                     servers on another
 *
 * Polling, retries and cache-TTL refreshes run only for clients started with exp_client_start_async or
 * exp_client_start_sync (EXP_SYNC_UPDATE_NOW); a client started with exp_client_start keeps the datafile it
 * was given. Test-only: the environment variable EXPERIMENT_DATAFILE_URL_TEMPLATE replaces the default
 * template; "none" turns fetching off (test suites set it). Fetches use If-None-Match /
 * If-Modified-Since; a 304 costs no parsing. A fetched datafile is compiled on the background thread and
 * swapped in atomically (decisions in flight finish on the old one); a datafile that fails validation, or
 * that belongs to another project than the one in use, is rejected and the current one kept (reported in
 * the log and in exp_client_datafile_status_json). Every change of revision, from any source, calls the
 * EXP_NOTIFY_CONFIG_UPDATE listeners once with {"revision", "previous_revision", "project_id", "sdk_key",
 * "source": "start"|"fetch"|"cache"|"bundled"}.
 * Test-only: the environment variable EXPERIMENT_TEST_SECOND_MS=<n> makes each second of
 * polling_interval_s and cache_ttl_s last n ms.
 */

/* Receives the outcome of exp_client_start_async once: EXP_OK when the client is ready (from the fetched,
   cached or bundled datafile), else the reason it is not (e.g. EXP_ERR_FETCH_FAILED, EXP_ERR_INVALID_JSON,
   EXP_ERR_CLOSED). Called on the library's background thread; it may call into the client but must not
   free it. */
typedef void (*exp_ready_fn)(int status, void *user_data);

/*
 * Starts the client asynchronously: a background thread fetches the newest datafile for the sdk_key option
 * (retrying as configured). If the fetch fails or times out, or the fetched datafile is rejected, the
 * client starts from the cached datafile of the last good fetch (state_dir), else from `fallback[0..length)`
 * (a bundled datafile; NULL for none; copied, so the buffer may be freed on return). Then `callback`
 * (NULL for none) is called once with the outcome, and polling (or the cache-TTL mode) begins.
 * Returns at once. Errors: EXP_ERR_INVALID_OPTION (no sdk_key), EXP_ERR_INVALID_ARGUMENT (NULL client, or
 * already started asynchronously), EXP_ERR_CLOSED. Thread-safe.
 *
 *     static void on_ready(int status, void *user_data) { (void)user_data; printf("ready: %s\n", exp_status_str(status)); }
 *     exp_client_start_async(c, bundled, bundled_len, on_ready, NULL);
 *     if (exp_client_wait_ready(c, 1000) != EXP_OK) puts("not ready yet: decisions answer EXP_ERR_NOT_READY");
 */
exp_status exp_client_start_async(exp_client *client, const char *fallback, size_t length,
                                  exp_ready_fn callback, void *user_data);

/*
 * Blocks until the client has a datafile (from any start) and the EXP_NOTIFY_CONFIG_UPDATE listeners of
 * that first datafile have returned (as optimizely-sdk sets its ready event after notifying them), for at
 * most `timeout_ms` milliseconds (timeout_ms < 0: the default 2000 ms; 0: just checks; any huge value up to
 * INT64_MAX waits until ready or closed: deadlines saturate, they never wrap). A config-update
 * listener that waits for readiness itself therefore times out. EXP_OK when ready. Errors: EXP_ERR_TIMEOUT (not
 * ready in time; decisions meanwhile answer EXP_ERR_NOT_READY), the async start's own failure code as soon
 * as it gave up with no datafile to use (e.g. EXP_ERR_FETCH_FAILED; later polls may still succeed),
 * EXP_ERR_CLOSED (also when the client is closed during the wait). Thread-safe. Example: exp_client_start_async.
 */
exp_status exp_client_wait_ready(exp_client *client, int64_t timeout_ms);

/*
 * Kameleoon runWhenReady: exp_client_wait_ready without blocking. Returns at once; when it returns EXP_OK,
 * `callback(status, user_data)` is called exactly once with what exp_client_wait_ready(client, timeout_ms)
 * would have returned: EXP_OK as soon as the client has a datafile, EXP_ERR_TIMEOUT after timeout_ms
 * (timeout_ms < 0: the default 2000 ms; up to INT64_MAX: no timeout), the asynchronous start's failure code as soon as it gave up with no
 * datafile to use, or EXP_ERR_CLOSED when the client is closed first.
 * Which thread: a client that is ready already is answered on the calling thread, before this function
 * returns; every other answer comes from a library thread of its own, which holds no lock of the library
 * while the callback runs (the callback may call into the client, even exp_client_close). Inside the
 * callback exp_last_error() names the reason of a failure.
 * Lifetime: exp_client_close (and exp_client_free) wake a waiting callback with EXP_ERR_CLOSED and return
 * only after it returned (unless the close is called from that callback itself), so once the client is
 * closed no callback runs or is still to come: user_data may then be freed.
 * Errors returned directly (callback then never called): EXP_ERR_INVALID_ARGUMENT (NULL client or
 * callback), EXP_ERR_CLOSED, EXP_ERR_INTERNAL (no thread could be started). Thread-safe.
 *
 *     static void on_ready(int status, void *user_data) {
 *         exp_client *c = user_data;
 *         char *variation = NULL;
 *         if (status == EXP_OK && exp_trigger_experiment(c, "user-1", "75253", NULL, 0, &variation) == EXP_OK)
 *             printf("variation %s\n", variation);
 *         else
 *             puts("reference");   // not ready within the timeout (or not in the experiment)
 *         exp_free(variation);
 *     }
 *     exp_client_start_async(c, NULL, 0, NULL, NULL);
 *     exp_client_run_when_ready(c, 1000, on_ready, c);
 */
exp_status exp_client_run_when_ready(exp_client *client, int64_t timeout_ms, exp_ready_fn callback,
                                     void *user_data);

/*
 * Fetches the datafile now, on the calling thread (at most one fetch runs at a time per client), with the
 * configured retries and conditional headers. EXP_OK when the client has the newest datafile (updated or
 * 304). Errors: EXP_ERR_FETCH_FAILED, the datafile's validation error (EXP_ERR_INVALID_JSON,
 * EXP_ERR_INVALID_DATAFILE incl. another project's datafile, EXP_ERR_TOO_LARGE, EXP_ERR_TOO_DEEP,
 * EXP_ERR_INVALID_UTF8): the current datafile stays in use. EXP_ERR_NOT_READY when the client was not
 * started with exp_client_start_async; EXP_ERR_CLOSED. Thread-safe.
 *
 *     if (exp_client_refresh(c) != EXP_OK) fprintf(stderr, "keeping the current datafile: %s\n", exp_last_error());
 */
exp_status exp_client_refresh(exp_client *client);

/* How exp_client_start_sync keeps its datafile fresh. */
#define EXP_SYNC_UPDATE_NONE        0  /* keep the datafile the start used: no fetching */
#define EXP_SYNC_UPDATE_NEXT_START  1  /* fetch once in the background and cache it: used at the next start */
#define EXP_SYNC_UPDATE_NOW         2  /* fetch in the background and use it at once; then poll every
                                          polling_interval_s (0: no polling) */
#define EXP_SYNC_GIVEN_FIRST     0x10  /* OR-ed into `update`: start from `bundled` even when a datafile is
                                          cached (optimizely-sdk's start with a datafile and an sdk_key) */

/*
 * Starts the client synchronously, as the Swift SDK's synchronous start does: at once, from the cached
 * datafile of the last good fetch for the sdk_key option (kept in state_dir) when there is one, else from
 * `bundled[0..length)` (NULL for none; copied); with EXP_SYNC_GIVEN_FIRST in `update`, from `bundled` whenever
 * it is given. Then, as `update` says (an EXP_SYNC_UPDATE_* value), the
 * datafile is kept fresh on a background thread. *out_from_cache (may be NULL) receives 1 when the cached
 * datafile was used, 0 when the bundled one was. Without an sdk_key it is exp_client_start with `bundled`.
 *
 * The Swift SDK's six initialization modes map to:
 *   S1  exp_client_start_sync(c, bundled, n, EXP_SYNC_UPDATE_NEXT_START, NULL)      the fetched datafile is
 *                                                                                   used at the next start
 *   S2  {"polling_interval_s": 0}  + exp_client_start_sync(..., EXP_SYNC_UPDATE_NOW) used at once
 *   S3  {"polling_interval_s": 60} + exp_client_start_sync(..., EXP_SYNC_UPDATE_NOW) used at once, polled
 *   A1  {"polling_interval_s": 0}  + exp_client_start_async + exp_client_wait_ready
 *   A2  {"polling_interval_s": 60} + exp_client_start_async (callback)
 *   A3  as A2, awaited (exp_client_wait_ready; Python: await client.wait_ready_async())
 * Errors: EXP_ERR_NOT_READY (no cached datafile and no bundled one), the bundled datafile's validation
 * error (EXP_ERR_INVALID_JSON, EXP_ERR_INVALID_DATAFILE, ...), EXP_ERR_INVALID_ARGUMENT (bad update value,
 * already started with datafile management), EXP_ERR_CLOSED. Thread-safe.
 *
 *     int from_cache = 0;
 *     if (exp_client_start_sync(c, bundled, bundled_len, EXP_SYNC_UPDATE_NOW, &from_cache) != EXP_OK)
 *         fprintf(stderr, "%s\n", exp_last_error());
 */
exp_status exp_client_start_sync(exp_client *client, const char *bundled, size_t length, int update,
                                 int *out_from_cache);

/*
 * Finds the open client created with option "tag": `tag`. *out_client receives a BORROWED handle: the same
 * pointer its creator holds. Do not exp_client_free it; it stays valid until its creator frees it (the tag
 * is released when that client is closed, after which exp_client_find no longer returns it). Errors:
 * EXP_ERR_NOT_FOUND, EXP_ERR_INVALID_ARGUMENT (NULLs), EXP_ERR_INVALID_UTF8. Thread-safe.
 *
 *     exp_client *checkout = NULL;
 *     if (exp_client_find("checkout", &checkout) == EXP_OK) exp_decide(checkout, "u1", "flag", NULL, 0, 0, &d);
 */
exp_status exp_client_find(const char *tag, exp_client **out_client);

/*
 * The datafile lifecycle's state as JSON: {"ready", "revision", "source", "managed", "polling_interval_ms",
 * "cache_ttl_ms", "fetches", "fetch_failures", "not_modified", "rejected", "updates", "cache_writes",
 * "last_error_code", "last_error", "last_success_age_ms", "warnings"}. "warnings" lists what the datafile in
 * use has that the reference SDK accepts but is likely a mistake, each {"place": "experiments[0].audienceIds[1]"
 * or null, "message", "severity": "warning"}; the datafile is in use and decides as the reference decides it
 * (the log callback gets each warning once per revision, at level warning). Free *out_json with exp_free().
 * Errors: EXP_ERR_INVALID_ARGUMENT, EXP_ERR_CLOSED. Thread-safe.
 *
 *     char *status = NULL;
 *     if (exp_client_datafile_status_json(c, &status) == EXP_OK) puts(status);
 *     exp_free(status);
 */
exp_status exp_client_datafile_status_json(exp_client *client, char **out_json);

/* ---------------------------------------------------------------------------------------------- */
/* Sigma: user properties, typed flag values, the user's flags, experiments and holdouts           */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Sigma user properties. `properties_json` is a JSON object whose keys are Sigma's standard keys or
 * "custom.<name>"; each is stored as a user property under exactly that name, which is also the attribute
 * name audience conditions use:
 *
 *     key            Sigma builder        value           audience attribute
 *     profile_id     setProfileId         string          "profile_id"
 *     device_id      setDeviceId          string          "device_id"
 *     email          setEmail             string          "email"
 *     app_version    setAppVersion        string          "app_version" (semver_* matches work)
 *     os_name        setOsName            string          "os_name"
 *     os_version     setOsVersion         string          "os_version"
 *     geo_code       setGeoCode           string          "geo_code"
 *     geo_country    setGeoCountry        string          "geo_country"
 *     geo_state      setGeoState          string          "geo_state"
 *     geo_city       setGeoCity           string          "geo_city"
 *     custom.<name>  setCustomProperty    string, number  "custom.<name>", e.g. "custom.isAuthorized"
 *                                         or true/false
 *
 * The user id is not a property: it is the `user_id` argument of every call (a "user_id" key is an error).
 * Profile id as the bucketing id: with the client option "bucket_by_profile_id": true, these calls also
 * store profile_id as "$opt_bucketing_id" (and drop it with profile_id), so the user is bucketed by the
 * profile id wherever Optimizely would use the bucketing id; without a profile_id the user id is used.
 * A per-call "$opt_bucketing_id" attribute still wins.
 *
 * exp_set_user_properties replaces all the user's properties (Sigma setUserProperties: earlier ones are
 * removed, including those set with exp_set_user_property); exp_edit_user_properties merges (Sigma
 * editUserProperties: the given keys are overwritten, a null value removes that key, others are kept);
 * exp_clear_user_properties (above) removes all (Sigma clearUserProperties). The object is checked whole
 * before anything changes. Errors: EXP_ERR_INVALID_JSON, EXP_ERR_INVALID_ARGUMENT (not an object, an
 * unknown key, a value of the wrong type, an empty "custom." name), EXP_ERR_INVALID_UTF8,
 * EXP_ERR_TOO_LARGE, EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_set_user_properties(c, "anon-42", "{\"profile_id\": \"p-7\", \"email\": \"u@example.com\","
 *                                           " \"custom.isAuthorized\": true}");
 *     exp_edit_user_properties(c, "anon-42", "{\"app_version\": \"2.3.0\", \"email\": null}");
 */
exp_status exp_set_user_properties(exp_client *client, const char *user_id, const char *properties_json);
exp_status exp_edit_user_properties(exp_client *client, const char *user_id, const char *properties_json);

/*
 * Typed flag values (Sigma checkFlag). A flag's value for a user:
 *   - variable_key NULL: whether the flag is enabled for the user, a bool (exp_flag_bool only);
 *   - variable_key set: the value of that flag variable as decide gives it (the variation's value when
 *     the flag is enabled, the variable's default when the decided variation disables it); the accessor
 *     must match the variable's type: boolean -> exp_flag_bool, integer -> exp_flag_int, double ->
 *     exp_flag_double, string -> exp_flag_string, json -> exp_flag_json (JSON text of the value).
 * The user has no value (*out_found = 0, EXP_OK, *out_value untouched) when no rule of the flag gives the
 * user a variation (e.g. the user is outside the flag's experiment), or when the variable's value cannot
 * be typecast (the reference SDK's None). That is not an error.
 * The flag is decided as exp_decide does, sending the same impression (unless the client's
 * default_decide_options disable decision events); a type mismatch is found before deciding and sends
 * nothing.
 * Strings from exp_flag_string / exp_flag_json are freed with exp_free().
 * Errors: EXP_ERR_TYPE_MISMATCH (accessor and value types differ, message names both),
 * EXP_ERR_NOT_FOUND (the flag has no variable `variable_key`), EXP_ERR_UNKNOWN_FLAG, EXP_ERR_NOT_READY,
 * argument errors as exp_decide (out_value and out_found must not be NULL). Thread-safe.
 *
 *     int on = 0, found = 0;
 *     if (exp_flag_bool(c, "user-1", "new_checkout", NULL, NULL, 0, &on, &found) == EXP_OK && found && on) {...}
 *     int64_t limit; char *theme = NULL;
 *     exp_flag_int(c, "user-1", "new_checkout", "item_limit", NULL, 0, &limit, &found);
 *     if (exp_flag_string(c, "user-1", "new_checkout", "theme", NULL, 0, &theme, &found) == EXP_OK && found)
 *         puts(theme);
 *     exp_free(theme);
 */
exp_status exp_flag_bool(exp_client *client, const char *user_id, const char *flag_key, const char *variable_key,
                         const exp_attribute *attributes, size_t attribute_count, int *out_value, int *out_found);
exp_status exp_flag_int(exp_client *client, const char *user_id, const char *flag_key, const char *variable_key,
                        const exp_attribute *attributes, size_t attribute_count, int64_t *out_value,
                        int *out_found);
exp_status exp_flag_double(exp_client *client, const char *user_id, const char *flag_key,
                           const char *variable_key, const exp_attribute *attributes, size_t attribute_count,
                           double *out_value, int *out_found);
exp_status exp_flag_string(exp_client *client, const char *user_id, const char *flag_key,
                           const char *variable_key, const exp_attribute *attributes, size_t attribute_count,
                           char **out_value, int *out_found);
exp_status exp_flag_json(exp_client *client, const char *user_id, const char *flag_key, const char *variable_key,
                         const exp_attribute *attributes, size_t attribute_count, char **out_json,
                         int *out_found);

/*
 * All flags the user has a value for (Sigma getUserFeatureFlagsDetails), as a JSON object in datafile
 * order: {"flag_key": {"enabled": true, "variation_key": "on", "variables": {...}}, ...}; flags that give
 * the user no variation are left out. No events are sent. Free *out_json with exp_free().
 * Errors: EXP_ERR_NOT_READY, argument errors as exp_decide. Thread-safe.
 *
 *     char *flags = NULL;
 *     if (exp_user_flags_json(c, "user-1", NULL, 0, &flags) == EXP_OK) puts(flags);
 *     exp_free(flags);
 */
exp_status exp_user_flags_json(exp_client *client, const char *user_id, const exp_attribute *attributes,
                               size_t attribute_count, char **out_json);

/*
 * The experiments the user is in (Sigma getAllUserExperiments) as "expId.groupIndex|expId.groupIndex|..."
 * ("" when none), in datafile order; groupIndex is the position of the user's variation in the
 * experiment's "variations" (0-based). An experiment used as a flag's experiment rule counts when the
 * flag's decision comes from it (a holdout, an earlier rule or a flag-level forced decision takes the
 * user out, as decide would); any other experiment counts when exp_get_variation gives a variation.
 * Delivery rules of rollouts are not experiments. The _json form gives
 * [{"id": "...", "key": "...", "group_index": 1, "variation_id": "...", "variation_key": "..."}, ...].
 *
 * The holdouts the user is in (Sigma getAllUserHoldouts) as "holdoutId.0|holdoutId.0|..." ("" when
 * none): running holdouts (global, then local) whose audience the user meets and whose traffic holds the
 * user; the group index is always 0. The _json form gives [{"id": "...", "key": "...", "group_index": 0}].
 *
 * Sticky assignments saved in the profile store are shown as decide would return them, but these
 * summaries never save one. No events are sent. Free *out with exp_free(). Errors: EXP_ERR_NOT_READY,
 * argument errors as exp_decide. Thread-safe.
 *
 *     char *experiments = NULL, *holdouts = NULL;
 *     exp_user_experiments(c, "user-1", NULL, 0, &experiments);   // e.g. "20110.1|20220.0"
 *     exp_user_holdouts(c, "user-1", NULL, 0, &holdouts);         // e.g. "90001.0"
 *     exp_free(experiments); exp_free(holdouts);
 */
exp_status exp_user_experiments(exp_client *client, const char *user_id, const exp_attribute *attributes,
                                size_t attribute_count, char **out);
exp_status exp_user_experiments_json(exp_client *client, const char *user_id, const exp_attribute *attributes,
                                     size_t attribute_count, char **out_json);
exp_status exp_user_holdouts(exp_client *client, const char *user_id, const exp_attribute *attributes,
                             size_t attribute_count, char **out);
exp_status exp_user_holdouts_json(exp_client *client, const char *user_id, const exp_attribute *attributes,
                                  size_t attribute_count, char **out_json);

/*
 * Whether the user is in the holdout with key `holdout_key` (Sigma getHoldout), by the rule of
 * exp_user_holdouts; a holdout that is not running holds nobody. No events are sent.
 * Errors: EXP_ERR_NOT_FOUND (no holdout with that key), EXP_ERR_NOT_READY, argument errors. Thread-safe.
 *
 *     int held = 0;
 *     exp_get_holdout(c, "user-1", "q3_holdout", NULL, 0, &held);
 */
exp_status exp_get_holdout(exp_client *client, const char *user_id, const char *holdout_key,
                           const exp_attribute *attributes, size_t attribute_count, int *out_in_holdout);

/*
 * The user's place in experiment `experiment_key` (Sigma getExperiment): *out_experiment receives a handle
 * to free with exp_experiment_free(), or NULL (EXP_OK) when the user is not in the experiment (the rule of
 * exp_user_experiments). A handle is immutable and may be read from any thread; its strings live until it
 * is freed. No events are sent (exp_activate or exp_decide record exposure).
 * Errors: EXP_ERR_UNKNOWN_EXPERIMENT (no experiment with that key; delivery rules are not experiments),
 * EXP_ERR_NOT_READY, argument errors. Thread-safe.
 * exp_get_experiment_json gives {"id", "key", "group_index", "variation_id", "variation_key",
 * "parameters": {...}} or "null".
 *
 *     exp_experiment *e = NULL;
 *     if (exp_get_experiment(c, "user-1", "checkout_test", NULL, 0, &e) == EXP_OK && e) {
 *         printf("%s group %d\n", exp_experiment_variation_key(e), exp_experiment_group_index(e));
 *         char *title = NULL; int found = 0;
 *         if (exp_experiment_param_string(e, "title", &title, &found) == EXP_OK && found) puts(title);
 *         exp_free(title);
 *     }
 *     exp_experiment_free(e);
 */
typedef struct exp_experiment exp_experiment;

exp_status exp_get_experiment(exp_client *client, const char *user_id, const char *experiment_key,
                              const exp_attribute *attributes, size_t attribute_count,
                              exp_experiment **out_experiment);
exp_status exp_get_experiment_json(exp_client *client, const char *user_id, const char *experiment_key,
                                   const exp_attribute *attributes, size_t attribute_count, char **out_json);

/* The experiment's id and key, the user's variation's id and key, and the parameters (the variation's
 * variables as a JSON object, "{}" for an experiment no flag uses), owned by the handle (valid until
 * exp_experiment_free; never free them); NULL for a NULL handle. exp_experiment_group_index: the variation's
 * position in the experiment (-1 for NULL). Never fail. A handle is immutable, so these and the typed
 * getters below may be called from any thread until it is freed. Example: exp_get_experiment. */
const char *exp_experiment_id(const exp_experiment *experiment);
const char *exp_experiment_key(const exp_experiment *experiment);
const char *exp_experiment_variation_id(const exp_experiment *experiment);
const char *exp_experiment_variation_key(const exp_experiment *experiment);
const char *exp_experiment_parameters_json(const exp_experiment *experiment);
int exp_experiment_group_index(const exp_experiment *experiment);

/*
 * Typed parameter getters (Sigma SigmaExperiment.getParamValue): parameter `name` is a variable of the
 * flag that uses the experiment, with this variation's value (whether or not the variation enables the
 * flag). Type rules, *out_found and string ownership as the exp_flag_* accessors.
 * Errors: EXP_ERR_TYPE_MISMATCH, EXP_ERR_NOT_FOUND (no parameter `name`), EXP_ERR_INVALID_ARGUMENT (NULL
 * handle, name or out pointers). Thread-safe.
 */
exp_status exp_experiment_param_bool(const exp_experiment *experiment, const char *name, int *out_value,
                                     int *out_found);
exp_status exp_experiment_param_int(const exp_experiment *experiment, const char *name, int64_t *out_value,
                                    int *out_found);
exp_status exp_experiment_param_double(const exp_experiment *experiment, const char *name, double *out_value,
                                       int *out_found);
exp_status exp_experiment_param_string(const exp_experiment *experiment, const char *name, char **out_value,
                                       int *out_found);
exp_status exp_experiment_param_json(const exp_experiment *experiment, const char *name, char **out_json,
                                     int *out_found);

/*
 * An experiment's flag values (Sigma SigmaExperiment.getFeatureFlagValue(flagName:)): the value the flag
 * `flag_key` gets from the user's variation when this experiment decides the flag, as exp_decide would give
 * it then — with variable_key NULL whether the variation enables the flag (a bool, exp_experiment_flag_bool
 * only); with variable_key the value of that flag variable: the variation's own value when the variation
 * enables the flag, the variable's default when it disables it (exp_experiment_param_* give the variation's
 * value either way). Type rules, *out_found (0 for a value the reference cannot typecast) and string
 * ownership (exp_free) as the exp_flag_* accessors. Nothing is decided again and no event is sent: the
 * handle is read as it is (immutable, any thread).
 * Errors: EXP_ERR_UNKNOWN_FLAG (no flag `flag_key`), EXP_ERR_NOT_FOUND (the flag does not use this
 * experiment as a rule — Sigma's getFeatureFlagValue throws — or has no variable `variable_key`),
 * EXP_ERR_TYPE_MISMATCH, EXP_ERR_INVALID_ARGUMENT (NULL handle, flag_key or out pointers). Thread-safe.
 *
 *     int on = 0, found = 0; char *theme = NULL;
 *     exp_experiment_flag_bool(e, "new_checkout", NULL, &on, &found);          // the flag's on/off
 *     if (exp_experiment_flag_string(e, "new_checkout", "theme", &theme, &found) == EXP_OK && found) puts(theme);
 *     exp_free(theme);
 */
exp_status exp_experiment_flag_bool(const exp_experiment *experiment, const char *flag_key, const char *variable_key,
                                    int *out_value, int *out_found);
exp_status exp_experiment_flag_int(const exp_experiment *experiment, const char *flag_key, const char *variable_key,
                                   int64_t *out_value, int *out_found);
exp_status exp_experiment_flag_double(const exp_experiment *experiment, const char *flag_key,
                                      const char *variable_key, double *out_value, int *out_found);
exp_status exp_experiment_flag_string(const exp_experiment *experiment, const char *flag_key,
                                      const char *variable_key, char **out_value, int *out_found);
exp_status exp_experiment_flag_json(const exp_experiment *experiment, const char *flag_key, const char *variable_key,
                                    char **out_json, int *out_found);

/* Frees a handle from exp_get_experiment (NULL is fine; never fails). No other call on the handle may run
 * or follow. Example: exp_get_experiment. */
void exp_experiment_free(exp_experiment *experiment);

/* ---------------------------------------------------------------------------------------------- */
/* Real-time segments (ODP)                                                                        */
/* ---------------------------------------------------------------------------------------------- */
/*
 * Audiences with `"match": "qualified"` conditions test whether the user belongs to a segment of the
 * Optimizely Data Platform (ODP). The segments service is the datafile's `integrations` entry with key
 * "odp" (host, publicKey), or the `odp` client option (host, api_key win over the datafile). A user's
 * qualified segments are fetched with exp_fetch_qualified_segments (or set directly with
 * exp_set_qualified_segments_json); later decisions for that user id evaluate `qualified` conditions
 * against them (a user without segments qualifies for none). With `"odp": {"disabled": true}` fetching,
 * identify and ODP events answer EXP_ERR_ODP_NOT_ENABLED; reading and writing a user's segments and
 * the VUID keep working. Fetch results are cached per user (LRU, options odp.segments_cache_size,
 * default 100, 0 disables; odp.segments_cache_timeout_s, default 600, 0 never expires).
 */

/* Bits of the `options` argument of the segment fetches. */
typedef enum exp_segment_option {
    EXP_SEGMENT_IGNORE_CACHE = 1,   /* neither read nor write the segments cache for this fetch */
    EXP_SEGMENT_RESET_CACHE = 2     /* empty the whole segments cache, then fetch */
} exp_segment_option;

/*
 * Fetches the segments (of those the datafile's audiences use) that `user_id` qualifies for, from the
 * cache or with one GraphQL request to `<host>/v3/graphql`, and makes them the user's segments for
 * decisions; a fetch that fails with EXP_ERR_INVALID_USER_ID or EXP_ERR_FETCH_FAILED leaves the user with no
 * segments, as the reference's user context does. A user id starting with "vuid_" is sent as an anonymous
 * visitor id. The first ODP call for
 * a user also queues an identify event (see exp_identify_user). Blocks up to odp.fetch_timeout_ms
 * (default 10000). *out_segments_json (may be NULL) receives the segments as a JSON array of strings;
 * free it with exp_free(). A project whose audiences use no segment answers [] without a request.
 * Errors: EXP_ERR_ODP_NOT_ENABLED (disabled), EXP_ERR_INVALID_USER_ID (ODP does not know or accept the
 * identifier, or it is empty), EXP_ERR_FETCH_FAILED (network error, timeout, HTTP error status, malformed
 * answer, no ODP host/key configured), EXP_ERR_NOT_READY, EXP_ERR_CLOSED, EXP_ERR_INVALID_ARGUMENT
 * (NULL client/user_id, unknown option bits). Thread-safe.
 *
 *     char *segments = NULL;
 *     exp_status st = exp_fetch_qualified_segments(c, "user123", 0, &segments);
 *     if (st == EXP_OK) { printf("qualified for %s\n", segments); exp_free(segments); }  // ["has_email"]
 *     else if (st == EXP_ERR_INVALID_USER_ID) puts("user not known to ODP yet");
 *     else printf("segments unavailable: %s\n", exp_last_error());
 */
exp_status exp_fetch_qualified_segments(exp_client *client, const char *user_id, unsigned options,
                                        char **out_segments_json);

/* Receives the outcome of exp_fetch_qualified_segments_async: `status` (EXP_OK or an error code as the
   synchronous call returns), `segments_json` (a JSON array; NULL on error) and `message` ("" on success),
   both borrowed for the call, and the `user_data` given. Runs on the library's ODP thread: it may call
   into the client but must not free it. */
typedef void (*exp_segments_fn)(exp_status status, const char *segments_json, const char *message,
                                void *user_data);

/*
 * As exp_fetch_qualified_segments, without blocking: the fetch runs on a library thread (one at a time,
 * in call order) and `callback` is called exactly once when this function returns EXP_OK — with
 * EXP_ERR_CLOSED if the client closes first. Errors returned directly (callback then never called):
 * EXP_ERR_ODP_NOT_ENABLED, EXP_ERR_NOT_READY, EXP_ERR_CLOSED, EXP_ERR_INVALID_ARGUMENT (NULL callback).
 * Thread-safe.
 *
 *     static void on_segments(exp_status status, const char *segments, const char *message, void *user_data) {
 *         (void)user_data;
 *         if (status == EXP_OK) printf("segments: %s\n", segments); else printf("failed: %s\n", message);
 *     }
 *     exp_fetch_qualified_segments_async(c, "user123", EXP_SEGMENT_IGNORE_CACHE, on_segments, NULL);
 */
exp_status exp_fetch_qualified_segments_async(exp_client *client, const char *user_id, unsigned options,
                                              exp_segments_fn callback, void *user_data);

/* Writes 1 to *out_qualified when `segment` is among the user's qualified segments (fetched or set),
 * else 0. Errors: EXP_ERR_INVALID_ARGUMENT (NULLs), EXP_ERR_CLOSED. Thread-safe.
 *     int yes; exp_is_qualified_for(c, "user123", "has_email", &yes); */
exp_status exp_is_qualified_for(exp_client *client, const char *user_id, const char *segment, int *out_qualified);

/* The user's qualified segments as a JSON array, or "null" when none were fetched or set. Free
 * *out_json with exp_free(). Errors: EXP_ERR_INVALID_ARGUMENT (NULLs), EXP_ERR_CLOSED. Thread-safe.
 *     char *json; exp_get_qualified_segments_json(c, "user123", &json); puts(json); exp_free(json); */
exp_status exp_get_qualified_segments_json(exp_client *client, const char *user_id, char **out_json);

/* Replaces the user's qualified segments, bypassing ODP (testing, or your own segment service):
 * `segments_json` is a JSON array of strings; NULL or "null" forgets them. Kept per user id in memory
 * (bounded by user_store_capacity, least recently used dropped first). Errors: EXP_ERR_INVALID_JSON,
 * EXP_ERR_INVALID_ARGUMENT (not an array of strings), EXP_ERR_CLOSED. Thread-safe.
 *     exp_set_qualified_segments_json(c, "user123", "[\"has_email\"]"); */
exp_status exp_set_qualified_segments_json(exp_client *client, const char *user_id, const char *segments_json);

/* Queues an identify event linking `user_id` to this state directory's VUID ({"fs_user_id", "vuid"}),
 * once per user and client; a VUID user id alone links nothing and sends nothing. Errors:
 * EXP_ERR_ODP_NOT_ENABLED (disabled, or no ODP host/key), EXP_ERR_CLOSED, EXP_ERR_INVALID_ARGUMENT.
 * Thread-safe.   exp_identify_user(c, "user123"); */
exp_status exp_identify_user(exp_client *client, const char *user_id);

/*
 * Queues an ODP event {"type", "action", "identifiers", "data"} for `<host>/v3/events`. `type` may be
 * NULL or "" ("fullstack"); `identifiers_json` is a non-empty JSON object of strings ("fs-user-id" /
 * "FS_USER_ID" are renamed "fs_user_id"); `data_json` (may be NULL) a JSON object of strings, numbers,
 * booleans or null, added after the common fields (idempotence_id, data_source_type, data_source,
 * data_source_version). Events are kept in the state file until ODP accepts them and survive restarts.
 * They are sent in batches of odp.event_batch_size (default 10), at least every
 * odp.event_flush_interval_ms (default 1000), with backoff while ODP is unreachable or answers 5xx; a 4xx
 * answer drops the batch. exp_client_close waits up to close_timeout_ms for them; the rest wait for the
 * next client on the same state_dir. Errors: EXP_ERR_ODP_NOT_ENABLED (disabled, or no ODP host/key),
 * EXP_ERR_INVALID_ARGUMENT (empty action, empty or non-string identifiers, nested data),
 * EXP_ERR_INVALID_JSON, EXP_ERR_QUEUE_FULL (odp.event_queue_capacity events wait, default 10000),
 * EXP_ERR_STORE, EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_send_odp_event(c, NULL, "purchased", "{\"fs_user_id\": \"user123\"}", "{\"amount\": 9.5}");
 */
exp_status exp_send_odp_event(exp_client *client, const char *type, const char *action,
                              const char *identifiers_json, const char *data_json);

/* Sends the queued ODP events now and waits until the queue is empty. Errors: EXP_ERR_TIMEOUT (events
 * remain after timeout_ms; they stay queued), EXP_ERR_CLOSED, EXP_ERR_INVALID_ARGUMENT. Thread-safe.
 *     exp_flush_odp_events(c, 5000); */
exp_status exp_flush_odp_events(exp_client *client, int64_t timeout_ms);

/* The visitor id (VUID) of the client's state directory, for anonymous users: "vuid_" and 27 hex
 * digits, created on first use and kept in the state file, so every client on that state_dir gets the
 * same one. Works with ODP disabled. Free *out_vuid with exp_free(). Errors: EXP_ERR_INVALID_ARGUMENT,
 * EXP_ERR_CLOSED. Thread-safe.
 *     char *vuid; exp_get_vuid(c, &vuid); exp_decide(c, vuid, "flag", NULL, 0, 0, &d); ... exp_free(vuid); */
exp_status exp_get_vuid(exp_client *client, char **out_vuid);

/* ---------------------------------------------------------------------------------------------- */
/* Sticky bucketing (user profiles) and Sigma forced memberships                                   */
/* ---------------------------------------------------------------------------------------------- */

/*
 * The option "profile_store" picks where sticky assignments live: "sqlite" (default: table `profiles` in
 * <state_dir>/state.sqlite), "none", {"redis": {"url": "redis://host:port/db", "prefix": "exp:profile:",
 * "ttl_s": 0, "timeout_ms": 200}}, or "callbacks" (none until exp_client_set_profile_store). A profile is
 * the JSON text {"user_id": "...", "experiment_bucket_map": {"<experiment id>": {"variation_id": "..."}}}.
 * With Redis and ttl_s > 0 a profile expires ttl_s seconds after the user was last seen (every lookup
 * refreshes the expiry; on servers before Redis 6.2, which lack GETEX, ttl_s counts from the last save).
 * Experiments (feature tests, get_variation, activate, trigger_experiment) return a saved variation that
 * the experiment still has; otherwise they bucket and save. EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE skips
 * both. A store that fails never fails a decision: it is logged, counted (exp_client_profile_stats) and the
 * user is bucketed as if without a profile.
 */

/* Handed to an exp_profile_lookup_fn for its answer; valid only during that call. */
typedef struct exp_profile_reply exp_profile_reply;

/*
 * Looks up the profile of `user_id` (borrowed for the call). Found: hand the profile JSON to
 * exp_profile_reply_set(reply, ...) and return 0. Not found: return 0 without setting it. Failure: return
 * nonzero (the decision goes on without sticky bucketing). Called on the deciding thread, at most once per
 * decide/decide_all call and only when the user reaches an experiment; must not free the client.
 */
typedef int (*exp_profile_lookup_fn)(const char *user_id, exp_profile_reply *reply, void *user_data);

/* Saves `profile_json` (the whole profile of `user_id`; both borrowed for the call). Return 0 on success,
 * nonzero on failure (logged and counted). Called on the deciding thread after the decision. */
typedef int (*exp_profile_save_fn)(const char *user_id, const char *profile_json, void *user_data);

/*
 * Installs the host's profile store (lookup and save, with `user_data` for both), replacing the store the
 * options chose; NULL lookup and save removes sticky bucketing. The callbacks may run on many threads at
 * once. A bounded in-memory cache sits in front, so lookup is not called again for a user whose profile
 * was recently looked up or saved by this client (unless the client option "profile_cache" is false).
 * Errors: EXP_ERR_INVALID_ARGUMENT (NULL client, only one of the two callbacks), EXP_ERR_CLOSED. Thread-safe.
 *
 *     static int my_lookup(const char *user, exp_profile_reply *reply, void *db) {
 *         const char *json = my_db_get(db, user);          // NULL when the user has no profile
 *         return json ? (int)exp_profile_reply_set(reply, json, strlen(json)) : 0;
 *     }
 *     static int my_save(const char *user, const char *json, void *db) { return my_db_put(db, user, json); }
 *     exp_client_set_profile_store(c, my_lookup, my_save, db);
 */
exp_status exp_client_set_profile_store(exp_client *client, exp_profile_lookup_fn lookup,
                                        exp_profile_save_fn save, void *user_data);

/* From inside an exp_profile_lookup_fn: the found profile's JSON in `json[0..length)` (copied; need not be
 * NUL-terminated). Errors: EXP_ERR_INVALID_ARGUMENT (NULL reply or json), EXP_ERR_TOO_LARGE (over 1 MiB).
 * A document that is not a profile is reported when the library reads it (a counted store error).
 * Call it only on the thread running the lookup, with the `reply` it was given; the reply is invalid once
 * the lookup returns. Example: exp_client_set_profile_store. */
exp_status exp_profile_reply_set(exp_profile_reply *reply, const char *json, size_t length);

/* From inside an exp_profile_lookup_fn: the user id the lookup is for, whole (*out_id, NUL-terminated, valid
 * until the lookup returns; *out_length its byte length): unlike the lookup's `user_id` argument it keeps a
 * NUL byte the id may hold (a user id given to an _n call). Errors: EXP_ERR_INVALID_ARGUMENT (NULLs). */
exp_status exp_profile_reply_user_id(exp_profile_reply *reply, const char **out_id, size_t *out_length);

/*
 * The profile store's counters as a JSON object: {"store": "sqlite"|"redis"|"callbacks"|"none",
 * "lookups", "cache_hits", "saves", "errors", "cached", "override_errors", "overrides_cached"}
 * (overrides_cached: users whose forced state is held in memory now; override_errors: forced variations
 * and memberships whose write to the state file failed; they hold in memory only). Free *out_json with exp_free().
 * Errors: EXP_ERR_INVALID_ARGUMENT, EXP_ERR_CLOSED. Thread-safe.
 *
 *     char *stats = NULL;
 *     if (exp_client_profile_stats(c, &stats) == EXP_OK) { puts(stats); exp_free(stats); }
 */
exp_status exp_client_profile_stats(exp_client *client, char **out_json);

/*
 * Sigma forced memberships, kept in the state file (they survive restarts; in memory only when the state
 * directory cannot be used). They win over the datafile's forced lists, set_forced_variation, audiences,
 * groups and traffic allocation. Experiments are named by id. While the client has a datafile, an unknown
 * experiment id is EXP_ERR_UNKNOWN_EXPERIMENT and a group index the experiment lacks EXP_ERR_UNKNOWN_VARIATION.
 *
 * exp_force_include: the user is in the experiment: in the variation at position `group_index` (0-based, in
 * the datafile's order), or with group_index -1 in the variation bucketing picks (scaled over the
 * allocated traffic, so users outside the traffic get a variation too).
 * exp_force_exclude: the user is kept out of the experiment (decisions fall through to the next rule).
 * exp_force_exclude_all: the user is kept out of every experiment without its own include.
 * exp_force_clear: removes the user's membership for `experiment_id`, or every membership (including
 * exclude-all) when experiment_id is NULL.
 * Errors: argument errors, EXP_ERR_CLOSED, EXP_ERR_UNKNOWN_EXPERIMENT, EXP_ERR_UNKNOWN_VARIATION. Thread-safe.
 *
 *     exp_force_include(c, "qa-user", "1001", 1);      // QA sees the experiment's second variation
 *     exp_force_exclude_all(c, "ceo");                 // never experiment on this user
 *     exp_force_clear(c, "qa-user", NULL);
 */
exp_status exp_force_include(exp_client *client, const char *user_id, const char *experiment_id, int group_index);
exp_status exp_force_exclude(exp_client *client, const char *user_id, const char *experiment_id);
exp_status exp_force_exclude_all(exp_client *client, const char *user_id);
exp_status exp_force_clear(exp_client *client, const char *user_id, const char *experiment_id);

/*
 * The same forced memberships with the experiment named by key, as Sigma's includeForce(experimentName:,
 * groupIndex:) / excludeForce(experimentName:) do. The key is resolved to the experiment's id in the current
 * datafile and the membership is kept by that id, exactly as exp_force_include / exp_force_exclude /
 * exp_force_clear with that id (so it holds when a later datafile renames the experiment; the id-based calls
 * read and clear it). Needs a datafile. Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_EXPERIMENT (no
 * experiment with that key; delivery rules are not experiments), EXP_ERR_UNKNOWN_VARIATION (group_index
 * past the experiment's variations), argument errors (group_index below -1), EXP_ERR_CLOSED. Thread-safe.
 *
 *     exp_force_include_key(c, "qa-user", "checkout_test", 1);   // QA sees the second variation
 *     exp_force_exclude_key(c, "ceo", "checkout_test");
 *     exp_force_clear_key(c, "qa-user", "checkout_test");
 */
exp_status exp_force_include_key(exp_client *client, const char *user_id, const char *experiment_key,
                                 int group_index);
exp_status exp_force_exclude_key(exp_client *client, const char *user_id, const char *experiment_key);
exp_status exp_force_clear_key(exp_client *client, const char *user_id, const char *experiment_key);

/* ---------------------------------------------------------------------------------------------- */
/* User contexts (Optimizely's OptimizelyUserContext)                                              */
/* ---------------------------------------------------------------------------------------------- */

/*
 * A user context: one user id with its own attributes, forced decisions and qualified segments, made from
 * a client. This is how Optimizely code decides:
 *
 *     exp_attribute attrs[] = {exp_attr_string("country", "NL")};
 *     exp_user *user = NULL;
 *     if (exp_user_create(c, EXP_STR("user-1"), attrs, 1, &user) == EXP_OK) {
 *         exp_decision d = {0};
 *         if (exp_user_decide(user, EXP_STR("free_shipping"), 0, &d) == EXP_OK && d.enabled) { ... }
 *         exp_decision_release(&d);
 *         exp_user_track(user, EXP_STR("purchase"), "{\"revenue\": 4200}");
 *     }
 *     exp_user_free(user);
 *
 * Strings: every id, key and segment comes as a pointer and a byte length; it need not be NUL-terminated
 * and may contain NUL bytes. It must be valid UTF-8 (EXP_ERR_INVALID_UTF8) of at most EXP_MAX_KEY_BYTES
 * (EXP_ERR_TOO_LARGE). EXP_STR(s) expands to `s, strlen(s)` for NUL-terminated strings.
 *
 * What belongs to the context: its attributes (validated and copied once, at creation and by
 * exp_user_set_attribute), its forced decisions (exp_user_set_forced_decision: two contexts of the same user
 * id never see each other's; the id-keyed exp_set_forced_decision store of the client is not read by
 * contexts) and its qualified segments. What the client keeps per user id applies to contexts as to the
 * id-based calls: forced variations (exp_set_forced_variation), forced memberships (exp_force_*), sticky
 * bucketing, and stored user properties (exp_set_user_property; the context's attributes win).
 *
 * Ownership: the context keeps its client alive (not open: once the client is closed, calls that need it
 * fail with EXP_ERR_CLOSED); free it with exp_user_free(). Thread-safety: a context may be used from any
 * number of threads at once; every change is atomic, and a decision reads the state it started with.
 * Deciding through a context costs what exp_decide costs (allocation-free unless reasons are requested).
 */
typedef struct exp_user exp_user;

#define EXP_STR(s) (s), strlen(s)

/*
 * Creates a context for `user_id[0..user_id_length)` with `attributes[0..attribute_count)` (NULL with
 * count 0 for none; a key given twice keeps its last value). Errors: EXP_ERR_INVALID_ARGUMENT (NULL
 * client / user_id / out_user, bad attribute), EXP_ERR_INVALID_UTF8, EXP_ERR_TOO_LARGE, EXP_ERR_CLOSED.
 * *out_user is NULL on error. The client need not be ready. Example: see above.
 */
exp_status exp_user_create(exp_client *client, const char *user_id, size_t user_id_length,
                           const exp_attribute *attributes, size_t attribute_count, exp_user **out_user);
/* exp_user_create with exp_attribute_n attributes: keys and string values given with their byte lengths, so
 * they may hold NUL bytes (as exp_decide_n's). Otherwise exactly exp_user_create. */
exp_status exp_user_create_n(exp_client *client, const char *user_id, size_t user_id_length,
                             const exp_attribute_n *attributes, size_t attribute_count, exp_user **out_user);

/* Releases a context (NULL is a no-op). Never fails; no other call on it may run or follow. */
void exp_user_free(exp_user *user);

/* A new, independent context with the same user id, attributes, forced decisions and segments: changes to
 * either one later do not reach the other. Free it with exp_user_free(). Errors: EXP_ERR_INVALID_ARGUMENT.
 *     exp_user *copy = NULL; exp_user_clone(user, &copy); */
exp_status exp_user_clone(exp_user *user, exp_user **out_user);

/* The context's user id: *out_id points into the context (valid until exp_user_free, not NUL-terminated
 * when the id holds a NUL), *out_length (may be NULL) its byte length. Errors: EXP_ERR_INVALID_ARGUMENT. */
exp_status exp_user_id(exp_user *user, const char **out_id, size_t *out_length);

/* Sets attribute `key` to `*value` (copied; a string value is NUL-terminated, at most EXP_MAX_STRING_BYTES),
 * or removes it. Errors: EXP_ERR_INVALID_ARGUMENT (NULLs, bad value type), EXP_ERR_INVALID_UTF8,
 * EXP_ERR_TOO_LARGE. Thread-safe.
 *     exp_value plan = {EXP_VALUE_STRING, 0, 0, 0.0, "premium"};
 *     exp_user_set_attribute(user, EXP_STR("plan"), &plan);
 *     exp_user_remove_attribute(user, EXP_STR("plan")); */
exp_status exp_user_set_attribute(exp_user *user, const char *key, size_t key_length, const exp_value *value);
/* exp_user_set_attribute for one exp_attribute_n (key and string value with their byte lengths, NUL allowed). */
exp_status exp_user_set_attribute_n(exp_user *user, const exp_attribute_n *attribute);
exp_status exp_user_remove_attribute(exp_user *user, const char *key, size_t key_length);

/* The context's attributes as a JSON object, in the order first set. Free *out_json with exp_free(). */
exp_status exp_user_attributes_json(exp_user *user, char **out_json);

/*
 * Decides `flag_key` for the context, as exp_decide does for a user id (same result struct, events,
 * options, reasons; release with exp_decision_release). Errors: EXP_ERR_NOT_READY, EXP_ERR_UNKNOWN_FLAG,
 * EXP_ERR_CLOSED, argument errors. Thread-safe; allocation-free unless reasons are requested.
 *     exp_decision d = {0};
 *     exp_user_decide(user, EXP_STR("free_shipping"), EXP_DECIDE_INCLUDE_REASONS, &d);
 *     exp_decision_release(&d);
 */
exp_status exp_user_decide(exp_user *user, const char *flag_key, size_t flag_key_length, unsigned options,
                           exp_decision *out);

/* Every flag, as exp_decide_all (capacity, EXP_ERR_BUFFER_TOO_SMALL and release alike).
 *     size_t cap = 0, n = 0; exp_flag_count(c, &cap);
 *     exp_decision *ds = calloc(cap, sizeof *ds);
 *     if (exp_user_decide_all(user, 0, ds, cap, &n) == EXP_OK) { ... }
 *     exp_decisions_release(ds, n); free(ds); */
exp_status exp_user_decide_all(exp_user *user, unsigned options, exp_decision *out, size_t capacity,
                               size_t *out_count);

/* The flags keys[i][0..key_lengths[i]) for i < key_count, as exp_decide_for_keys (an unknown key's decision
 * has flag_key a NUL-terminated copy of the caller's key, valid until the decision is released; read it
 * with exp_decision_text_n when the key may hold NUL bytes).
 *     const char *keys[] = {"free_shipping", "dark_mode"}; size_t lens[] = {13, 9};
 *     exp_decision ds[2] = {{0}}; size_t n = 0;
 *     exp_user_decide_for_keys(user, keys, lens, 2, 0, ds, 2, &n); exp_decisions_release(ds, n); */
exp_status exp_user_decide_for_keys(exp_user *user, const char *const *keys, const size_t *key_lengths,
                                    size_t key_count, unsigned options, exp_decision *out, size_t capacity,
                                    size_t *out_count);

/* Records conversion `event_key` for the context's user with its attributes, as exp_track (tags_json NULL
 * or a JSON object of event tags; same errors).   exp_user_track(user, EXP_STR("purchase"), NULL); */
exp_status exp_user_track(exp_user *user, const char *event_key, size_t event_key_length, const char *tags_json);

/*
 * Forced decisions of the context: for flag `flag_key` and rule `rule_key` (NULL: the flag as a whole)
 * the context gets variation `variation_key` (a key the flag does not have is ignored at decide time with
 * a reason, as in the reference). get: *out_variation_key receives a copy to exp_free(), or NULL when none.
 * remove: *out_removed (may be NULL) receives 1 when there was one, else 0. Errors: argument errors,
 * EXP_ERR_CLOSED. Thread-safe.
 *     exp_user_set_forced_decision(user, EXP_STR("free_shipping"), NULL, 0, EXP_STR("on"));
 *     exp_user_set_forced_decision(user, EXP_STR("free_shipping"), EXP_STR("ab_rule"), EXP_STR("off"));
 *     char *v = NULL; exp_user_get_forced_decision(user, EXP_STR("free_shipping"), NULL, 0, &v); exp_free(v);
 *     int removed = 0; exp_user_remove_forced_decision(user, EXP_STR("free_shipping"), NULL, 0, &removed);
 */
exp_status exp_user_set_forced_decision(exp_user *user, const char *flag_key, size_t flag_key_length,
                                        const char *rule_key, size_t rule_key_length,
                                        const char *variation_key, size_t variation_key_length);
exp_status exp_user_get_forced_decision(exp_user *user, const char *flag_key, size_t flag_key_length,
                                        const char *rule_key, size_t rule_key_length, char **out_variation_key);
/* exp_user_get_forced_decision that also gives the variation key's length in bytes (a key set with
 * exp_user_set_forced_decision may contain NUL bytes; 0 when *out_variation_key is NULL; the length pointer may
 * be NULL). Everything else as exp_user_get_forced_decision.
 *     char *v = NULL; size_t n = 0;
 *     exp_user_get_forced_decision_len(user, EXP_STR("free_shipping"), NULL, 0, &v, &n); exp_free(v); */
exp_status exp_user_get_forced_decision_len(exp_user *user, const char *flag_key, size_t flag_key_length,
                                            const char *rule_key, size_t rule_key_length, char **out_variation_key,
                                            size_t *out_variation_key_length);
exp_status exp_user_remove_forced_decision(exp_user *user, const char *flag_key, size_t flag_key_length,
                                           const char *rule_key, size_t rule_key_length, int *out_removed);
exp_status exp_user_remove_all_forced_decisions(exp_user *user);

/*
 * Qualified segments of the context (see "Real-time segments"). fetch: fetches them from ODP (cache first,
 * EXP_SEGMENT_* options) into the context and writes them as a JSON array to *out_json (may be NULL; else
 * free with exp_free); a failed fetch leaves the context with none. get: a JSON array, or "null" when never
 * fetched or set. set: a JSON array of strings, or "null" to forget them. is_qualified_for: 1 or 0.
 * Errors: as exp_fetch_qualified_segments; EXP_ERR_INVALID_JSON; argument errors. Thread-safe.
 *     exp_user_set_qualified_segments_json(user, "[\"vip\"]");
 *     int q = 0; exp_user_is_qualified_for(user, EXP_STR("vip"), &q);
 */
exp_status exp_user_fetch_qualified_segments(exp_user *user, unsigned options, char **out_json);
exp_status exp_user_is_qualified_for(exp_user *user, const char *segment, size_t segment_length, int *out_qualified);
exp_status exp_user_get_qualified_segments_json(exp_user *user, char **out_json);
exp_status exp_user_set_qualified_segments_json(exp_user *user, const char *segments_json);

/* ---------------------------------------------------------------------------------------------- */
/* Stored profiles (sticky bucketing), by user id                                                  */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Reads the stored sticky-bucketing profile of `user_id[0..user_id_length)` from the client's profile store
 * (SQLite, Redis or the host's callbacks), from the store itself, not the in-memory cache: *out_json receives
 * {"user_id": "...", "experiment_bucket_map": {"<experiment id>": {"variation_id": "..."}}} to free with
 * exp_free(), or NULL when the store has no profile for the user (EXP_OK).
 * exp_profile_delete deletes it from the store and the client's cache (the user is bucketed afresh at the
 * next decision); *out_deleted (may be NULL) receives 1 when there was one, else 0. The callbacks store
 * cannot delete (EXP_ERR_INVALID_ARGUMENT).
 * Errors: EXP_ERR_NOT_FOUND (the client has no profile store: "profile_store": "none"), EXP_ERR_STORE (the
 * store failed), argument errors (the user id as for exp_user_create), EXP_ERR_CLOSED. Thread-safe.
 *
 *     char *profile = NULL;
 *     if (exp_profile_get(c, EXP_STR("user-1"), &profile) == EXP_OK && profile) puts(profile);
 *     exp_free(profile);
 *     exp_profile_delete(c, EXP_STR("user-1"), NULL);   // e.g. a user's request to be forgotten
 */
exp_status exp_profile_get(exp_client *client, const char *user_id, size_t user_id_length, char **out_json);
exp_status exp_profile_delete(exp_client *client, const char *user_id, size_t user_id_length, int *out_deleted);

#ifdef __cplusplus
}
#endif

#endif /* EXPERIMENT_H */
