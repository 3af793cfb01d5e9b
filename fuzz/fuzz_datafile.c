/*
 * fuzz_datafile.c — libFuzzer harness: the input is a datafile (Optimizely v4 JSON, or anything else).
 *
 * Per input:
 *   1. exp_validate_datafile(data, size) and exp_client_start(client, data, size) on the raw fuzzer
 *      buffer (not NUL-terminated: under ASan any read past `size` is reported). Both must agree.
 *   2. Rejected: the status must be one exp_client_start documents, exp_last_error() must name the
 *      problem, and the client must still hold (and decide with) the demo datafile it was started with
 *      in LLVMFuzzerInitialize.
 *   3. Accepted: config JSON, exp_decide_all (and its BUFFER_TOO_SMALL contract) for two users,
 *      exp_decide_for_keys_json, get_variation / activate for the experiments and exp_track for the
 *      events the config lists, every event body checked as JSON; then the demo datafile is started
 *      again so the next input starts from the same state.
 *   4. Differential: libexperiment parses datafiles with json-c, called here the same way (depth 64,
 *      strict mode, UTF-8 checked, nothing but whitespace after the value). Whatever json-c refuses must
 *      be refused as JSON (INVALID_JSON, TOO_DEEP, INVALID_UTF8); whatever it takes must not be refused as
 *      malformed JSON when it is strict JSON (the library adds, after json-c, the refusals of Python's
 *      json: single-quoted names, numbers like "1." or "-01", raw control characters in strings; and a
 *      strict UTF-8 check: overlong forms and surrogates json-c lets through are INVALID_UTF8).
 */
#include "fuzz_common.h"

#define START_ERRORS (FZ_BIT(EXP_ERR_INVALID_JSON) | FZ_BIT(EXP_ERR_UNSUPPORTED_VERSION) | FZ_BIT(EXP_ERR_INVALID_DATAFILE) | \
                      FZ_BIT(EXP_ERR_TOO_LARGE) | FZ_BIT(EXP_ERR_TOO_DEEP) | FZ_BIT(EXP_ERR_INVALID_UTF8))
#define DECIDE_ERRORS (FZ_ARGS | FZ_BIT(EXP_ERR_NOT_READY) | FZ_BIT(EXP_ERR_UNKNOWN_FLAG))
#define EXPERIMENT_ERRORS (FZ_ARGS | FZ_BIT(EXP_ERR_NOT_READY) | FZ_BIT(EXP_ERR_UNKNOWN_EXPERIMENT))
#define TRACK_ERRORS (FZ_ARGS | FZ_JSONERR | FZ_BIT(EXP_ERR_NOT_READY) | FZ_BIT(EXP_ERR_UNKNOWN_EVENT) | FZ_BIT(EXP_ERR_INVALID_EVENT_TAGS))

static exp_client *g_client;            /* holds the demo datafile between inputs */
static char *g_demo;                    /* the demo datafile */
static size_t g_demo_len;
static char *g_demo_config;             /* exp_client_config_json of the demo datafile */
static char *g_demo_variation;          /* baseline decision of the probe below */
static int g_demo_enabled;
static fz_dispatch_state g_events = {0, 1, 0};
#define SECRET_SDK_KEY "FuzzSecretSdkKey0123456789"
static fz_log_state g_log = {0, SECRET_SDK_KEY, NULL, 0};

#define PROBE_USER "fuzz-probe-user"
#define PROBE_FLAG "checkout_redesign"
#define PROBE_OPTIONS (EXP_DECIDE_DISABLE_DECISION_EVENT | EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE)

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void start_demo(void) {
    exp_status s = FZ_STATUS("exp_client_start(demo)", exp_client_start(g_client, g_demo, g_demo_len), 0);
    (void)s;
}

