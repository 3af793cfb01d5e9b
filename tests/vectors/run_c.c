/*
 * Replays tests/vectors/cases through the C ABI (include/experiment.h) and compares every call's result and
 * dispatched events with the reference's (format: tests/vectors/README.md). Prints `N passed, N failed`
 * last and exits 1 on any failure; call kinds the C ABI has no entry point for are counted apart as
 * "not applicable".
 *
 *     cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -o run_c tests/vectors/run_c.c \
 *        -L.build/release -lexperiment -ljson-c
 *     ./run_c [--root DIR] tests/vectors/cases/<name>.json ...   (DIR: where datafile_path is relative to)
 *
 * Decide calls without forced decisions go through the id-based calls (exp_decide_n, exp_decide_all_n,
 * exp_decide_for_keys_n); with forced decisions through a user context (exp_user_*), where the C ABI keeps
 * them, as the reference keeps them on its user context.
 */
#define _POSIX_C_SOURCE 200809L
#include <experiment.h>
#include <json-c/json.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LISTED 15
#define TAG "$vector_type"

/* ------------------------------------------------------------------------------------------------ */
/* Tally                                                                                            */
/* ------------------------------------------------------------------------------------------------ */

static const char *const NOT_APPLICABLE_KINDS[] = {"is_feature_enabled", "get_enabled_features",
                                                   "get_feature_variable", "get_all_feature_variables"};
#define N_NOT_APPLICABLE (sizeof NOT_APPLICABLE_KINDS / sizeof NOT_APPLICABLE_KINDS[0])

typedef struct tally {
    long passed, failed, known, known_fixed, listed;
    long not_applicable[N_NOT_APPLICABLE];
    json_object *known_differences; /* the "calls" array of known_differences.json, or NULL */
} tally;

static json_object *field(json_object *object, const char *name);

static int not_applicable_index(const char *kind) {
    for (size_t i = 0; i < N_NOT_APPLICABLE; i++)
        if (strcmp(kind, NOT_APPLICABLE_KINDS[i]) == 0) return (int)i;
    return -1;
}

/* An entry applies to this runner when it names no "bindings" or names "c" among them. */
static int applies_to_c(json_object *entry) {
    json_object *bindings = field(entry, "bindings");
    for (size_t i = 0; bindings && i < json_object_array_length(bindings); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(bindings, i)), "c") == 0) return 1;
    return bindings == NULL;
}

static int is_known_difference(const tally *t, const char *case_name, size_t index) {
    size_t n = t->known_differences ? json_object_array_length(t->known_differences) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *entry = json_object_array_get_idx(t->known_differences, i), *c, *x;
        if (json_object_object_get_ex(entry, "case", &c) && json_object_object_get_ex(entry, "index", &x) &&
            strcmp(json_object_get_string(c), case_name) == 0 && (size_t)json_object_get_int64(x) == index &&
            applies_to_c(entry))
            return 1;
    }
    return 0;
}

static void record(tally *t, const char *case_name, size_t index, const char *kind, int ok,
                   json_object *expected, json_object *actual) {
    int known = is_known_difference(t, case_name, index);
    if (ok) {
        t->passed++;
        t->known_fixed += known;
        return;
    }
    if (known) {
        t->known++;
        return;
    }
    t->failed++;
    if (t->listed++ >= MAX_LISTED) return;
    int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
    static const char *const parts[] = {"result", "events", "notifications"};
    for (size_t i = 0; i < 3; i++) {   /* the first part that differs */
        json_object *e = field(expected, parts[i]), *a = field(actual, parts[i]);
        if (json_object_equal(e, a)) continue;
        printf("DIFF %s#%zu %s: at .%s\n     expected %.500s\n     got      %.500s\n", case_name, index, kind,
               parts[i], json_object_to_json_string_ext(e, flags), json_object_to_json_string_ext(a, flags));
        return;
    }
}

