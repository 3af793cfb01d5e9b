/*
 * Kameleoon and Sigma calls of the C ABI (issue 17 item 5), as a C program uses them:
 *   - exp_client_run_when_ready: answered on the calling thread when ready, from a library thread on a
 *     timeout, when a datafile arrives, and with EXP_ERR_CLOSED when the client closes first (the close
 *     returns only after the callback ran, so user_data on the stack stays valid);
 *   - exp_track_conversion_with_callback / exp_flush_user_with_callback / exp_client_flush_async against a
 *     real HTTP endpoint on 127.0.0.1 (tests/support/event_receiver.h) that acknowledges, then fails every
 *     request; a host dispatcher; event_endpoint "none";
 *   - exp_force_include_key / exp_force_exclude_key / exp_force_clear_key and the exp_experiment_flag_*
 *     getters on the demo datafile.
 *
 *     callbacks <datafile.json> <state_dir>
 */
#define _GNU_SOURCE
#include "experiment.h"
#include "event_receiver.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(condition)                                                                                       \
    do {                                                                                                       \
        if (!(condition)) {                                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #condition,     \
                    exp_last_error());                                                                         \
            failures++;                                                                                        \
        }                                                                                                      \
    } while (0)

/* One callback's outcome, filled by the callback and waited for by the test. */
typedef struct outcome {
    pthread_mutex_t mutex;
    pthread_cond_t done_cond;
    int calls;
    int status;
    size_t sent;
    pthread_t thread;
} outcome;

static void outcome_init(outcome *o) {
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mutex, NULL);
    pthread_cond_init(&o->done_cond, NULL);
    o->status = 1;
}

static void outcome_destroy(outcome *o) {
    pthread_mutex_destroy(&o->mutex);
    pthread_cond_destroy(&o->done_cond);
}

static void record(outcome *o, int status, size_t sent) {
    pthread_mutex_lock(&o->mutex);
    o->calls++;
    o->status = status;
    o->sent = sent;
    o->thread = pthread_self();
    pthread_cond_broadcast(&o->done_cond);
    pthread_mutex_unlock(&o->mutex);
}

/* Waits (up to 30 s: a bound against hanging, not a timing assertion) for the first call. */
static int wait_called(outcome *o) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&o->mutex);
    while (o->calls == 0 && pthread_cond_timedwait(&o->done_cond, &o->mutex, &until) == 0) {}
    int calls = o->calls;
    pthread_mutex_unlock(&o->mutex);
    return calls;
}

static void on_ready(int status, void *user_data) { record(user_data, status, 0); }

static void on_delivery(exp_status status, size_t sent, void *user_data) { record(user_data, (int)status, sent); }

static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(2); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (fread(text, 1, (size_t)size, file) != (size_t)size) { perror(path); exit(2); }
    text[size] = 0;
    fclose(file);
    *length = (size_t)size;
    return text;
}

static exp_client *make_client(const char *options, const char *datafile, size_t length) {
    exp_client *c = NULL;
    if (exp_client_create(options, &c) != EXP_OK) { fprintf(stderr, "create: %s\n", exp_last_error()); exit(2); }
    if (datafile && exp_client_start(c, datafile, length) != EXP_OK) {
        fprintf(stderr, "start: %s\n", exp_last_error());
        exit(2);
    }
    return c;
}