/* The client must decide the probe exactly as it did with the demo datafile right after start. */
static void check_demo_still_decides(const char *after) {
    int ready = -1;
    FZ_STATUS("exp_client_is_ready", exp_client_is_ready(g_client, &ready), 0);
    FZ_CHECK(ready == 1, "client not ready after %s", after);
    exp_decision d = {0};
    FZ_STATUS("exp_decide(probe)", exp_decide(g_client, PROBE_USER, PROBE_FLAG, NULL, 0, PROBE_OPTIONS, &d), 0);
    FZ_CHECK_DECISION(&d, PROBE_OPTIONS);
    FZ_CHECK((d.variation_key == NULL) == (g_demo_variation == NULL) &&
             (d.variation_key == NULL || strcmp(d.variation_key, g_demo_variation) == 0) && d.enabled == g_demo_enabled,
             "after %s the demo config decides %s differently: %s/%d, was %s/%d", after, PROBE_FLAG,
             d.variation_key ? d.variation_key : "(null)", d.enabled, g_demo_variation ? g_demo_variation : "(null)", g_demo_enabled);
    FZ_RELEASE(&d);
    char *config = NULL;
    FZ_STATUS("exp_client_config_json", exp_client_config_json(g_client, &config), 0);
    FZ_CHECK(config && strcmp(config, g_demo_config) == 0, "after %s the config is not the demo's: %.300s", after, config ? config : "(null)");
    exp_free(config);
}

/* At exit the client is closed before anything it logs to goes: its threads stop inside close. */
static void close_client(void) {
    exp_client_close(g_client);
    exp_client_free(g_client);
    g_client = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    atexit(close_client);
    g_demo = fz_read_file(fz_demo_path(), &g_demo_len);
    FZ_STATUS("exp_client_create", exp_client_create("{\"sdk_key\": \"" SECRET_SDK_KEY "\", \"log_level\": \"debug\"}", &g_client), 0);
    FZ_STATUS("exp_client_set_event_dispatcher", exp_client_set_event_dispatcher(g_client, fz_dispatch, &g_events), 0);
    FZ_STATUS("exp_client_set_logger", exp_client_set_logger(g_client, fz_log, &g_log), 0);
    start_demo();
    FZ_STATUS("exp_client_config_json", exp_client_config_json(g_client, &g_demo_config), 0);
    FZ_CHECK_JSON("exp_client_config_json(demo)", g_demo_config, '{');
    exp_decision d = {0};
    FZ_STATUS("exp_decide(probe)", exp_decide(g_client, PROBE_USER, PROBE_FLAG, NULL, 0, PROBE_OPTIONS, &d), 0);
    g_demo_variation = dup_or_null(d.variation_key);
    g_demo_enabled = d.enabled;
    FZ_RELEASE(&d);
    return 0;
}

/* Keys listed in the config JSON (first few of one array member). */
typedef struct key_list { char *keys[8]; int count; } key_list;
static void collect_key(void *ctx, const char *value, size_t len) {
    key_list *list = ctx;
    (void)len;
    if (list->count < 8) list->keys[list->count++] = strdup(value);
}
static void free_keys(key_list *list) {
    for (int i = 0; i < list->count; i++) free(list->keys[i]);
    list->count = 0;
}