static int report(const tally *t) {
    long not_applicable = 0;
    for (size_t i = 0; i < N_NOT_APPLICABLE; i++) not_applicable += t->not_applicable[i];
    if (not_applicable) {
        printf("c: %ld not applicable (no such call in the C ABI:", not_applicable);
        for (size_t i = 0; i < N_NOT_APPLICABLE; i++)
            printf("%s %s %ld", i ? "," : "", NOT_APPLICABLE_KINDS[i], t->not_applicable[i]);
        printf(")\n");
    }
    if (t->known || t->known_fixed)
        printf("c: %ld known differences (known_differences.json), %ld listed there now pass\n", t->known,
               t->known_fixed);
    printf("%ld passed, %ld failed\n", t->passed, t->failed);
    return t->failed ? 1 : 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* Reading                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *out_length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t capacity = 1 << 16, length = 0, got;
    char *text = malloc(capacity);
    while (text && (got = fread(text + length, 1, capacity - length - 1, f)) > 0) {
        length += got;
        if (capacity - length - 1 == 0) {
            char *bigger = realloc(text, capacity *= 2);
            if (!bigger) free(text);
            text = bigger;
        }
    }
    fclose(f);
    if (text) text[length] = '\0';
    if (out_length) *out_length = length;
    return text;
}

static json_object *read_json(const char *path) {
    char *text = read_file(path, NULL);
    json_object *parsed = text ? json_tokener_parse(text) : NULL;
    free(text);
    return parsed;
}

static json_object *field(json_object *object, const char *name) {
    json_object *value = NULL;
    return json_object_object_get_ex(object, name, &value) ? value : NULL;
}

static const char *string_field(json_object *object, const char *name) {
    json_object *value = field(object, name);
    return value && json_object_is_type(value, json_type_string) ? json_object_get_string(value) : NULL;
}

static size_t string_length(json_object *string) { return (size_t)json_object_get_string_len(string); }

/* ------------------------------------------------------------------------------------------------ */
/* Inputs: attributes (README "Values") and options                                                 */
/* ------------------------------------------------------------------------------------------------ */

static exp_value tagged_value(json_object *tagged) {
    exp_value v = {EXP_VALUE_OTHER, 0, 0, 0.0, NULL};   /* list and dict: a type conditions cannot use */
    const char *kind = string_field(tagged, TAG), *text = string_field(tagged, "value");
    if (kind && strcmp(kind, "bigint") == 0) {
        v.type = EXP_VALUE_BIG_INT;
        v.string_value = text;
    } else if (kind && strcmp(kind, "float") == 0 && text) {
        v.type = EXP_VALUE_DOUBLE;
        v.double_value = strcmp(text, "nan") == 0 ? NAN : (text[0] == '-' ? -INFINITY : INFINITY);
    }
    return v;
}

static exp_attribute_n attribute_of(const char *key, json_object *value) {
    exp_attribute_n a = {key, strlen(key), {EXP_VALUE_NULL, 0, 0, 0.0, NULL}, 0};
    switch (json_object_get_type(value)) {
    case json_type_boolean: a.value.type = EXP_VALUE_BOOL; a.value.bool_value = json_object_get_boolean(value); break;
    case json_type_int: a.value.type = EXP_VALUE_INT; a.value.int_value = json_object_get_int64(value); break;
    case json_type_double: a.value.type = EXP_VALUE_DOUBLE; a.value.double_value = json_object_get_double(value); break;
    case json_type_string:
        a.value.type = EXP_VALUE_STRING;
        a.value.string_value = json_object_get_string(value);
        a.string_length = string_length(value);
        break;
    case json_type_object: a.value = tagged_value(value); break;
    default: break;   /* null */
    }
    if (a.value.type == EXP_VALUE_BIG_INT && a.value.string_value) a.string_length = strlen(a.value.string_value);
    return a;
}

/* The call's attributes; *out_count of them. Free the array with free() (the strings are the call's). */
static exp_attribute_n *attributes_of(json_object *call, size_t *out_count) {
    json_object *attributes = field(call, "attributes");
    size_t n = attributes ? (size_t)json_object_object_length(attributes) : 0, i = 0;
    exp_attribute_n *out = calloc(n ? n : 1, sizeof *out);
    if (attributes) {
        json_object_object_foreach(attributes, key, value) out[i++] = attribute_of(key, value);
    }
    *out_count = i;
    return out;
}

static unsigned options_of(json_object *call) {
    unsigned options = 0;
    json_object *names = field(call, "options");
    if (names && exp_decide_options_parse(json_object_to_json_string(names), &options) != EXP_OK)
        fprintf(stderr, "options %s: %s\n", json_object_to_json_string(names), exp_last_error());
    return options;
}

/* ------------------------------------------------------------------------------------------------ */
/* Outputs: decisions, status answers and events as the vectors write them                          */
/* ------------------------------------------------------------------------------------------------ */

