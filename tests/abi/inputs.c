/*
 * inputs.c — the C ABI of issue 15: the "other" and big-integer attribute kinds, the length-delimited (_n)
 * entry points with NUL bytes in user ids, keys and strings, and the reference SDK's error decisions that
 * exp_decide fills for not-ready and unknown-flag. Built with -Wall -Wextra -Werror -pedantic (make test-c);
 * exits 1 with a message on the first failed expectation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"

static int failures;

#define EXPECT(condition)                                                                          \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__, __LINE__, #condition, \
                    exp_last_error());                                                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* One flag per condition: a rollout whose only rule targets an audience of that one condition. */
static const char datafile[] =
    "{\"version\": \"4\", \"projectId\": \"1\", \"accountId\": \"1\", \"revision\": \"1\", \"anonymizeIP\": false,"
    " \"botFiltering\": false, \"sendFlagDecisions\": true,"
    " \"attributes\": [{\"id\": \"900\", \"key\": \"a\"}, {\"id\": \"901\", \"key\": \"n\\u0000ul\"}],"
    " \"audiences\": ["
    "  {\"id\": \"1\", \"name\": \"exists\", \"conditions\": \"[\\\"or\\\", {\\\"name\\\": \\\"a\\\", \\\"type\\\": "
    "\\\"custom_attribute\\\", \\\"match\\\": \\\"exists\\\"}]\"},"
    "  {\"id\": \"2\", \"name\": \"exact42\", \"conditions\": \"[\\\"or\\\", {\\\"name\\\": \\\"a\\\", \\\"type\\\": "
    "\\\"custom_attribute\\\", \\\"match\\\": \\\"exact\\\", \\\"value\\\": 42}]\"},"
    "  {\"id\": \"3\", \"name\": \"notgt5\", \"conditions\": \"[\\\"not\\\", {\\\"name\\\": \\\"a\\\", \\\"type\\\": "
    "\\\"custom_attribute\\\", \\\"match\\\": \\\"gt\\\", \\\"value\\\": 5}]\"},"
    "  {\"id\": \"4\", \"name\": \"nul\", \"conditions\": \"[\\\"or\\\", {\\\"name\\\": \\\"n\\\\u0000ul\\\", "
    "\\\"type\\\": \\\"custom_attribute\\\", \\\"match\\\": \\\"exact\\\", \\\"value\\\": \\\"v\\\\u0000w\\\"}]\"}],"
    " \"typedAudiences\": [], \"experiments\": [], \"groups\": [],"
    " \"featureFlags\": ["
    "  {\"id\": \"11\", \"key\": \"f_exists\", \"rolloutId\": \"r1\", \"experimentIds\": [], \"variables\": []},"
    "  {\"id\": \"12\", \"key\": \"f_exact42\", \"rolloutId\": \"r2\", \"experimentIds\": [], \"variables\": []},"
    "  {\"id\": \"13\", \"key\": \"f_notgt5\", \"rolloutId\": \"r3\", \"experimentIds\": [], \"variables\": []},"
    "  {\"id\": \"14\", \"key\": \"f_nul\", \"rolloutId\": \"r4\", \"experimentIds\": [], \"variables\": []}],"
    " \"rollouts\": ["
    "  {\"id\": \"r1\", \"experiments\": [{\"id\": \"101\", \"key\": \"rule1\", \"status\": \"Running\", \"layerId\": "
    "\"r1\", \"audienceIds\": [\"1\"], \"forcedVariations\": {}, \"variations\": [{\"id\": \"201\", \"key\": \"on\","
    " \"featureEnabled\": true, \"variables\": []}], \"trafficAllocation\": [{\"entityId\": \"201\", "
    "\"endOfRange\": 10000}]}]},"
    "  {\"id\": \"r2\", \"experiments\": [{\"id\": \"102\", \"key\": \"rule2\", \"status\": \"Running\", \"layerId\": "
    "\"r2\", \"audienceIds\": [\"2\"], \"forcedVariations\": {}, \"variations\": [{\"id\": \"202\", \"key\": \"on\","
    " \"featureEnabled\": true, \"variables\": []}], \"trafficAllocation\": [{\"entityId\": \"202\", "
    "\"endOfRange\": 10000}]}]},"
    "  {\"id\": \"r3\", \"experiments\": [{\"id\": \"103\", \"key\": \"rule3\", \"status\": \"Running\", \"layerId\": "
    "\"r3\", \"audienceIds\": [\"3\"], \"forcedVariations\": {}, \"variations\": [{\"id\": \"203\", \"key\": \"on\","
    " \"featureEnabled\": true, \"variables\": []}], \"trafficAllocation\": [{\"entityId\": \"203\", "
    "\"endOfRange\": 10000}]}]},"
    "  {\"id\": \"r4\", \"experiments\": [{\"id\": \"104\", \"key\": \"rule4\", \"status\": \"Running\", \"layerId\": "
    "\"r4\", \"audienceIds\": [\"4\"], \"forcedVariations\": {}, \"variations\": [{\"id\": \"204\", \"key\": \"on\","
    " \"featureEnabled\": true, \"variables\": []}], \"trafficAllocation\": [{\"entityId\": \"204\", "
    "\"endOfRange\": 10000}]}]}],"
    " \"events\": [{\"id\": \"700\", \"key\": \"purchase\", \"experimentIds\": []}]}";

