/*
 * quickstart.c — a first tour of libexperiment's C API.
 *
 * It loads a datafile (an Optimizely v4 JSON project configuration), decides feature flags for a few
 * users through user contexts (as Optimizely's `user = create_user_context(id, attrs); user.decide(key)`),
 * forces a decision in one context, runs a classic A/B experiment, records a conversion, and shows how
 * stored user properties and errors work. Every event the library would send is handed to our own callback, which just prints it.
 *
 * Build and run from the repository root:
 *
 *     cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude examples/c/quickstart.c \
 *        -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -o quickstart
 *     ./quickstart examples/datafiles/demo.json
 *
 * The program exits with status 1 if any call that should succeed fails, so it doubles as a smoke test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"

/* Any call that must succeed goes through CHECK: on failure it prints the library's message and exits. */
#define CHECK(call)                                                                               \
    do {                                                                                          \
        exp_status check_status_ = (call);                                                        \
        if (check_status_ != EXP_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,              \
                    exp_status_str(check_status_), exp_last_error());                             \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* Reads a whole file into memory. The library does not need a NUL terminator: it takes a length. */
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

/* The event dispatcher. A real application would POST event->body to event->url (or queue it);
 * here we only print what would be sent. It runs on the thread whose call produced the event.
 * Returning 0 tells the library the event was accepted. */
static int print_event(const exp_event *event, void *user_data) {
    int *event_count = user_data;
    ++*event_count;
    printf("    [event] %s %s (%zu bytes of JSON)\n", event->http_verb, event->url, event->body_length);
    return 0;
}

/* Prints one decision. Strings in an exp_decision stay valid until exp_decision_release(). */
static void print_decision(const char *user_id, const exp_decision *d) {
    printf("  %-8s %-18s variation=%-18s rule=%-28s enabled=%d\n", user_id, d->flag_key,
           d->variation_key ? d->variation_key : "(none)", d->rule_key ? d->rule_key : "(none)",
           d->enabled);
    printf("  %-8s %-18s variables=%s\n", "", "", d->variables_json);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/datafiles/demo.json";
    printf("libexperiment %s (built against header %s)\n\n", exp_version(), EXP_VERSION_STRING);

    /* 1. Create a client. Options are a JSON object; unknown keys are rejected, not ignored. */
    exp_client *client = NULL;
    CHECK(exp_client_create("{\"sdk_key\": \"DemoShopProduction1234\"}", &client));

    /* 2. Start it with a datafile. The buffer is only borrowed for the call. */
    size_t datafile_length = 0;
    char *datafile = read_file(path, &datafile_length);
    if (!datafile) { perror(path); exp_client_free(client); return 1; }
    CHECK(exp_client_start(client, datafile, datafile_length));
    free(datafile);

    /* 3. Route events to our callback instead of the network. */
    int event_count = 0;
    CHECK(exp_client_set_event_dispatcher(client, print_event, &event_count));

    /* 4. Decide flags through user contexts: a context holds a user id and its attributes (typed:
     *    strings, integers, doubles, booleans; validated and copied once, here), then decides for that
     *    user. Every string the context calls take comes with its length: EXP_STR(s) is `s, strlen(s)`. */
    puts("Decisions:");
    struct {
        const char *user_id;
        exp_attribute attributes[3];
        size_t count;
    } users[] = {
        {"user-3", {exp_attr_string("country", "FR"), exp_attr_double("cart_value", 80.0),
                    exp_attr_int("age", 30)}, 3},                           /* a high-value adult cart */
        {"user-2", {exp_attr_string("country", "NL")}, 1},                  /* ships to the Netherlands */
        {"bob", {exp_attr_string("email", "bob@demo-shop.example"),
                 exp_attr_bool("beta_tester", 0)}, 2},                      /* an employee */
    };
    const char *flags[] = {"checkout_redesign", "free_shipping", "search_ranking"};
    for (size_t u = 0; u < COUNT(users); u++) {
        exp_user *user = NULL;
        CHECK(exp_user_create(client, EXP_STR(users[u].user_id), users[u].attributes, users[u].count, &user));
        for (size_t f = 0; f < COUNT(flags); f++) {
            exp_decision d = {0};  /* must start zeroed */
            CHECK(exp_user_decide(user, EXP_STR(flags[f]), 0, &d));
            print_decision(users[u].user_id, &d);
            exp_decision_release(&d);
        }
        exp_user_free(user);
    }

    /* The same decision without a context: the id-based calls take the user id and attributes each time. */
    exp_decision by_id = {0};
    CHECK(exp_decide(client, "user-2", "free_shipping", users[1].attributes, users[1].count, 0, &by_id));
    exp_decision_release(&by_id);

    /* 4b. Forced decisions live in the context that sets them (QA previews a variation): another context
     *     of the same user id is not affected. Attributes can change on the context too. */
    puts("\nForced decision in one context:");
    exp_user *qa = NULL, *other = NULL;
    CHECK(exp_user_create(client, EXP_STR("user-2"), users[1].attributes, users[1].count, &qa));
    CHECK(exp_user_create(client, EXP_STR("user-2"), users[1].attributes, users[1].count, &other));
    CHECK(exp_user_set_forced_decision(qa, EXP_STR("checkout_redesign"), NULL, 0, EXP_STR("on")));
    exp_value premium = {EXP_VALUE_STRING, 0, 0, 0.0, "premium"};
    CHECK(exp_user_set_attribute(qa, EXP_STR("plan"), &premium));
    exp_decision forced = {0}, unforced = {0};
    CHECK(exp_user_decide(qa, EXP_STR("checkout_redesign"), EXP_DECIDE_DISABLE_DECISION_EVENT, &forced));
    CHECK(exp_user_decide(other, EXP_STR("checkout_redesign"), EXP_DECIDE_DISABLE_DECISION_EVENT, &unforced));
    print_decision("qa", &forced);
    print_decision("other", &unforced);
    int forced_ok = forced.variation_key != NULL && strcmp(forced.variation_key, "on") == 0;
    exp_decision_release(&forced);
    exp_decision_release(&unforced);
    exp_user_free(other);
    if (!forced_ok) {
        fprintf(stderr, "expected the forced variation \"on\" in the qa context\n");
        return 1;
    }

    /* 5. Decide every flag at once. Ask how many flags there are, then pass an array that big.
     *    EXP_DECIDE_DISABLE_DECISION_EVENT: no impression events for this call. */
    puts("\nAll flags for user-3:");
    size_t capacity = 0, filled = 0;
    CHECK(exp_flag_count(client, &capacity));
    exp_decision *all = calloc(capacity, sizeof *all);
    if (!all) { perror("calloc"); return 1; }
    CHECK(exp_decide_all(client, "user-3", users[0].attributes, users[0].count,
                         EXP_DECIDE_DISABLE_DECISION_EVENT, all, capacity, &filled));
    for (size_t i = 0; i < filled; i++) print_decision("user-3", &all[i]);
    exp_decisions_release(all, filled);
    free(all);

    /* 6. A classic A/B experiment. "homepage_banner_test" shares a mutually exclusive group with the
     *    search experiment, and targets mobile app 3.x users. exp_activate returns the variation key
     *    (NULL when the user is not in the experiment) and records an impression. */
    puts("\nExperiment homepage_banner_test:");
    exp_attribute mobile[] = {exp_attr_string("platform", "ios"), exp_attr_string("app_version", "3.2.0")};
    char *variation_key = NULL;
    CHECK(exp_activate(client, "homepage_banner_test", "user-4", mobile, COUNT(mobile), &variation_key));
    printf("  user-4 %-18s -> %s\n", "activate", variation_key ? variation_key : "(not in experiment)");

    /* The same decision Kameleoon-style, by experiment id, returning the variation id. "Not targeted"
     * and "not allocated" are normal outcomes here, not failures: show the default experience. */
    const char *trigger_users[] = {"user-4", "user-1"};
    for (size_t i = 0; i < COUNT(trigger_users); i++) {
        char *variation_id = NULL;
        exp_status s = exp_trigger_experiment(client, trigger_users[i], "3003", mobile, COUNT(mobile),
                                              &variation_id);
        switch (s) {
        case EXP_OK:
            printf("  %-6s %-18s -> variation id %s\n", trigger_users[i], "trigger_experiment", variation_id);
            break;
        case EXP_ERR_NOT_TARGETED:
        case EXP_ERR_NOT_ALLOCATED:
            printf("  %-6s %-18s -> %s (default experience)\n", trigger_users[i], "trigger_experiment",
                   exp_status_str(s));
            break;
        default:
            fprintf(stderr, "exp_trigger_experiment failed: %s: %s\n", exp_status_str(s), exp_last_error());
            return 1;
        }
        /* Both calls decide the same thing for user-4: a variation from one means one from the other. */
        if (i == 0 && (variation_key != NULL) != (s == EXP_OK)) {
            fprintf(stderr, "activate and trigger_experiment disagree for user-4\n");
            return 1;
        }
        exp_free(variation_id);
    }
    exp_free(variation_key);

    /* 7. Record a conversion. Tags are a JSON object; "revenue" is an integer number of cents. Through a
     *    context the user's attributes come along; exp_track is the id-based shortcut. */
    puts("\nTrack purchase:");
    CHECK(exp_user_track(qa, EXP_STR("purchase"), "{\"revenue\": 4200, \"category\": \"shoes\", \"value\": 3.5}"));
    CHECK(exp_track(client, "purchase", "user-4", mobile, COUNT(mobile), "{\"revenue\": 1500}"));
    exp_user_free(qa);

    /* 8. Stored user properties: set once, used by every later call for that user. "dark_mode" is on
     *    only for beta testers on app 2.4 or newer, so setting these two properties turns it on. */
    puts("\nUser properties:");
    exp_decision before = {0}, after = {0};
    CHECK(exp_decide(client, "user-42", "dark_mode", NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT, &before));
    print_decision("user-42", &before);
    exp_value yes = {EXP_VALUE_BOOL, 1, 0, 0.0, NULL};
    exp_value version = {EXP_VALUE_STRING, 0, 0, 0.0, "2.5.1"};
    CHECK(exp_set_user_property(client, "user-42", "beta_tester", &yes));
    CHECK(exp_set_user_property(client, "user-42", "app_version", &version));
    CHECK(exp_decide(client, "user-42", "dark_mode", NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT, &after));
    print_decision("user-42", &after);
    int flipped = !before.enabled && after.enabled;
    exp_decision_release(&before);
    exp_decision_release(&after);
    if (!flipped) {
        fprintf(stderr, "expected dark_mode to turn on once user-42 is a beta tester on app 2.5.1\n");
        return 1;
    }

    /* 9. Errors: every call returns a status; exp_last_error() says what went wrong (on this thread). */
    puts("\nError handling:");
    exp_decision missing = {0};
    exp_status s = exp_decide(client, "user-1", "no_such_flag", NULL, 0, 0, &missing);
    printf("  decide(no_such_flag) -> %s: %s\n", exp_status_str(s), exp_last_error());
    if (s != EXP_ERR_UNKNOWN_FLAG || missing.reason_count != 1) {
        fprintf(stderr, "expected EXP_ERR_UNKNOWN_FLAG and the reference's error decision\n");
        return 1;
    }
    /* The decision is the reference SDK's error decision (disabled, its reason): release it as any other. */
    printf("  error decision: enabled %d, reason: %s\n", missing.enabled, missing.reasons[0]);
    exp_decision_release(&missing);

    /* 10. Clean up: close stops the client (later calls fail with EXP_ERR_CLOSED); free releases it. */
    CHECK(exp_client_close(client));
    exp_client_free(client);
    printf("\n%d events dispatched. Done.\n", event_count);
    if (event_count == 0) {
        fprintf(stderr, "expected impression and conversion events to reach the dispatcher\n");
        return 1;
    }
    return 0;
}