static void decide_all_for(const char *user, const exp_attribute *attrs, size_t n_attrs, unsigned options) {
    size_t cap = 0;
    FZ_STATUS("exp_flag_count", exp_flag_count(g_client, &cap), 0);
    exp_decision *ds = calloc(cap + 1, sizeof *ds);
    size_t count = 12345;
    if (cap > 0) {
        /* Too small: nothing filled, the needed capacity returned. */
        exp_status s = FZ_STATUS("exp_decide_all(small)", exp_decide_all(g_client, user, attrs, n_attrs, options, ds, cap - 1, &count),
                                 FZ_BIT(EXP_ERR_BUFFER_TOO_SMALL) | DECIDE_ERRORS);
        if (s == EXP_ERR_BUFFER_TOO_SMALL) {
            FZ_CHECK(count > cap - 1, "BUFFER_TOO_SMALL for capacity %zu but needed capacity %zu (%zu flags)", cap - 1, count, cap);
            FZ_CHECK(fz_is_zero(ds, cap * sizeof *ds), "exp_decide_all filled decisions although it returned BUFFER_TOO_SMALL");
        } else if (s == EXP_OK) {
            /* Allowed only with ENABLED_FLAGS_ONLY, when the enabled flags fit. */
            FZ_CHECK((options & EXP_DECIDE_ENABLED_FLAGS_ONLY) && count <= cap - 1,
                     "exp_decide_all succeeded with capacity %zu < %zu flags (count %zu)", cap - 1, cap, count);
            for (size_t i = 0; i < count; i++) FZ_CHECK_DECISION(&ds[i], options);
            exp_decisions_release(ds, count);
        }
    }
    count = 12345;
    exp_status s = FZ_STATUS("exp_decide_all", exp_decide_all(g_client, user, attrs, n_attrs, options, ds, cap, &count), DECIDE_ERRORS);
    if (s == EXP_OK) {
        FZ_CHECK(count <= cap, "exp_decide_all: out_count %zu > capacity %zu", count, cap);
        if (!(options & EXP_DECIDE_ENABLED_FLAGS_ONLY)) FZ_CHECK(count == cap, "exp_decide_all: %zu decisions for %zu flags", count, cap);
        for (size_t i = 0; i < count; i++) {
            FZ_CHECK_DECISION(&ds[i], options);
            if (options & EXP_DECIDE_ENABLED_FLAGS_ONLY) FZ_CHECK(ds[i].enabled, "ENABLED_FLAGS_ONLY returned a disabled flag");
        }
        /* Each decided flag decided alone must succeed too (same key, known flag) -- unless its key is
         * past EXP_MAX_KEY_BYTES, which the header says a call must refuse. */
        for (size_t i = 0; i < count && i < 4; i++) {
            exp_decision one = {0};
            int long_key = strlen(ds[i].flag_key) > EXP_MAX_KEY_BYTES;
            /* A datafile key holding "\u0000" (accepted, as the reference accepts it) comes back cut at the NUL:
             * the cut key may name no flag. */
            s = FZ_STATUS("exp_decide", exp_decide(g_client, user, ds[i].flag_key, attrs, n_attrs, options & ~EXP_DECIDE_ENABLED_FLAGS_ONLY, &one),
                          (long_key ? FZ_BIT(EXP_ERR_TOO_LARGE) : 0) | FZ_BIT(EXP_ERR_UNKNOWN_FLAG));
#ifndef FUZZ_TOLERATE_OPEN_FINDINGS
            FZ_CHECK(!long_key || s != EXP_OK, "exp_decide accepted a flag key of %zu bytes (EXP_MAX_KEY_BYTES %u) taken from the datafile",
                     strlen(ds[i].flag_key), EXP_MAX_KEY_BYTES);
#endif
            if (s == EXP_OK) FZ_CHECK_DECISION(&one, options);
            FZ_RELEASE(&one);
        }
        for (size_t i = 0; i < count; i++) FZ_RELEASE(&ds[i]);
    }
    FZ_CHECK(fz_is_zero(ds, (cap + 1) * sizeof *ds), "decisions not zero after release");
    free(ds);
}