/* The last event body the library dispatched. */
static char last_body[8192];

static int record(const exp_event *event, void *user_data) {
    (void)user_data;
    size_t length = event->body_length < sizeof last_body - 1 ? event->body_length : sizeof last_body - 1;
    memcpy(last_body, event->body, length);
    last_body[length] = 0;
    return 0;
}

/* Whether `flag` is enabled for the user with attributes (exp_decide, NUL-terminated form). */
static int enabled(exp_client *c, const char *flag, const exp_attribute *attributes, size_t count) {
    exp_decision d;
    memset(&d, 0, sizeof d);
    exp_status status = exp_decide(c, "user-1", flag, attributes, count, EXP_DECIDE_DISABLE_DECISION_EVENT, &d);
    EXPECT(status == EXP_OK);
    int result = d.enabled;
    exp_decision_release(&d);
    return result;
}

static int enabled_n(exp_client *c, const char *user, size_t user_length, const char *flag,
                     const exp_attribute_n *attributes, size_t count) {
    exp_decision d;
    memset(&d, 0, sizeof d);
    exp_status status = exp_decide_n(c, user, user_length, flag, strlen(flag), attributes, count,
                                     EXP_DECIDE_DISABLE_DECISION_EVENT, &d);
    EXPECT(status == EXP_OK);
    int result = d.enabled;
    exp_decision_release(&d);
    return result;
}

static void other_and_big_integers(exp_client *c) {
    /* An "other" value: exists is true, every other condition unknown ("not gt 5" stays unknown: false). */
    exp_attribute other[] = {exp_attr_other("a")};
    EXPECT(enabled(c, "f_exists", other, 1));
    EXPECT(!enabled(c, "f_exact42", other, 1));
    EXPECT(!enabled(c, "f_notgt5", other, 1));

    /* A big integer beyond 64 bits: exists only. Within 64 bits it is an ordinary integer. */
    exp_attribute huge[] = {exp_attr_big_int("a", "-123456789012345678901234567890")};
    EXPECT(enabled(c, "f_exists", huge, 1));
    EXPECT(!enabled(c, "f_exact42", huge, 1));
    EXPECT(!enabled(c, "f_notgt5", huge, 1));
    exp_attribute small[] = {exp_attr_big_int("a", "42")};
    EXPECT(enabled(c, "f_exact42", small, 1));
    exp_attribute three[] = {exp_attr_int("a", 3)};
    EXPECT(enabled(c, "f_notgt5", three, 1));

    /* Malformed decimal text is the caller's mistake. */
    exp_attribute bad[] = {exp_attr_big_int("a", "12x")};
    exp_decision d;
    memset(&d, 0, sizeof d);
    EXPECT(exp_decide(c, "user-1", "f_exists", bad, 1, 0, &d) == EXP_ERR_INVALID_ARGUMENT);
    EXPECT(d.flag_key == NULL);
    exp_attribute unknown_type = exp_attr_null("a");
    unknown_type.value.type = 99;
    EXPECT(exp_decide(c, "user-1", "f_exists", &unknown_type, 1, 0, &d) == EXP_ERR_INVALID_ARGUMENT);
}