static void test_run_when_ready(const char *datafile, size_t length) {
    /* Ready already: answered on this thread before the call returns. */
    exp_client *c = make_client("{\"event_endpoint\": \"none\"}", datafile, length);
    outcome o;
    outcome_init(&o);
    CHECK(exp_client_run_when_ready(c, 1000, on_ready, &o) == EXP_OK);
    CHECK(o.calls == 1 && o.status == EXP_OK && pthread_equal(o.thread, pthread_self()));
    CHECK(exp_client_run_when_ready(c, 1000, NULL, &o) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_client_run_when_ready(NULL, 1000, on_ready, &o) == EXP_ERR_INVALID_ARGUMENT);
    exp_client_free(c);
    CHECK(o.calls == 1);
    outcome_destroy(&o);

    /* Not started: a timeout, from a library thread. */
    c = make_client("{\"event_endpoint\": \"none\"}", NULL, 0);
    outcome_init(&o);
    CHECK(exp_client_run_when_ready(c, 20, on_ready, &o) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_ERR_TIMEOUT && !pthread_equal(o.thread, pthread_self()));
    outcome_destroy(&o);

    /* A datafile arrives while it waits: EXP_OK. */
    outcome_init(&o);
    CHECK(exp_client_run_when_ready(c, 60000, on_ready, &o) == EXP_OK);
    CHECK(exp_client_start(c, datafile, length) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_OK);
    exp_client_free(c);
    CHECK(o.calls == 1);
    outcome_destroy(&o);

    /* Closed first: EXP_ERR_CLOSED, delivered before exp_client_close returns (o lives on this stack). */
    c = make_client("{\"event_endpoint\": \"none\"}", NULL, 0);
    outcome waits[4];
    for (int i = 0; i < 4; i++) {
        outcome_init(&waits[i]);
        CHECK(exp_client_run_when_ready(c, -1, on_ready, &waits[i]) == EXP_OK);
    }
    CHECK(exp_client_close(c) == EXP_OK);
    for (int i = 0; i < 4; i++) {
        CHECK(waits[i].calls == 1 && waits[i].status == EXP_ERR_CLOSED);
        outcome_destroy(&waits[i]);
    }
    outcome_init(&o);
    CHECK(exp_client_run_when_ready(c, 10, on_ready, &o) == EXP_ERR_CLOSED);
    exp_client_free(c);
    CHECK(o.calls == 0);
    outcome_destroy(&o);
}

/* A ready callback that closes its own client (allowed: it runs on a library thread holding no lock). */
static void close_from_callback(int status, void *user_data) {
    exp_client *c = user_data;
    (void)status;
    exp_client_close(c);
}

static void test_close_inside_callback(void) {
    exp_client *c = make_client("{\"event_endpoint\": \"none\"}", NULL, 0);
    CHECK(exp_client_run_when_ready(c, 10, close_from_callback, c) == EXP_OK);
    exp_client_free(c);  /* waits for the callback, which closed the client itself */
}

