/*
 * fuzz_inputs.c — libFuzzer harness for every per-call text input, on a client started with
 * examples/datafiles/demo.json.
 *
 * Input layout: one control byte, then fields separated by NUL bytes (fields are C strings for the API,
 * so a NUL can never be part of one; nothing is lost by splitting on it):
 *
 *   control  bits 0-4: EXP_DECIDE_* options; bit 5: pass an undefined option bit once;
 *            bit 6: attributes/tags JSON NULL instead of absent-field defaults; bit 7: typed attributes
 *   f0 user id          f1 flag key          f2 attributes JSON     f3 event key     f4 event tags JSON
 *   f5 property key     f6 property value JSON                     f7 decide option names JSON
 *   f8 flag keys JSON   f9 experiment key/id f10 variation key      f11 rule key
 *   f12 "<log level>[,<dispatcher result>]", e.g. "4,1": exp_client_set_log_level, and a dispatcher that
 *       reports failure (both reset after the input)
 *
 * f5/f6/f2/f4 also feed the real-time segments calls (segment name, segments list, ODP identifiers/data).
 * Missing fields take valid demo values, so short inputs reach deep paths. Arbitrary bytes in ids and
 * keys must give EXP_ERR_INVALID_UTF8 (never a crash); keys past EXP_MAX_KEY_BYTES must be refused.
 * Per-user state the calls create (properties, forced variations/decisions) is removed afterwards so
 * inputs do not influence each other.
 */
#include "fuzz_common.h"

#define NFIELDS 13
#define DECIDE_ERRORS (FZ_ARGS | FZ_BIT(EXP_ERR_NOT_READY) | FZ_BIT(EXP_ERR_UNKNOWN_FLAG))
#define EXPERIMENT_ERRORS (FZ_ARGS | FZ_BIT(EXP_ERR_NOT_READY) | FZ_BIT(EXP_ERR_UNKNOWN_EXPERIMENT))
#define TRIGGER_ERRORS (EXPERIMENT_ERRORS | FZ_BIT(EXP_ERR_NOT_TARGETED) | FZ_BIT(EXP_ERR_NOT_ALLOCATED))
#define FORCED_ERRORS (EXPERIMENT_ERRORS | FZ_BIT(EXP_ERR_UNKNOWN_VARIATION))
#define TRACK_ERRORS (FZ_ARGS | FZ_JSONERR | FZ_BIT(EXP_ERR_NOT_READY) | FZ_BIT(EXP_ERR_UNKNOWN_EVENT) | FZ_BIT(EXP_ERR_INVALID_EVENT_TAGS))
#define PARSE_ERRORS (FZ_BIT(EXP_ERR_INVALID_ARGUMENT) | FZ_JSONERR | FZ_BIT(EXP_ERR_INVALID_OPTION))
#define PROPERTY_ERRORS (FZ_ARGS | FZ_JSONERR)
#define SIGMA_ERRORS (DECIDE_ERRORS | FZ_BIT(EXP_ERR_TYPE_MISMATCH) | FZ_BIT(EXP_ERR_NOT_FOUND))

static exp_client *g_client;
static fz_dispatch_state g_events = {0, 0, 0};
static fz_log_state g_log = {0, NULL, NULL, 0};

static const char *const k_defaults[NFIELDS] = {
    "user-1", "checkout_redesign", "{\"country\": \"NL\", \"age\": 31}", "purchase", "{\"revenue\": 4200}",
    "plan", "\"premium\"", "[\"INCLUDE_REASONS\"]", "[\"free_shipping\", \"dark_mode\", \"nope\"]",
    "checkout_redesign_ab", NULL, NULL, NULL,
};

/* At exit the client is closed before anything it logs to goes: its threads stop inside close. */
static void close_client(void) {
    exp_client_close(g_client);
    exp_client_free(g_client);
    g_client = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    atexit(close_client);
    size_t len = 0;
    char *demo = fz_read_file(fz_demo_path(), &len);
    FZ_STATUS("exp_client_create", exp_client_create(NULL, &g_client), 0);
    FZ_STATUS("exp_client_set_event_dispatcher", exp_client_set_event_dispatcher(g_client, fz_dispatch, &g_events), 0);
    FZ_STATUS("exp_client_set_logger", exp_client_set_logger(g_client, fz_log, &g_log), 0);
    FZ_STATUS("exp_client_start", exp_client_start(g_client, demo, len), 0);
    free(demo);
    return 0;
}