static void length_delimited(exp_client *c) {
    static const char user[] = {'u', 0, 's', 'e', 'r'};
    static const char nul_key[] = {'n', 0, 'u', 'l'};
    static const char nul_value[] = {'v', 0, 'w'};
    exp_attribute_n match[] = {exp_attr_string_n(nul_key, sizeof nul_key, nul_value, sizeof nul_value)};
    exp_attribute_n shorter[] = {exp_attr_string_n(nul_key, sizeof nul_key, nul_value, 1)};  /* "v" */
    exp_attribute_n cut_key[] = {exp_attr_string_n(nul_key, 1, nul_value, sizeof nul_value)}; /* key "n" */
    EXPECT(enabled_n(c, user, sizeof user, "f_nul", match, 1));
    EXPECT(!enabled_n(c, user, sizeof user, "f_nul", shorter, 1));
    EXPECT(!enabled_n(c, user, sizeof user, "f_nul", cut_key, 1));

    /* exp_attr_n: any exp_attribute, measured. */
    exp_attribute_n converted[] = {exp_attr_n(exp_attr_big_int("a", "42")), exp_attr_n(exp_attr_other("z"))};
    EXPECT(converted[0].key_length == 1 && converted[0].string_length == 2);
    EXPECT(enabled_n(c, "u", 1, "f_exact42", converted, 2));

    /* The user id reaches the payload whole: "u\u0000ser". */
    exp_decision d;
    memset(&d, 0, sizeof d);
    EXPECT(exp_decide_n(c, user, sizeof user, "f_nul", 5, match, 1, 0, &d) == EXP_OK);
    exp_decision_release(&d);
    EXPECT(exp_flush(c) == EXP_OK);
    EXPECT(strstr(last_body, "\"visitor_id\":\"u\\u0000ser\"") != NULL);
    EXPECT(strstr(last_body, "\"key\":\"n\\u0000ul\"") != NULL);

    /* decide_all_n and decide_for_keys_n; a key with a NUL names no flag. */
    exp_decision all[8];
    memset(all, 0, sizeof all);
    size_t count = 0;
    EXPECT(exp_decide_all_n(c, user, sizeof user, match, 1, EXP_DECIDE_ENABLED_FLAGS_ONLY |
                            EXP_DECIDE_DISABLE_DECISION_EVENT, all, COUNT(all), &count) == EXP_OK);
    EXPECT(count == 1 && strcmp(all[0].flag_key, "f_nul") == 0);
    exp_decisions_release(all, count);
    static const char nul_flag[] = {'f', '_', 'n', 'u', 'l', 0, 'x'};
    const char *keys[] = {"f_nul", nul_flag};
    size_t lengths[] = {5, sizeof nul_flag};
    memset(all, 0, sizeof all);
    EXPECT(exp_decide_for_keys_n(c, user, sizeof user, keys, lengths, 2, match, 1, EXP_DECIDE_DISABLE_DECISION_EVENT,
                                 all, COUNT(all), &count) == EXP_OK);
    EXPECT(count == 2 && all[0].enabled == 1 && all[1].enabled == 0 && strcmp(all[1].flag_key, "f_nul") == 0);
    exp_decisions_release(all, count);
    EXPECT(exp_decide_for_keys_n(c, "u", 1, keys, NULL, 2, NULL, 0, 0, all, COUNT(all), &count) ==
           EXP_ERR_INVALID_ARGUMENT);

    /* Experiments and conversions. */
    char *variation = NULL;
    EXPECT(exp_get_variation_n(c, "nope", 4, user, sizeof user, match, 1, &variation) == EXP_ERR_UNKNOWN_EXPERIMENT);
    EXPECT(exp_activate_n(c, "nope", 4, user, sizeof user, NULL, 0, &variation) == EXP_ERR_UNKNOWN_EXPERIMENT);
    EXPECT(variation == NULL);
    last_body[0] = 0;
    EXPECT(exp_track_n(c, "purchase", 8, user, sizeof user, match, 1, "{\"note\": \"a\\u0000b\"}") == EXP_OK);
    EXPECT(exp_flush(c) == EXP_OK);
    EXPECT(strstr(last_body, "\"visitor_id\":\"u\\u0000ser\"") != NULL);
    EXPECT(exp_track_n(c, "purchase\0x", 10, "u", 1, NULL, 0, NULL) == EXP_ERR_UNKNOWN_EVENT);

    /* Lengths are checked like NUL-terminated strings: a limit, valid UTF-8, NULL only when empty. */
    EXPECT(exp_decide_n(c, "u", EXP_MAX_KEY_BYTES + 1, "f_nul", 5, NULL, 0, 0, &d) == EXP_ERR_TOO_LARGE);
    EXPECT(exp_decide_n(c, "\xff", 1, "f_nul", 5, NULL, 0, 0, &d) == EXP_ERR_INVALID_UTF8);
    EXPECT(exp_decide_n(c, NULL, 3, "f_nul", 5, NULL, 0, 0, &d) == EXP_ERR_INVALID_ARGUMENT);
    EXPECT(exp_decide_n(c, NULL, 0, "f_nul", 5, NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT, &d) == EXP_OK);
    exp_decision_release(&d);
}