static void test_deliveries(const char *datafile, size_t length, const char *state_dir) {
    int port = receiver_start(0);
    char options[1024];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:%d/v1/events\","
             " \"event_flush_interval_ms\": 20, \"close_timeout_ms\": 3000, \"log_level\": \"error\"}",
             state_dir, port);
    exp_client *c = make_client(options, datafile, length);

    /* Delivered: EXP_OK, one event sent, on a library thread. */
    outcome o;
    outcome_init(&o);
    long before = atomic_load(&receiver_visitors);
    CHECK(exp_track_conversion_with_callback(c, "user-1", 128763, 10.0, on_delivery, &o) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_OK && o.sent == 1);
    CHECK(!pthread_equal(o.thread, pthread_self()));
    CHECK(atomic_load(&receiver_visitors) == before + 1);
    outcome_destroy(&o);

    /* No pending data: EXP_OK, nothing sent, on this thread. */
    outcome_init(&o);
    CHECK(exp_flush_user_with_callback(c, "user-2", on_delivery, &o) == EXP_OK);
    CHECK(o.calls == 1 && o.status == EXP_OK && o.sent == 0 && pthread_equal(o.thread, pthread_self()));
    outcome_destroy(&o);

    /* Pending user data flushed: delivered. */
    outcome_init(&o);
    CHECK(exp_add_user_data(c, "user-2", "{\"type\": \"interest\", \"index\": 2}") == EXP_OK);
    CHECK(exp_flush_user_with_callback(c, "user-2", on_delivery, &o) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_OK && o.sent == 1);
    outcome_destroy(&o);

    /* Argument errors: the callback is never called. */
    outcome_init(&o);
    CHECK(exp_track_conversion_with_callback(c, "user-1", -1, NAN, on_delivery, &o) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_track_conversion_with_callback(c, "user-1", 1, NAN, NULL, &o) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_flush_user_with_callback(c, NULL, on_delivery, &o) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_client_flush_async(c, NULL, &o) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(o.calls == 0);
    outcome_destroy(&o);

    /* The endpoint fails every request: EXP_ERR_DELIVERY_FAILED, the event stays queued for a retry. */
    receiver_fail_every = 1;
    outcome_init(&o);
    CHECK(exp_track_conversion_with_callback(c, "user-3", 42, NAN, on_delivery, &o) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_ERR_DELIVERY_FAILED && o.sent == 0);
    outcome_destroy(&o);

    /* The endpoint recovers: the asynchronous flush delivers the retried event and counts it. */
    receiver_fail_every = 0;
    outcome_init(&o);
    CHECK(exp_client_flush_async(c, on_delivery, &o) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_OK && o.sent >= 1);
    outcome_destroy(&o);
    char *stats = NULL;
    CHECK(exp_client_stats(c, &stats) == EXP_OK && strstr(stats, "\"pending\":0") != NULL);
    exp_free(stats);

    /* Callbacks pending at close are all called before exp_client_close returns. */
    outcome many[8];
    for (int i = 0; i < 8; i++) {
        outcome_init(&many[i]);
        CHECK(exp_track_conversion_with_callback(c, "user-4", 7 + i, 1.0, on_delivery, &many[i]) == EXP_OK);
    }
    CHECK(exp_client_close(c) == EXP_OK);
    for (int i = 0; i < 8; i++) {
        CHECK(many[i].calls == 1 && many[i].status == EXP_OK && many[i].sent == 1);
        outcome_destroy(&many[i]);
    }
    outcome_init(&o);
    CHECK(exp_client_flush_async(c, on_delivery, &o) == EXP_ERR_CLOSED);
    CHECK(exp_track_conversion_with_callback(c, "user-4", 1, 1.0, on_delivery, &o) == EXP_ERR_CLOSED);
    exp_client_free(c);
    CHECK(o.calls == 0);
    outcome_destroy(&o);
}

static int refusing_dispatcher(const exp_event *event, void *user_data) {
    (void)event;
    return *(int *)user_data;
}

static void test_host_dispatcher_and_none(const char *datafile, size_t length) {
    exp_client *c = make_client("{\"event_endpoint\": \"none\", \"log_level\": \"error\"}", datafile, length);
    outcome o;
    /* event_endpoint "none", no dispatcher: nowhere to go. */
    outcome_init(&o);
    CHECK(exp_track_conversion_with_callback(c, "user-1", 5, NAN, on_delivery, &o) == EXP_OK);
    CHECK(o.calls == 1 && o.status == EXP_ERR_DELIVERY_FAILED && o.sent == 0);
    outcome_destroy(&o);
    /* A host dispatcher: its answer, on this thread. */
    int answer = 0;
    CHECK(exp_client_set_event_dispatcher(c, refusing_dispatcher, &answer) == EXP_OK);
    outcome_init(&o);
    CHECK(exp_track_conversion_with_callback(c, "user-1", 5, NAN, on_delivery, &o) == EXP_OK);
    CHECK(o.calls == 1 && o.status == EXP_OK && o.sent == 1 && pthread_equal(o.thread, pthread_self()));
    outcome_destroy(&o);
    answer = 1;
    outcome_init(&o);
    CHECK(exp_track_conversion_with_callback(c, "user-1", 5, NAN, on_delivery, &o) == EXP_OK);
    CHECK(o.calls == 1 && o.status == EXP_ERR_DELIVERY_FAILED && o.sent == 0);
    outcome_destroy(&o);
    /* Nothing to flush with a host dispatcher. */
    outcome_init(&o);
    CHECK(exp_client_flush_async(c, on_delivery, &o) == EXP_OK);
    CHECK(wait_called(&o) == 1 && o.status == EXP_OK && o.sent == 0);
    outcome_destroy(&o);
    exp_client_free(c);
}