static void exercise_accepted(void) {
    char *config = NULL;
    FZ_STATUS("exp_client_config_json", exp_client_config_json(g_client, &config), 0);
    FZ_CHECK_JSON("exp_client_config_json", config, '{');
    key_list experiments = {0}, events = {0};
    fz_json_valid_ex(config, strlen(config), "experiments", collect_key, &experiments);
    fz_json_valid_ex(config, strlen(config), "events", collect_key, &events);
    exp_free(config);

    exp_attribute attrs[] = {
        exp_attr_string("country", "NL"), exp_attr_int("age", 31), exp_attr_double("cart_value", 120.5),
        exp_attr_string("app_version", "2.4.1"), exp_attr_bool("beta_tester", 1), exp_attr_null("plan"),
        exp_attr_string("$opt_bucketing_id", "bucket-7"),
    };
    decide_all_for("user-1", NULL, 0, EXP_DECIDE_INCLUDE_REASONS);
    decide_all_for("fuzz-user-2", attrs, sizeof attrs / sizeof attrs[0], EXP_DECIDE_ENABLED_FLAGS_ONLY | EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE);

    char *json = NULL;
    exp_status s = FZ_STATUS("exp_decide_for_keys_json", exp_decide_for_keys_json(g_client, "user-1", NULL,
                             "{\"country\": \"DE\", \"age\": 17, \"beta_tester\": false}", EXP_DECIDE_INCLUDE_REASONS, &json),
                             DECIDE_ERRORS | FZ_JSONERR);
    FZ_CHECK(s == EXP_OK, "exp_decide_for_keys_json failed on an accepted datafile");
    FZ_CHECK_JSON("exp_decide_for_keys_json", json, '{');
    exp_free(json);

    for (int i = 0; i < experiments.count; i++) {
        for (int k = 0; k < 2; k++) {
            char *v = (char *)&json;  /* sentinel: must be overwritten on success */
            const char *user = k ? "fuzz-user-2" : "user-1";
            s = k ? exp_activate(g_client, experiments.keys[i], user, attrs, sizeof attrs / sizeof attrs[0], &v)
                  : exp_get_variation(g_client, experiments.keys[i], user, NULL, 0, &v);
            FZ_STATUS(k ? "exp_activate" : "exp_get_variation", s, EXPERIMENT_ERRORS);
#ifdef FUZZ_TOLERATE_OPEN_FINDINGS  /* fuzz past the findings in fuzz/regressions/fuzz_datafile/ */
            if (s == EXP_ERR_UNKNOWN_EXPERIMENT || s == EXP_ERR_TOO_LARGE) continue;
#endif
            FZ_CHECK(s == EXP_OK, "get_variation/activate failed for experiment \"%s\" listed by the config", experiments.keys[i]);
            FZ_CHECK(v != (char *)&json, "variation out-parameter not written on success");
            FZ_CHECK(fz_cstr_utf8(v), "variation key is not valid UTF-8");
            exp_free(v);
        }
    }
    for (int i = 0; i < events.count; i++) {
        s = exp_track(g_client, events.keys[i], "user-1", attrs, 2, "{\"revenue\": 4200, \"value\": \"12.5\", \"category\": \"shoes\"}");
        FZ_STATUS("exp_track", s, TRACK_ERRORS);
#ifdef FUZZ_TOLERATE_OPEN_FINDINGS
        if (s == EXP_ERR_TOO_LARGE) continue;
#endif
        FZ_CHECK(s == EXP_OK, "exp_track failed for event \"%s\" listed by the config", events.keys[i]);
    }
    free_keys(&experiments);
    free_keys(&events);
}

#define JSON_ERRORS (FZ_BIT(EXP_ERR_INVALID_JSON) | FZ_BIT(EXP_ERR_TOO_DEEP) | FZ_BIT(EXP_ERR_INVALID_UTF8) | FZ_BIT(EXP_ERR_TOO_LARGE))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    fz_log_set_input(&g_log, text, size);
    exp_status v = FZ_STATUS("exp_validate_datafile", exp_validate_datafile(text, size), START_ERRORS);
    exp_status s = FZ_STATUS("exp_client_start", exp_client_start(g_client, text, size), START_ERRORS);
    FZ_CHECK(v == s, "exp_validate_datafile said %s but exp_client_start said %s", fz_status_name(v), fz_status_name(s));
    if (size > 0 && size < (1u << 30)) {
        if (!fz_json_c_accepts(text, size))
            FZ_CHECK(s != EXP_OK && (JSON_ERRORS & FZ_BIT(s)), "json-c refuses this datafile as JSON but exp_client_start said %s",
                     fz_status_name(s));
        else if (s == EXP_ERR_INVALID_JSON || s == EXP_ERR_TOO_DEEP)
            /* The library refuses on top of json-c only what Python's json refuses too (strict RFC 8259
             * tokens; NaN and Infinity stay numbers, as json-c and Python read them). */
            FZ_CHECK(!fz_json_valid_ex(text, size, NULL, NULL, NULL) || s == EXP_ERR_TOO_DEEP,
                     "json-c takes this strict JSON datafile but exp_client_start refused it as JSON (%s)", fz_status_name(s));
    }
    if (fz_json_depth(text, size) > EXP_MAX_JSON_DEPTH && s == EXP_OK)
        FZ_CHECK(0, "a datafile nesting %u levels (limit %u) was accepted", fz_json_depth(text, size), EXP_MAX_JSON_DEPTH);
    if (s != EXP_OK) {
        check_demo_still_decides("a rejected datafile");
    } else {
        exercise_accepted();
        start_demo();
        check_demo_still_decides("restarting with the demo datafile");
    }
    fz_log_set_input(&g_log, NULL, 0);   /* libFuzzer frees `data` after this returns */
    return 0;
}