/* A text argument's facts as the library must judge them. */
static int valid_key(const char *s) { return s == NULL || (strlen(s) <= EXP_MAX_KEY_BYTES && fz_cstr_utf8(s)); }
static int bad_utf8_only(const char *s) { return s && strlen(s) <= EXP_MAX_KEY_BYTES && !fz_cstr_utf8(s); }
static int too_long(const char *s) { return s && strlen(s) > EXP_MAX_KEY_BYTES; }

/* For calls whose only text arguments are ids/keys (no JSON): if one is invalid UTF-8 (and none is too
 * long) the call must fail with EXP_ERR_INVALID_UTF8; if one is too long it must fail; if the call says
 * INVALID_UTF8 one of them must really be invalid. */
static void check_keys_at(int line, const char *call, exp_status s, const char *a, const char *b, const char *c,
                          const char *d) {
    int bad = bad_utf8_only(a) || bad_utf8_only(b) || bad_utf8_only(c) || bad_utf8_only(d);
    int longk = too_long(a) || too_long(b) || too_long(c) || too_long(d);
    if (longk && s == EXP_OK) fz_fail(__FILE__, line, "%s accepted a key longer than %u bytes", call, EXP_MAX_KEY_BYTES);
    if (bad && !longk && s != EXP_ERR_INVALID_UTF8)
        fz_fail(__FILE__, line, "%s: an id/key is not valid UTF-8 but the status is %s", call, fz_status_name(s));
    if (s == EXP_ERR_INVALID_UTF8 && !bad)
        fz_fail(__FILE__, line, "%s: EXP_ERR_INVALID_UTF8 although every id/key is valid UTF-8", call);
}
#define CHECK_KEYS(call, s, a, b, c) check_keys_at(__LINE__, call, s, a, b, c, NULL)
#define CHECK_KEYS4(call, s, a, b, c, d) check_keys_at(__LINE__, call, s, a, b, c, d)