/* An A/B experiment whose only variation key holds a NUL byte: the _len calls give all of it. */
static const char nul_key_datafile[] =
    "{\"version\": \"4\", \"projectId\": \"1\", \"accountId\": \"1\", \"revision\": \"1\", \"anonymizeIP\": false,"
    " \"botFiltering\": false, \"attributes\": [], \"audiences\": [], \"typedAudiences\": [], \"groups\": [],"
    " \"experiments\": [{\"id\": \"301\", \"key\": \"exp\", \"status\": \"Running\", \"layerId\": \"l1\","
    " \"audienceIds\": [], \"forcedVariations\": {}, \"variations\": [{\"id\": \"401\", \"key\": \"a\\u0000b\","
    " \"featureEnabled\": true, \"variables\": []}], \"trafficAllocation\": [{\"entityId\": \"401\","
    " \"endOfRange\": 10000}]}],"
    " \"featureFlags\": [{\"id\": \"11\", \"key\": \"flag\", \"rolloutId\": \"\", \"experimentIds\": [\"301\"],"
    " \"variables\": []}], \"rollouts\": [], \"events\": []}";

static void returned_keys_with_nul(const char *options) {
    exp_client *c = NULL;
    EXPECT(exp_client_create(options, &c) == EXP_OK);
    EXPECT(exp_client_start(c, nul_key_datafile, strlen(nul_key_datafile)) == EXP_OK);
    char *variation = NULL;
    size_t length = 99;
    EXPECT(exp_get_variation_len(c, "exp", 3, "u", 1, NULL, 0, &variation, &length) == EXP_OK);
    EXPECT(variation && length == 3 && memcmp(variation, "a\0b", 4) == 0);
    exp_free(variation);
    variation = NULL;
    EXPECT(exp_activate_len(c, "exp", 3, "u", 1, NULL, 0, &variation, NULL) == EXP_OK);
    EXPECT(variation && memcmp(variation, "a\0b", 4) == 0);
    exp_free(variation);
    variation = NULL;
    length = 99;
    EXPECT(exp_get_variation_len(c, "nope", 4, "u", 1, NULL, 0, &variation, &length) == EXP_ERR_UNKNOWN_EXPERIMENT);
    EXPECT(variation == NULL);
    EXPECT(exp_set_forced_variation(c, "exp", "qa", "a") == EXP_ERR_UNKNOWN_VARIATION);
    EXPECT(exp_get_forced_variation_len(c, "exp", "qa", &variation, &length) == EXP_OK);
    EXPECT(variation == NULL && length == 0);
    exp_user *user = NULL;
    EXPECT(exp_user_create(c, "u", 1, NULL, 0, &user) == EXP_OK);
    EXPECT(exp_user_set_forced_decision(user, "flag", 4, NULL, 0, "x\0y", 3) == EXP_OK);
    EXPECT(exp_user_get_forced_decision_len(user, "flag", 4, NULL, 0, &variation, &length) == EXP_OK);
    EXPECT(variation && length == 3 && memcmp(variation, "x\0y", 4) == 0);
    exp_free(variation);
    exp_user_free(user);
    exp_client_free(c);
}