static json_object *text_or_null(const exp_decision *d, exp_decision_field which) {
    const char *text = NULL;
    size_t length = 0;
    if (exp_decision_text_n(d, which, 0, &text, &length) != EXP_OK || !text) return NULL;
    return json_object_new_string_len(text, (int)length);
}

static json_object *decision_json(const exp_decision *d) {
    json_object *out = json_object_new_object(), *reasons = json_object_new_array();
    json_object_object_add(out, "flag_key", text_or_null(d, EXP_DECISION_FLAG_KEY));
    json_object_object_add(out, "enabled", json_object_new_boolean(d->enabled));
    json_object_object_add(out, "variation_key", text_or_null(d, EXP_DECISION_VARIATION_KEY));
    json_object_object_add(out, "rule_key", text_or_null(d, EXP_DECISION_RULE_KEY));
    json_object_object_add(out, "variables", json_tokener_parse(d->variables_json ? d->variables_json : "{}"));
    for (size_t i = 0; i < d->reason_count; i++) {
        const char *text = NULL;
        size_t length = 0;
        if (exp_decision_text_n(d, EXP_DECISION_REASON, i, &text, &length) == EXP_OK)
            json_object_array_add(reasons, json_object_new_string_len(text, (int)length));
    }
    json_object_object_add(out, "reasons", reasons);
    return out;
}

static json_object *decisions_json(const exp_decision *ds, size_t count) {
    json_object *out = json_object_new_object();
    for (size_t i = 0; i < count; i++) {
        json_object *d = decision_json(&ds[i]);
        json_object_object_add(out, json_object_get_string(field(d, "flag_key")), d);
    }
    return out;
}

/* What a call that the library refused gives: {"raised": "<status name>: <message>"}. */
static json_object *raised(exp_status status) {
    char text[1024];
    snprintf(text, sizeof text, "%s: %s", exp_status_str(status), exp_last_error());
    json_object *out = json_object_new_object();
    json_object_object_add(out, "raised", json_object_new_string(text));
    return out;
}

static void drop_key(json_object *object, const char *key) {
    if (object && json_object_is_type(object, json_type_object)) json_object_object_del(object, key);
}

/* README "Events": the uuid and timestamp of each event, the client's name and version are not compared. */
static void normalize_params(json_object *params) {
    drop_key(params, "client_name");
    drop_key(params, "client_version");
    json_object *visitors = field(params, "visitors");
    for (size_t v = 0; visitors && v < json_object_array_length(visitors); v++) {
        json_object *snapshots = field(json_object_array_get_idx(visitors, v), "snapshots");
        for (size_t s = 0; snapshots && s < json_object_array_length(snapshots); s++) {
            json_object *events = field(json_object_array_get_idx(snapshots, s), "events");
            for (size_t e = 0; events && e < json_object_array_length(events); e++) {
                drop_key(json_object_array_get_idx(events, e), "uuid");
                drop_key(json_object_array_get_idx(events, e), "timestamp");
            }
        }
    }
}

/* What one call dispatched and notified, in order (the user_data of the dispatcher and the listeners). */
typedef struct capture {
    json_object *events;
    json_object *notifications;
} capture;

/* The event dispatcher: appends {url, http_verb, params} to the call's events. */
static int capture_event(const exp_event *event, void *user_data) {
    json_object *params = json_tokener_parse(event->body), *out = json_object_new_object();
    normalize_params(params);
    json_object_object_add(out, "url", json_object_new_string(event->url));
    json_object_object_add(out, "http_verb", json_object_new_string(event->http_verb));
    json_object_object_add(out, "params", params);
    json_object_array_add(((capture *)user_data)->events, out);
    return 0;
}

/* DECISION and TRACK listeners: the payload with "notification" added (README "Notifications"). */
static void capture_notification(int type, const char *payload_json, void *user_data) {
    json_object *payload = json_tokener_parse(payload_json), *out = json_object_new_object();
    const char *kind = type == EXP_NOTIFY_TRACK ? "TRACK" : "DECISION";
    json_object_object_add(out, "notification", json_object_new_string(kind));
    json_object_object_foreach(payload, key, value) json_object_object_add(out, key, json_object_get(value));
    json_object_put(payload);
    json_object_array_add(((capture *)user_data)->notifications, out);
}

/* ------------------------------------------------------------------------------------------------ */
/* The calls                                                                                        */
/* ------------------------------------------------------------------------------------------------ */