/* A JSON text argument: deeper than the limit or invalid UTF-8 must not be accepted. */
static void check_json_arg_at(int line, const char *call, exp_status s, const char *json) {
    if (!json || s != EXP_OK) return;
    size_t n = strlen(json);
    if (fz_json_depth(json, n) > EXP_MAX_JSON_DEPTH) fz_fail(__FILE__, line, "%s accepted JSON nesting %u levels", call, fz_json_depth(json, n));
    if (!fz_utf8_valid((const unsigned char *)json, n)) fz_fail(__FILE__, line, "%s accepted JSON text that is not valid UTF-8", call);
    if (!fz_json_c_accepts(json, n)) fz_fail(__FILE__, line, "%s accepted text that json-c refuses: %.300s", call, json);
}
#define CHECK_JSON_ARG(call, s, json) check_json_arg_at(__LINE__, call, s, json)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    unsigned control = data[0];
    unsigned options = control & 0x1F;
    /* Fields: a NUL-terminated copy of the rest, split on NUL. */
    char *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    const char *f[NFIELDS];
    int present = 0;
    for (char *p = buf, *end = buf + size - 1; present < NFIELDS && p <= end; ) {
        f[present++] = p;
        p += strlen(p) + 1;
        if (p > end) break;
    }
    for (int i = present; i < NFIELDS; i++) f[i] = (control & 0x40) && (i == 2 || i == 4) ? NULL : k_defaults[i];
    if (present == 1 && size == 1) f[0] = k_defaults[0];

    const char *user = f[0], *flag = f[1], *attrs_json = f[2], *event = f[3], *tags = f[4];
    const char *pkey = f[5], *pvalue = f[6], *opt_names = f[7], *keys_json = f[8];
    const char *experiment = f[9], *variation = f[10], *rule = f[11];
    exp_status s;
    char *out = NULL;

    /* f12: log level and dispatcher result. */
    if (f[12]) {
        char *end = NULL;
        long parsed_level = strtol(f[12], &end, 10);
        int level = (parsed_level < -1000 || parsed_level > 1000) ? 1000 : (int)parsed_level;
        s = FZ_STATUS("exp_client_set_log_level", exp_client_set_log_level(g_client, level), FZ_BIT(EXP_ERR_INVALID_ARGUMENT));
        FZ_CHECK((s == EXP_OK) == (level >= EXP_LOG_ERROR && level <= EXP_LOG_DEBUG), "exp_client_set_log_level(%d): %s", level, fz_status_name(s));
        if (end && *end == ',') g_events.result = (int)strtol(end + 1, NULL, 10);
    }

    /* exp_decide_options_parse */
    unsigned parsed = 0xdeadbeef;
    s = FZ_STATUS("exp_decide_options_parse", exp_decide_options_parse(opt_names, &parsed), PARSE_ERRORS);
    CHECK_JSON_ARG("exp_decide_options_parse", s, opt_names);
    if (s == EXP_OK) {
        FZ_CHECK((parsed & ~0x1Fu) == 0, "exp_decide_options_parse returned undefined bits 0x%x", parsed);
        options |= parsed;
    } else {
        FZ_CHECK(parsed == 0xdeadbeef, "exp_decide_options_parse wrote its out-parameter on failure");
    }

    /* User property (JSON value), then a decision that sees it. */
    s = FZ_STATUS("exp_set_user_property_json", exp_set_user_property_json(g_client, user, pkey, pvalue), PROPERTY_ERRORS);
    CHECK_JSON_ARG("exp_set_user_property_json", s, pvalue);
    if (s == EXP_OK) FZ_CHECK(valid_key(user) && valid_key(pkey), "exp_set_user_property_json accepted a bad user id or key");
    else if (pvalue && fz_json_valid(pvalue) && fz_cstr_utf8(pvalue) && pvalue[strspn(pvalue, " \t\r\n")] != '{' &&
             pvalue[strspn(pvalue, " \t\r\n")] != '[' && strlen(pvalue) <= EXP_MAX_STRING_BYTES && !strstr(pvalue, "\\u"))
        CHECK_KEYS("exp_set_user_property_json", s, user, pkey, NULL);
    out = NULL;
    s = FZ_STATUS("exp_get_user_properties_json", exp_get_user_properties_json(g_client, user, &out), FZ_ARGS);
    CHECK_KEYS("exp_get_user_properties_json", s, user, NULL, NULL);
    if (s == EXP_OK) FZ_CHECK_JSON("exp_get_user_properties_json", out, '{');
    else FZ_CHECK(out == NULL, "exp_get_user_properties_json wrote its out-parameter on failure");
    exp_free(out);

    /* Real-time segments: f6 as the user's segments list, f5 as a segment name, f2/f4 as an ODP event's
     * identifiers/data. demo.json has no ODP integration, so an event that passes every input check is
     * refused with EXP_ERR_ODP_NOT_ENABLED: nothing is queued or sent. */
    s = FZ_STATUS("exp_set_qualified_segments_json", exp_set_qualified_segments_json(g_client, user, pvalue),
                  PROPERTY_ERRORS);
    CHECK_JSON_ARG("exp_set_qualified_segments_json", s, pvalue);
    if (s == EXP_OK) FZ_CHECK(valid_key(user), "exp_set_qualified_segments_json accepted a bad user id");
    int qualified = -1;
    s = FZ_STATUS("exp_is_qualified_for", exp_is_qualified_for(g_client, user, pkey, &qualified), FZ_ARGS);
    CHECK_KEYS("exp_is_qualified_for", s, user, pkey, NULL);
    if (s == EXP_OK) FZ_CHECK(qualified == 0 || qualified == 1, "exp_is_qualified_for wrote %d", qualified);
    out = NULL;
    s = FZ_STATUS("exp_get_qualified_segments_json", exp_get_qualified_segments_json(g_client, user, &out), FZ_ARGS);
    CHECK_KEYS("exp_get_qualified_segments_json", s, user, NULL, NULL);
    if (s == EXP_OK) FZ_CHECK(out && (strcmp(out, "null") == 0 || fz_json_valid(out)), "exp_get_qualified_segments_json: %s", out);
    else FZ_CHECK(out == NULL, "exp_get_qualified_segments_json wrote its out-parameter on failure");
    exp_free(out);
    s = FZ_STATUS("exp_send_odp_event", exp_send_odp_event(g_client, NULL, pkey, attrs_json, tags),
                  PROPERTY_ERRORS | FZ_BIT(EXP_ERR_ODP_NOT_ENABLED));
    FZ_CHECK(s != EXP_OK, "exp_send_odp_event accepted an event without an ODP integration");
    exp_set_qualified_segments_json(g_client, user, NULL);

    /* exp_decide_json: attributes JSON */
    out = NULL;
    s = FZ_STATUS("exp_decide_json", exp_decide_json(g_client, user, flag, attrs_json, options, &out), DECIDE_ERRORS | FZ_JSONERR);
    CHECK_JSON_ARG("exp_decide_json", s, attrs_json);
    if (s == EXP_OK) {
        FZ_CHECK(valid_key(user) && valid_key(flag), "exp_decide_json accepted a bad user id or flag key");
        FZ_CHECK_JSON("exp_decide_json", out, '{');
    } else FZ_CHECK(out == NULL, "exp_decide_json wrote its out-parameter on failure");
    exp_free(out);

    /* exp_decide_for_keys_json: keys JSON */
    out = NULL;
    s = FZ_STATUS("exp_decide_for_keys_json", exp_decide_for_keys_json(g_client, user, keys_json, attrs_json, options, &out),
                  DECIDE_ERRORS | FZ_JSONERR);
    CHECK_JSON_ARG("exp_decide_for_keys_json(keys)", s, keys_json);
    CHECK_JSON_ARG("exp_decide_for_keys_json(attributes)", s, attrs_json);
    if (s == EXP_OK) FZ_CHECK_JSON("exp_decide_for_keys_json", out, '{');
    else FZ_CHECK(out == NULL, "exp_decide_for_keys_json wrote its out-parameter on failure");
    exp_free(out);

    /* Typed path: exp_decide with arbitrary attribute keys/values from the fields. */
    exp_attribute typed[4];
    size_t n_typed = 0;
    if (control & 0x80) {
        typed[n_typed++] = exp_attr_string(pkey, pvalue);
        typed[n_typed++] = exp_attr_string("country", rule ? rule : "NL");
        typed[n_typed++] = exp_attr_int("age", (int64_t)(int8_t)control);
        typed[n_typed++] = exp_attr_double("cart_value", (double)control / 3.0);
    }
    exp_decision d = {0};
    s = FZ_STATUS("exp_decide", exp_decide(g_client, user, flag, typed, n_typed, options, &d), DECIDE_ERRORS);
    if (n_typed == 0 || (valid_key(pkey) && fz_cstr_utf8(pvalue) && strlen(pvalue) <= EXP_MAX_STRING_BYTES && valid_key(rule)))
        CHECK_KEYS("exp_decide", s, user, flag, NULL);
    if (s == EXP_OK) FZ_CHECK_DECISION(&d, options & ~EXP_DECIDE_ENABLED_FLAGS_ONLY);
    else if ((s == EXP_ERR_UNKNOWN_FLAG || s == EXP_ERR_NOT_READY) && d.flag_key)  /* the reference's error decision */
        FZ_CHECK(d.flag_key && strcmp(d.flag_key, flag) == 0 && d.enabled == 0 && !d.variation_key && !d.rule_key &&
                 d.reason_count == 1 && d.reasons && d.reasons[0],
                 "exp_decide: not the reference's error decision for %s", exp_status_str(s));
    else FZ_CHECK(fz_is_zero(&d, sizeof d), "exp_decide wrote its decision on failure");
    FZ_RELEASE(&d);
    if (control & 0x20) {
        s = FZ_STATUS("exp_decide(bad options)", exp_decide(g_client, user, flag, NULL, 0, options | 0x80000000u, &d), DECIDE_ERRORS);
        FZ_CHECK(s != EXP_OK, "exp_decide accepted an undefined option bit");
        FZ_RELEASE(&d);
    }

    /* Typed exp_decide_for_keys with arbitrary keys. */
    const char *keys[3] = {flag, event, experiment};
    exp_decision ds[3] = {{0}};
    size_t count = 99;
    s = FZ_STATUS("exp_decide_for_keys", exp_decide_for_keys(g_client, user, keys, 3, NULL, 0, options, ds, 3, &count), DECIDE_ERRORS);
    CHECK_KEYS4("exp_decide_for_keys", s, user, flag, event, experiment);
    if (s == EXP_OK) {
        FZ_CHECK(count <= 3, "exp_decide_for_keys: count %zu", count);
        if (!(options & EXP_DECIDE_ENABLED_FLAGS_ONLY)) FZ_CHECK(count == 3, "exp_decide_for_keys: count %zu for 3 keys", count);
        for (size_t i = 0; i < count; i++) FZ_CHECK_DECISION(&ds[i], options);
        exp_decisions_release(ds, count);
    }
    FZ_CHECK(fz_is_zero(ds, sizeof ds), "exp_decide_for_keys: decisions not zero after release/failure");

    /* Experiments by key (get_variation/activate) and by id (trigger). */
    char *v = NULL;
    s = FZ_STATUS("exp_get_variation", exp_get_variation(g_client, experiment, user, typed, n_typed, &v), EXPERIMENT_ERRORS);
    if (n_typed == 0) CHECK_KEYS("exp_get_variation", s, experiment, user, NULL);
    FZ_CHECK(s == EXP_OK || v == NULL, "exp_get_variation wrote its out-parameter on failure");
    exp_free(v); v = NULL;
    s = FZ_STATUS("exp_activate", exp_activate(g_client, experiment, user, NULL, 0, &v), EXPERIMENT_ERRORS);
    CHECK_KEYS("exp_activate", s, experiment, user, NULL);
    exp_free(v); v = NULL;
    s = FZ_STATUS("exp_trigger_experiment", exp_trigger_experiment(g_client, user, experiment, NULL, 0, &v), TRIGGER_ERRORS);
    CHECK_KEYS("exp_trigger_experiment", s, user, experiment, NULL);
    FZ_CHECK(s == EXP_OK ? v != NULL : v == NULL, "exp_trigger_experiment out-parameter: status %d, value %p", (int)s, (void *)v);
    exp_free(v); v = NULL;

    /* Sigma: properties JSON (the attributes field), a typed flag value (the property key as variable key),
     * the user's experiments and holdouts, an experiment handle and one of its parameters. */
    s = FZ_STATUS("exp_edit_user_properties", exp_edit_user_properties(g_client, user, attrs_json), PROPERTY_ERRORS);
    CHECK_JSON_ARG("exp_edit_user_properties", s, attrs_json);
    {
        int found = 7;
        char *text = NULL;
        s = FZ_STATUS("exp_flag_string", exp_flag_string(g_client, user, flag, pkey, typed, n_typed, &text, &found),
                      SIGMA_ERRORS);
        FZ_CHECK(s == EXP_OK && found ? text != NULL : text == NULL, "exp_flag_string: status %s, found %d, value %p",
                 fz_status_name(s), found, (void *)text);
        FZ_CHECK(s != EXP_OK || found == 0 || found == 1, "exp_flag_string: found %d", found);
        exp_free(text); text = NULL;
        s = FZ_STATUS("exp_user_experiments", exp_user_experiments(g_client, user, typed, n_typed, &text), DECIDE_ERRORS);
        FZ_CHECK(s == EXP_OK ? text != NULL : text == NULL, "exp_user_experiments out-parameter: status %s", fz_status_name(s));
        exp_free(text); text = NULL;
        s = FZ_STATUS("exp_user_holdouts_json", exp_user_holdouts_json(g_client, user, typed, n_typed, &text), DECIDE_ERRORS);
        if (s == EXP_OK) FZ_CHECK_JSON("exp_user_holdouts_json", text, '[');
        exp_free(text); text = NULL;
        exp_experiment *handle = NULL;
        s = FZ_STATUS("exp_get_experiment", exp_get_experiment(g_client, user, experiment, typed, n_typed, &handle),
                      EXPERIMENT_ERRORS);
        FZ_CHECK(s == EXP_OK || handle == NULL, "exp_get_experiment wrote its handle on failure");
        if (handle) {
            int64_t number = 0;
            s = FZ_STATUS("exp_experiment_param_int", exp_experiment_param_int(handle, pkey, &number, &found), SIGMA_ERRORS);
            FZ_CHECK_JSON("exp_experiment_parameters_json", exp_experiment_parameters_json(handle), '{');
        }
        exp_experiment_free(handle);
    }

    /* Forced variation and forced decision with arbitrary keys; removed again below. */
    s = FZ_STATUS("exp_set_forced_variation", exp_set_forced_variation(g_client, experiment, user, variation), FORCED_ERRORS);
    CHECK_KEYS("exp_set_forced_variation", s, experiment, user, variation);
    int forced_variation = (s == EXP_OK);
    s = FZ_STATUS("exp_get_forced_variation", exp_get_forced_variation(g_client, experiment, user, &v), FORCED_ERRORS);
    CHECK_KEYS("exp_get_forced_variation", s, experiment, user, NULL);
    if (s == EXP_OK && forced_variation && variation)
        FZ_CHECK(v && strcmp(v, variation) == 0, "forced variation \"%s\" read back as \"%s\"", variation, v ? v : "(null)");
    exp_free(v); v = NULL;
    s = FZ_STATUS("exp_set_forced_decision", exp_set_forced_decision(g_client, user, flag, rule, variation ? variation : "on"), FZ_ARGS);
    CHECK_KEYS4("exp_set_forced_decision", s, user, flag, rule, variation ? variation : "on");
    s = FZ_STATUS("exp_decide(forced)", exp_decide(g_client, user, flag, NULL, 0, options, &d), DECIDE_ERRORS);
    if (s == EXP_OK) FZ_CHECK_DECISION(&d, options & ~EXP_DECIDE_ENABLED_FLAGS_ONLY);
    FZ_RELEASE(&d);

    /* exp_track: event tags JSON */
    s = FZ_STATUS("exp_track", exp_track(g_client, event, user, typed, n_typed, tags), TRACK_ERRORS);
    CHECK_JSON_ARG("exp_track", s, tags);
    if (s == EXP_OK) FZ_CHECK(valid_key(user) && valid_key(event), "exp_track accepted a bad user id or event key");
    if (s == EXP_OK && tags) {
        const char *t = tags + strspn(tags, " \t\r\n");
        FZ_CHECK(*t == '{', "exp_track accepted event tags that are not a JSON object: %.200s", tags);
    }

    /* Clean up per-user state. */
    if (forced_variation) FZ_STATUS("exp_set_forced_variation(remove)", exp_set_forced_variation(g_client, experiment, user, NULL), 0);
    s = FZ_STATUS("exp_remove_forced_decisions", exp_remove_forced_decisions(g_client, user), FZ_ARGS);
    CHECK_KEYS("exp_remove_forced_decisions", s, user, NULL, NULL);
    s = FZ_STATUS("exp_clear_user_properties", exp_clear_user_properties(g_client, user), FZ_ARGS);
    CHECK_KEYS("exp_clear_user_properties", s, user, NULL, NULL);
    if (pkey) {
        s = FZ_STATUS("exp_remove_user_property", exp_remove_user_property(g_client, user, pkey), FZ_ARGS);
        CHECK_KEYS("exp_remove_user_property", s, user, pkey, NULL);
    }
    if (f[12]) {
        g_events.result = 0;
        FZ_STATUS("exp_client_set_log_level(default)", exp_client_set_log_level(g_client, EXP_LOG_WARNING), 0);
    }
    free(buf);
    return 0;
}
