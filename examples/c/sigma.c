/*
 * sigma.c — the Sigma-style calls of libexperiment's C API.
 *
 * For a few users it sets Sigma user properties, reads typed flag values (check_flag), and prints the
 * user's flags (JSON), experiments ("expId.groupIndex|...") and holdouts ("holdoutId.0|..."), then looks
 * one experiment up with its typed parameters and asks whether the user is in a holdout.
 *
 * Build and run from the repository root:
 *
 *     cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude examples/c/sigma.c \
 *        -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -o sigma
 *     ./sigma examples/datafiles/demo.json
 *
 * It exits with status 1 if a call that should succeed fails, so it doubles as a smoke test.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"

#define CHECK(call)                                                                               \
    do {                                                                                          \
        exp_status check_status_ = (call);                                                        \
        if (check_status_ != EXP_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,              \
                    exp_status_str(check_status_), exp_last_error());                             \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

static char *read_file(const char *path, size_t *out_length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    char *buffer = NULL;
    size_t length = 0, capacity = 0, n;
    do {
        if (length == capacity) {
            capacity = capacity ? capacity * 2 : 65536;
            char *grown = realloc(buffer, capacity);
            if (!grown) { free(buffer); fclose(file); return NULL; }
            buffer = grown;
        }
        n = fread(buffer + length, 1, capacity - length, file);
        length += n;
    } while (n > 0);
    int failed = ferror(file);
    fclose(file);
    if (failed) { free(buffer); return NULL; }
    *out_length = length;
    return buffer;
}

/* Prints what Sigma's getUserFeatureFlagsDetails, getAllUserExperiments and getAllUserHoldouts give. */
static void print_user(exp_client *client, const char *user_id, const exp_attribute *attributes, size_t count) {
    char *flags = NULL, *experiments = NULL, *holdouts = NULL;
    CHECK(exp_user_flags_json(client, user_id, attributes, count, &flags));
    CHECK(exp_user_experiments(client, user_id, attributes, count, &experiments));
    CHECK(exp_user_holdouts(client, user_id, attributes, count, &holdouts));
    printf("%s\n  flags:       %s\n  experiments: \"%s\"\n  holdouts:    \"%s\"\n", user_id, flags, experiments,
           holdouts);
    exp_free(flags);
    exp_free(experiments);
    exp_free(holdouts);
}

/* check_flag: a value, no value (not an error), or an error such as a type mismatch. */
static void print_flags(exp_client *client, const char *user_id) {
    int on = 0, found = 0;
    CHECK(exp_flag_bool(client, user_id, "checkout_redesign", NULL, NULL, 0, &on, &found));
    printf("  checkout_redesign enabled: %s\n", found ? (on ? "true" : "false") : "(no value)");

    int64_t steps = 0;
    CHECK(exp_flag_int(client, user_id, "checkout_redesign", "steps", NULL, 0, &steps, &found));
    if (found) printf("  checkout_redesign.steps: %" PRId64 "\n", steps);
    else puts("  checkout_redesign.steps: (no value)");

    char *color = NULL;
    CHECK(exp_flag_string(client, user_id, "checkout_redesign", "button_color", NULL, 0, &color, &found));
    printf("  checkout_redesign.button_color: %s\n", found ? color : "(no value)");
    exp_free(color);

    double contrast = 0;
    CHECK(exp_flag_double(client, user_id, "dark_mode", "contrast", NULL, 0, &contrast, &found));
    if (found) printf("  dark_mode.contrast: %.2f\n", contrast);
    else puts("  dark_mode.contrast: (no value)");

    /* Asking for the wrong type is an error with a message, and the client keeps working. */
    if (exp_flag_int(client, user_id, "checkout_redesign", "button_color", NULL, 0, &steps, &found)
        != EXP_ERR_TYPE_MISMATCH) {
        fprintf(stderr, "expected EXP_ERR_TYPE_MISMATCH\n");
        exit(1);
    }
    printf("  reading button_color as an int: %s (%s)\n", exp_status_str(EXP_ERR_TYPE_MISMATCH), exp_last_error());
}

/* getExperiment: the user's variation and the variation's parameters, typed. */
static void print_experiment(exp_client *client, const char *user_id, const exp_attribute *attributes,
                             size_t count) {
    exp_experiment *experiment = NULL;
    CHECK(exp_get_experiment(client, user_id, "checkout_redesign_ab", attributes, count, &experiment));
    if (!experiment) {
        puts("  checkout_redesign_ab: not in it");
        return;
    }
    printf("  checkout_redesign_ab: variation %s (group %d), parameters %s\n",
           exp_experiment_variation_key(experiment), exp_experiment_group_index(experiment),
           exp_experiment_parameters_json(experiment));
    int badges = 0, found = 0;
    CHECK(exp_experiment_param_bool(experiment, "show_trust_badges", &badges, &found));
    if (found) printf("    show_trust_badges = %s\n", badges ? "true" : "false");
    exp_experiment_free(experiment);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/datafiles/demo.json";
    exp_client *client = NULL;
    CHECK(exp_client_create("{\"sdk_key\": \"DemoShopProduction1234\", \"bucket_by_profile_id\": true,"
                            " \"default_decide_options\": [\"DISABLE_DECISION_EVENT\"]}", &client));
    size_t length = 0;
    char *datafile = read_file(path, &length);
    if (!datafile) { perror(path); exp_client_free(client); return 1; }
    CHECK(exp_client_start(client, datafile, length));
    free(datafile);

    /* Sigma user properties: standard keys and custom.<name>; audiences see them under these names
     * ("email" and "app_version" are in the demo's audiences). profile_id is the bucketing id here. */
    CHECK(exp_set_user_properties(client, "anon-1",
                                  "{\"profile_id\": \"profile-42\", \"email\": \"ann@demo-shop.example\","
                                  " \"app_version\": \"3.1.0\", \"os_name\": \"iOS\", \"custom.isAuthorized\": true}"));
    CHECK(exp_edit_user_properties(client, "anon-1", "{\"geo_country\": \"NL\"}"));
    char *properties = NULL;
    CHECK(exp_get_user_properties_json(client, "anon-1", &properties));
    printf("properties of anon-1: %s\n\n", properties);
    exp_free(properties);

    exp_attribute premium[] = {{"plan", {EXP_VALUE_STRING, 0, 0, 0.0, "premium"}}};
    print_user(client, "anon-1", premium, 1);
    print_flags(client, "anon-1");
    print_experiment(client, "anon-1", premium, 1);

    /* Find a user the global holdout holds (5% of users) and show what that means. */
    char user_id[32];
    for (int i = 0; i < 1000; i++) {
        int held = 0;
        snprintf(user_id, sizeof user_id, "user-%d", i);
        CHECK(exp_get_holdout(client, user_id, "q4_global_holdout", NULL, 0, &held));
        if (held) break;
    }
    puts("");
    print_user(client, user_id, premium, 1);
    print_flags(client, user_id);
    print_experiment(client, user_id, premium, 1);

    /* Unknown names are errors, not "no value". */
    int held = 0;
    if (exp_get_holdout(client, "anon-1", "no_such_holdout", NULL, 0, &held) != EXP_ERR_NOT_FOUND) return 1;
    printf("\nunknown holdout: %s\n", exp_last_error());

    CHECK(exp_clear_user_properties(client, "anon-1"));
    CHECK(exp_client_close(client));
    exp_client_free(client);
    return 0;
}