typedef struct call_input {
    json_object *call;
    const char *user_id;
    size_t user_id_length;
    exp_attribute_n *attributes;
    size_t attribute_count;
    unsigned options;
} call_input;

static exp_user *forced_user(exp_client *client, const call_input *in) {
    json_object *forced = field(in->call, "forced_decisions");
    exp_user *user = NULL;
    if (exp_user_create_n(client, in->user_id, in->user_id_length, in->attributes, in->attribute_count, &user))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(forced); i++) {
        json_object *f = json_object_array_get_idx(forced, i), *flag = field(f, "flag_key");
        json_object *rule = field(f, "rule_key"), *variation = field(f, "variation_key");
        exp_user_set_forced_decision(user, json_object_get_string(flag), string_length(flag),
                                     rule ? json_object_get_string(rule) : NULL, rule ? string_length(rule) : 0,
                                     json_object_get_string(variation), string_length(variation));
    }
    return user;
}

static int has_forced_decisions(const call_input *in) {
    json_object *forced = field(in->call, "forced_decisions");
    return forced && json_object_array_length(forced) > 0;
}

static json_object *run_decide(exp_client *client, const call_input *in) {
    json_object *key = field(in->call, "flag_key");
    exp_decision d = {0};
    exp_status s;
    if (has_forced_decisions(in)) {
        exp_user *user = forced_user(client, in);
        s = exp_user_decide(user, json_object_get_string(key), string_length(key), in->options, &d);
        exp_user_free(user);
    } else {
        s = exp_decide_n(client, in->user_id, in->user_id_length, json_object_get_string(key), string_length(key),
                         in->attributes, in->attribute_count, in->options, &d);
    }
    /* An unknown flag or a client without datafile still fills the reference's error decision. */
    json_object *out = (s == EXP_OK || s == EXP_ERR_UNKNOWN_FLAG || s == EXP_ERR_NOT_READY) ? decision_json(&d)
                                                                                          : raised(s);
    exp_decision_release(&d);
    return out;
}

static json_object *run_decide_all(exp_client *client, const call_input *in) {
    size_t capacity = 0, count = 0;
    exp_flag_count(client, &capacity);
    exp_decision *ds = calloc(capacity ? capacity : 1, sizeof *ds);
    exp_status s;
    if (has_forced_decisions(in)) {
        exp_user *user = forced_user(client, in);
        s = exp_user_decide_all(user, in->options, ds, capacity, &count);
        exp_user_free(user);
    } else {
        s = exp_decide_all_n(client, in->user_id, in->user_id_length, in->attributes, in->attribute_count,
                             in->options, ds, capacity, &count);
    }
    json_object *out = s == EXP_OK ? decisions_json(ds, count) : raised(s);
    exp_decisions_release(ds, count);
    free(ds);
    return out;
}

static json_object *run_decide_for_keys(exp_client *client, const call_input *in) {
    json_object *keys_json = field(in->call, "keys");
    size_t n = json_object_array_length(keys_json), count = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    size_t *lengths = calloc(n ? n : 1, sizeof *lengths);
    exp_decision *ds = calloc(n ? n : 1, sizeof *ds);
    for (size_t i = 0; i < n; i++) {
        keys[i] = json_object_get_string(json_object_array_get_idx(keys_json, i));
        lengths[i] = string_length(json_object_array_get_idx(keys_json, i));
    }
    exp_status s = exp_decide_for_keys_n(client, in->user_id, in->user_id_length, keys, lengths, n, in->attributes,
                                         in->attribute_count, in->options, ds, n, &count);
    json_object *out = s == EXP_OK ? decisions_json(ds, count) : raised(s);
    exp_decisions_release(ds, count);
    free(ds);
    free(lengths);
    free(keys);
    return out;
}

/* activate and get_variation: the variation key or null (an unknown experiment is null, as the reference). */
static json_object *run_experiment(exp_client *client, const call_input *in, int activate) {
    json_object *key = field(in->call, "experiment_key");
    char *variation = NULL;
    size_t length = 0;
    exp_status s = (activate ? exp_activate_len : exp_get_variation_len)(
        client, json_object_get_string(key), string_length(key), in->user_id, in->user_id_length, in->attributes,
        in->attribute_count, &variation, &length);
    json_object *out = NULL;
    if (s == EXP_OK && variation) out = json_object_new_string_len(variation, (int)length);
    else if (s != EXP_OK && s != EXP_ERR_UNKNOWN_EXPERIMENT) out = raised(s);
    exp_free(variation);
    return out;
}

