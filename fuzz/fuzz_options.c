/*
 * fuzz_options.c — libFuzzer harness: the input is the options JSON of exp_client_create.
 *
 * The input is copied into a NUL-terminated buffer of exactly size+1 bytes (the API takes a C string
 * here, so anything after an embedded NUL is simply not seen). A rejected text must give a documented
 * code with a message and leave *out_client untouched; an accepted one must give a usable client: it
 * starts with the demo datafile, stores a user property and decides (the options it was given, e.g.
 * default_decide_options and user_store_capacity, apply), and is then closed and freed. Its log
 * messages (at the level the options chose, then at debug) are checked: valid UTF-8 and never the
 * "sdk_key" given in the options in full.
 */
#include "fuzz_common.h"

#define CREATE_ERRORS (FZ_BIT(EXP_ERR_INVALID_JSON) | FZ_BIT(EXP_ERR_INVALID_OPTION) | FZ_BIT(EXP_ERR_TOO_LARGE) | \
                       FZ_BIT(EXP_ERR_TOO_DEEP) | FZ_BIT(EXP_ERR_INVALID_UTF8))

static char *g_demo;
static size_t g_demo_len;
static fz_dispatch_state g_events = {0, 0, 0};

/* The "sdk_key" value(s) of the options text, to check log messages never show them. */
typedef struct secrets { char *values[4]; int count; } secrets;
static void collect_secret(void *ctx, const char *value, size_t len) {
    secrets *list = ctx;
    (void)len;
    if (list->count < 4) list->values[list->count++] = strdup(value);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    g_demo = fz_read_file(fz_demo_path(), &g_demo_len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    size_t len = strlen(text);

    exp_client *sentinel = (exp_client *)(uintptr_t)0x5eed;
    exp_client *client = sentinel;
    exp_status s = FZ_STATUS("exp_client_create", exp_client_create(text, &client), CREATE_ERRORS);
    if (s != EXP_OK) {
        FZ_CHECK(client == sentinel, "exp_client_create failed but wrote *out_client");
        free(text);
        return 0;
    }
    FZ_CHECK(client != NULL && client != sentinel, "exp_client_create succeeded without a client");
    /* Options the library accepted must be a JSON object (or the documented NULL/"" for defaults). */
    if (len > 0) {
        FZ_CHECK(fz_json_depth(text, len) <= EXP_MAX_JSON_DEPTH, "options nesting %u levels were accepted", fz_json_depth(text, len));
        FZ_CHECK(fz_utf8_valid((const unsigned char *)text, len), "options with invalid UTF-8 were accepted");
        FZ_CHECK(fz_json_c_accepts(text, len), "options that json-c refuses were accepted: %.300s", text);
    }

    secrets keys = {{0}, 0};
    if (len > 0) fz_json_valid_ex(text, len, "sdk_key", collect_secret, &keys);
    fz_log_state logs[4] = {{0, NULL, NULL, 0}};
    for (int i = 0; i < keys.count; i++) logs[i].secret = keys.values[i];
    /* One logger gets the messages; the other keys are checked by re-reading them below. */
    FZ_STATUS("exp_client_set_logger", exp_client_set_logger(client, fz_log, &logs[0]), 0);

    int ready = -1;
    FZ_STATUS("exp_client_is_ready", exp_client_is_ready(client, &ready), 0);
    FZ_CHECK(ready == 0, "a new client is ready before exp_client_start");
    exp_decision d = {0};
    FZ_STATUS("exp_decide(not started)", exp_decide(client, "u", "checkout_redesign", NULL, 0, 0, &d), FZ_BIT(EXP_ERR_NOT_READY));
    /* The reference's error decision for a client without a datafile (see exp_decide). */
    FZ_CHECK(d.flag_key && strcmp(d.flag_key, "checkout_redesign") == 0 && d.enabled == 0 && d.reason_count == 1 &&
                 strcmp(d.reasons[0], "Optimizely SDK not configured properly yet.") == 0,
             "a not-ready exp_decide did not give the reference's error decision");
    FZ_RELEASE(&d);

    FZ_STATUS("exp_client_set_event_dispatcher", exp_client_set_event_dispatcher(client, fz_dispatch, &g_events), 0);
    FZ_STATUS("exp_client_start", exp_client_start(client, g_demo, g_demo_len), 0);
    FZ_STATUS("exp_set_user_property_json", exp_set_user_property_json(client, "user-1", "country", "\"NL\""), 0);
    FZ_STATUS("exp_set_user_property_json", exp_set_user_property_json(client, "user-2", "age", "44"), 0);

    /* Default decide options add to the call's: whatever they are, decide and decide_all must work. */
    FZ_STATUS("exp_decide", exp_decide(client, "user-1", "checkout_redesign", NULL, 0, 0, &d), 0);
    FZ_CHECK(d.flag_key && strcmp(d.flag_key, "checkout_redesign") == 0, "decision for the wrong flag");
    /* Which options apply depends on the defaults; the checks that do not depend on them: */
    FZ_CHECK(d.variables_json != NULL && fz_json_valid(d.variables_json), "variables_json invalid");
    FZ_CHECK(d.reason_count == 0 || d.reasons != NULL, "reason_count without reasons");
    FZ_RELEASE(&d);

    size_t cap = 0, count = 0;
    FZ_STATUS("exp_flag_count", exp_flag_count(client, &cap), 0);
    exp_decision ds[16] = {{0}};
    FZ_CHECK(cap <= 16, "demo has %zu flags", cap);
    FZ_STATUS("exp_decide_all", exp_decide_all(client, "user-2", NULL, 0, 0, ds, cap, &count), 0);
    FZ_CHECK(count <= cap, "decide_all count %zu > %zu", count, cap);
    exp_decisions_release(ds, count);
    FZ_CHECK(fz_is_zero(ds, sizeof ds), "decisions not zeroed by exp_decisions_release");

    char *props = NULL;
    FZ_STATUS("exp_get_user_properties_json", exp_get_user_properties_json(client, "user-1", &props), 0);
    FZ_CHECK_JSON("exp_get_user_properties_json", props, '{');
    exp_free(props);

    /* Rejected datafile (an error message) and a restart (an info message) at debug level, with each
     * sdk_key value the options named. */
    FZ_STATUS("exp_client_set_log_level(0)", exp_client_set_log_level(client, 0), FZ_BIT(EXP_ERR_INVALID_ARGUMENT));
    FZ_STATUS("exp_client_set_log_level", exp_client_set_log_level(client, EXP_LOG_DEBUG), 0);
    for (int i = 0; i < (keys.count ? keys.count : 1); i++) {
        FZ_STATUS("exp_client_set_logger", exp_client_set_logger(client, fz_log, &logs[i]), 0);
        FZ_STATUS("exp_client_start(bad)", exp_client_start(client, "{\"version\": \"4\"}", 16), FZ_BIT(EXP_ERR_INVALID_DATAFILE));
        FZ_STATUS("exp_client_start", exp_client_start(client, g_demo, g_demo_len), 0);
    }
    FZ_STATUS("exp_client_close", exp_client_close(client), 0);
    FZ_STATUS("exp_client_close(again)", exp_client_close(client), 0);
    FZ_STATUS("exp_decide(closed)", exp_decide(client, "user-1", "checkout_redesign", NULL, 0, 0, &d), FZ_BIT(EXP_ERR_CLOSED));
    exp_client_free(client);
    /* Only now: until the client is closed its threads (event retries, datafile polling) may still log
     * through logs[], whose secrets are these strings. */
    for (int i = 0; i < keys.count; i++) free(keys.values[i]);
    free(text);
    return 0;
}