static void error_decisions(exp_client *ready, exp_client *idle) {
    exp_decision d;
    memset(&d, 0, sizeof d);
    EXPECT(exp_decide(ready, "u", "nope", NULL, 0, 0, &d) == EXP_ERR_UNKNOWN_FLAG);
    EXPECT(d.flag_key && strcmp(d.flag_key, "nope") == 0);
    EXPECT(d.enabled == 0 && d.variation_key == NULL && d.rule_key == NULL);
    EXPECT(d.variables_json && strcmp(d.variables_json, "{}") == 0);
    EXPECT(d.reason_count == 1 && strcmp(d.reasons[0], "No flag was found for key \"nope\".") == 0);
    exp_decision_release(&d);
    EXPECT(d.flag_key == NULL);

    EXPECT(exp_decide_n(ready, "u", 1, "nope", 4, NULL, 0, EXP_DECIDE_INCLUDE_REASONS, &d) == EXP_ERR_UNKNOWN_FLAG);
    EXPECT(d.reason_count == 1 && strcmp(d.reasons[0], "No flag was found for key \"nope\".") == 0);
    exp_decision_release(&d);

    EXPECT(exp_decide(idle, "u", "f_exists", NULL, 0, 0, &d) == EXP_ERR_NOT_READY);
    EXPECT(d.flag_key && strcmp(d.flag_key, "f_exists") == 0 && d.enabled == 0);
    EXPECT(d.reason_count == 1 && strcmp(d.reasons[0], "Optimizely SDK not configured properly yet.") == 0);
    exp_decision_release(&d);

    /* Other errors leave the decision empty. */
    EXPECT(exp_decide(ready, "u", "\xff", NULL, 0, 0, &d) == EXP_ERR_INVALID_UTF8);
    EXPECT(d.flag_key == NULL && d.reason_count == 0);
    EXPECT(exp_decide(ready, "u", "nope", NULL, 0, 1u << 30, &d) == EXP_ERR_INVALID_ARGUMENT);
    EXPECT(d.flag_key == NULL);
}

int main(int argc, char **argv) {
    const char *state_dir = argc > 1 ? argv[1] : NULL;
    char options[512];
    snprintf(options, sizeof options, "{\"sdk_key\": \"inputs\", \"profile_store\": \"none\"%s%s%s}",
             state_dir ? ", \"state_dir\": \"" : "", state_dir ? state_dir : "", state_dir ? "\"" : "");
    exp_client *ready = NULL, *idle = NULL;
    if (exp_client_create(options, &ready) != EXP_OK || exp_client_create(options, &idle) != EXP_OK) {
        fprintf(stderr, "exp_client_create: %s\n", exp_last_error());
        return 1;
    }
    if (exp_client_set_event_dispatcher(ready, record, NULL) != EXP_OK ||
        exp_client_start(ready, datafile, strlen(datafile)) != EXP_OK) {
        fprintf(stderr, "start: %s\n", exp_last_error());
        return 1;
    }
    other_and_big_integers(ready);
    length_delimited(ready);
    error_decisions(ready, idle);
    returned_keys_with_nul(options);
    exp_client_free(ready);
    exp_client_free(idle);
    if (failures) {
        fprintf(stderr, "inputs: %d expectation(s) failed\n", failures);
        return 1;
    }
    puts("inputs: the C ABI takes every attribute kind and length-delimited text, and fills error decisions");
    return 0;
}