/* track returns nothing (null); an unknown event is logged, not raised, as in the reference. */
static json_object *run_track(exp_client *client, const call_input *in) {
    json_object *key = field(in->call, "event_key");
    exp_status s = exp_track_n(client, json_object_get_string(key), string_length(key), in->user_id,
                               in->user_id_length, in->attributes, in->attribute_count,
                               string_field(in->call, "tags_json"));
    return (s == EXP_OK || s == EXP_ERR_UNKNOWN_EVENT) ? NULL : raised(s);
}

/* set_forced_variation: true when set; the reference's false is an unknown experiment or variation here. */
static json_object *run_set_forced_variation(exp_client *client, const call_input *in) {
    json_object *key = field(in->call, "experiment_key"), *variation = field(in->call, "variation_key");
    exp_status s = exp_set_forced_variation_n(client, json_object_get_string(key), string_length(key), in->user_id,
                                              in->user_id_length, variation ? json_object_get_string(variation) : NULL,
                                              variation ? string_length(variation) : 0);
    if (s == EXP_OK || s == EXP_ERR_UNKNOWN_EXPERIMENT || s == EXP_ERR_UNKNOWN_VARIATION)
        return json_object_new_boolean(s == EXP_OK);
    return raised(s);
}

/* get_forced_variation: the key or null (null for an unknown experiment too, as the reference). */
static json_object *run_get_forced_variation(exp_client *client, const call_input *in) {
    json_object *key = field(in->call, "experiment_key"), *out = NULL;
    char *variation = NULL;
    size_t length = 0;
    exp_status s = exp_get_forced_variation_n(client, json_object_get_string(key), string_length(key), in->user_id,
                                              in->user_id_length, &variation, &length);
    if (s == EXP_OK && variation) out = json_object_new_string_len(variation, (int)length);
    else if (s != EXP_OK && s != EXP_ERR_UNKNOWN_EXPERIMENT) out = raised(s);
    exp_free(variation);
    return out;
}

static json_object *run_call(exp_client *client, const char *kind, const call_input *in) {
    if (strcmp(kind, "set_forced_variation") == 0) return run_set_forced_variation(client, in);
    if (strcmp(kind, "get_forced_variation") == 0) return run_get_forced_variation(client, in);
    if (strcmp(kind, "decide") == 0) return run_decide(client, in);
    if (strcmp(kind, "decide_all") == 0) return run_decide_all(client, in);
    if (strcmp(kind, "decide_for_keys") == 0) return run_decide_for_keys(client, in);
    if (strcmp(kind, "activate") == 0) return run_experiment(client, in, 1);
    if (strcmp(kind, "get_variation") == 0) return run_experiment(client, in, 0);
    if (strcmp(kind, "track") == 0) return run_track(client, in);
    return raised(EXP_ERR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------------------------------ */
/* A case                                                                                           */
/* ------------------------------------------------------------------------------------------------ */

static exp_client *make_client(json_object *c, const char *root, capture *captured, char *state_dir) {
    json_object *options = json_object_new_object(), *client_options = field(c, "client");
    json_object *odp = json_object_new_object();   /* as the reference ran: no UPS, ODP off (no network) */
    json_object_object_add(odp, "disabled", json_object_new_boolean(1));
    json_object_object_add(options, "odp", odp);
    json_object_object_add(options, "profile_store", json_object_new_string("none"));
    json_object_object_add(options, "state_dir", json_object_new_string(state_dir));
    json_object_object_add(options, "log_level", json_object_new_string("error"));
    json_object_object_add(options, "default_decide_options",
                           json_object_get(field(client_options, "default_decide_options")));
    exp_client *client = NULL;
    if (exp_client_create(json_object_to_json_string(options), &client) != EXP_OK) {
        fprintf(stderr, "exp_client_create: %s\n", exp_last_error());
        json_object_put(options);
        return NULL;
    }
    json_object_put(options);
    size_t length = 0;
    char *text = NULL, path[4096];
    if (string_field(c, "datafile_text")) {
        json_object *inline_text = field(c, "datafile_text");
        length = string_length(inline_text);
        text = malloc(length + 1);
        memcpy(text, json_object_get_string(inline_text), length + 1);
    } else {
        snprintf(path, sizeof path, "%s/%s", root, string_field(c, "datafile_path"));
        text = read_file(path, &length);
    }
    if (!text || exp_client_start(client, text, length) != EXP_OK)
        fprintf(stderr, "%s: datafile not started: %s\n", string_field(c, "name"), exp_last_error());
    free(text);
    exp_client_set_event_dispatcher(client, capture_event, captured);
    exp_add_notification_listener(client, EXP_NOTIFY_DECISION, capture_notification, captured, NULL);
    exp_add_notification_listener(client, EXP_NOTIFY_TRACK, capture_notification, captured, NULL);
    return client;
}

static int has_tagged_value(json_object *attributes) {
    json_object_object_foreach(attributes, key, value) {
        (void)key;
        if (json_object_is_type(value, json_type_object) && field(value, TAG)) return 1;
    }
    return 0;
}

/* The vector's expectations made whole: a notification without "attributes" has the call's. Attributes
 * reach a listener as JSON, which cannot carry NaN, lists or integers past int64 (README "Notifications"):
 * for calls with such values they are compared on neither side. */
static json_object *comparable(json_object *call, json_object *actual) {
    json_object *expected = NULL, *attributes = field(call, "attributes");
    json_object_deep_copy(field(call, "expect"), &expected, NULL);
    int lossy = has_tagged_value(attributes);
    json_object *sides[2] = {field(expected, "notifications"), field(actual, "notifications")};
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; sides[side] && i < json_object_array_length(sides[side]); i++) {
            json_object *n = json_object_array_get_idx(sides[side], i);
            if (lossy) drop_key(n, "attributes");
            else if (side == 0 && !field(n, "attributes"))
                json_object_object_add(n, "attributes", json_object_get(attributes));
        }
    }
    return expected;
}