static void test_sigma_by_key(const char *datafile, size_t length) {
    exp_client *idle = make_client("{\"event_endpoint\": \"none\"}", NULL, 0);
    CHECK(exp_force_include_key(idle, "qa", "checkout_redesign_ab", 1) == EXP_ERR_NOT_READY);
    exp_client_free(idle);

    exp_client *c = make_client("{\"event_endpoint\": \"none\"}", datafile, length);
    CHECK(exp_force_include_key(c, "qa", "no_such_experiment", 0) == EXP_ERR_UNKNOWN_EXPERIMENT);
    CHECK(exp_force_include_key(c, "qa", "checkout_redesign_ab", 2) == EXP_ERR_UNKNOWN_VARIATION);
    CHECK(exp_force_include_key(c, "qa", "checkout_redesign_ab", -2) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_force_include_key(c, NULL, "checkout_redesign_ab", 0) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_force_include_key(c, "qa", "checkout_redesign_ab", 1) == EXP_OK);
    char *variation = NULL;
    CHECK(exp_get_variation(c, "checkout_redesign_ab", "qa", NULL, 0, &variation) == EXP_OK && variation &&
          strcmp(variation, "one_page_checkout") == 0);
    exp_free(variation);

    /* The experiment's flag values. */
    exp_experiment *e = NULL;
    CHECK(exp_get_experiment(c, "qa", "checkout_redesign_ab", NULL, 0, &e) == EXP_OK && e);
    int on = -1, found = 0;
    CHECK(exp_experiment_flag_bool(e, "checkout_redesign", NULL, &on, &found) == EXP_OK && found && on == 1);
    int64_t steps = 0;
    CHECK(exp_experiment_flag_int(e, "checkout_redesign", "steps", &steps, &found) == EXP_OK && found && steps == 1);
    char *color = NULL;
    CHECK(exp_experiment_flag_string(e, "checkout_redesign", "button_color", &color, &found) == EXP_OK && found &&
          color && strcmp(color, "green") == 0);
    exp_free(color);
    char *json = NULL;
    CHECK(exp_experiment_flag_json(e, "checkout_redesign", "steps", &json, &found) == EXP_ERR_TYPE_MISMATCH);
    double contrast = 0;
    CHECK(exp_experiment_flag_double(e, "dark_mode", "contrast", &contrast, &found) == EXP_ERR_NOT_FOUND);
    CHECK(exp_experiment_flag_bool(e, "nope", NULL, &on, &found) == EXP_ERR_UNKNOWN_FLAG);
    CHECK(exp_experiment_flag_bool(e, "checkout_redesign", "nope", &on, &found) == EXP_ERR_NOT_FOUND);
    CHECK(exp_experiment_flag_int(e, "checkout_redesign", NULL, &steps, &found) == EXP_ERR_TYPE_MISMATCH);
    CHECK(exp_experiment_flag_bool(NULL, "checkout_redesign", NULL, &on, &found) == EXP_ERR_INVALID_ARGUMENT);
    CHECK(exp_experiment_flag_bool(e, "checkout_redesign", NULL, NULL, &found) == EXP_ERR_INVALID_ARGUMENT);
    exp_experiment_free(e);

    /* Excluded by key: out of the experiment; cleared by key: bucketed again. */
    CHECK(exp_force_exclude_key(c, "qa", "checkout_redesign_ab") == EXP_OK);
    CHECK(exp_get_variation(c, "checkout_redesign_ab", "qa", NULL, 0, &variation) == EXP_OK && variation == NULL);
    CHECK(exp_force_clear_key(c, "qa", "checkout_redesign_ab") == EXP_OK);
    CHECK(exp_force_clear_key(c, "qa", "nope") == EXP_ERR_UNKNOWN_EXPERIMENT);
    exp_client_free(c);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s <datafile.json> <state_dir>\n", argv[0]); return 2; }
    size_t length = 0;
    char *datafile = read_file(argv[1], &length);
    test_run_when_ready(datafile, length);
    test_close_inside_callback();
    test_deliveries(datafile, length, argv[2]);
    test_host_dispatcher_and_none(datafile, length);
    test_sigma_by_key(datafile, length);
    free(datafile);
    if (failures) { fprintf(stderr, "%d checks failed\n", failures); return 1; }
    puts("callbacks: all checks passed");
    return 0;
}