static void replay_call(tally *t, exp_client *client, const char *name, size_t index, json_object *call,
                        capture *captured) {
    const char *kind = string_field(call, "call");
    int na = not_applicable_index(kind);
    if (na >= 0) {
        t->not_applicable[na]++;
        return;
    }
    json_object *user_id = field(call, "user_id");
    call_input in = {call, json_object_get_string(user_id), string_length(user_id), NULL, 0, options_of(call)};
    in.attributes = attributes_of(call, &in.attribute_count);
    captured->events = json_object_new_array();
    captured->notifications = json_object_new_array();
    json_object *actual = json_object_new_object();
    json_object_object_add(actual, "result", run_call(client, kind, &in));
    json_object_object_add(actual, "events", captured->events);
    json_object_object_add(actual, "notifications", captured->notifications);
    json_object *expected = comparable(call, actual);
    record(t, name, index, kind, json_object_equal(expected, actual), expected, actual);
    json_object_put(expected);
    json_object_put(actual);
    captured->events = captured->notifications = NULL;
    free(in.attributes);
}

/* Removes the case's state directory (the library keeps plain files there) and the directory itself. */
static void remove_state_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *entry;
    char path[4096];
    while (d && (entry = readdir(d)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

static void replay_case(tally *t, const char *path, const char *root) {
    json_object *c = read_json(path);
    capture captured = {NULL, NULL};
    char state_dir[] = "/tmp/vectors-c-XXXXXX";   /* each client its own state, never the user's */
    if (!c || !mkdtemp(state_dir)) {
        fprintf(stderr, "%s: cannot read the case\n", path);
        t->failed++;
        json_object_put(c);
        return;
    }
    exp_client *client = make_client(c, root, &captured, state_dir);
    json_object *calls = field(c, "calls");
    for (size_t i = 0; client && i < json_object_array_length(calls); i++)
        replay_call(t, client, string_field(c, "name"), i, json_object_array_get_idx(calls, i), &captured);
    if (!client) t->failed += (long)json_object_array_length(calls);
    exp_client_free(client);
    remove_state_dir(state_dir);
    json_object_put(c);
}

int main(int argc, char **argv) {
    tally t = {0};
    const char *root = ".";
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--root") == 0) {
        root = argv[2];
        first = 3;
    }
    char known_path[4096];
    snprintf(known_path, sizeof known_path, "%s/tests/vectors/known_differences.json", root);
    json_object *known = read_json(known_path);
    t.known_differences = field(known, "calls");
    for (int i = first; i < argc; i++) replay_case(&t, argv[i], root);
    json_object_put(known);
    return report(&t);
}
