/*
 * Every timeout-taking call of the C ABI over the edges of the int64 range (issue 35 item 1): 0, 1, -1,
 * INT64_MIN, INT64_MAX and values near where now + timeout overflows, on a ready and on an unready client.
 * A huge timeout means "wait until ready or closed": it must neither trap (overflow) nor return at once.
 *
 *     deadlines <datafile.json> <state_dir>
 */
#define _GNU_SOURCE
#include "experiment.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(condition)                                                                                       \
    do {                                                                                                       \
        if (!(condition)) {                                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #condition,     \
                    exp_last_error());                                                                         \
            failures++;                                                                                        \
        }                                                                                                      \
    } while (0)

/* Timeouts that "wait until ready" (huge, including those whose sum with the clock overflows). */
static const int64_t huge_timeouts[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX - 1000, INT64_MAX / 1000,
                                        INT64_MAX / 1000000, (int64_t)1 << 62};
/* Timeouts that end soon on an unready client (negative: the documented default 2000 ms). */
static const int64_t short_timeouts[] = {0, 1, -1, INT64_MIN};
#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static char *datafile;
static size_t datafile_length;
static char options[4096];

static char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (fread(text, 1, (size_t)size, f) != (size_t)size) { perror(path); exit(2); }
    fclose(f);
    text[size] = 0;
    *length = (size_t)size;
    return text;
}

static exp_client *make_client(int started) {
    exp_client *c = NULL;
    if (exp_client_create(options, &c) != EXP_OK) { fprintf(stderr, "create: %s\n", exp_last_error()); exit(2); }
    if (started && exp_client_start(c, datafile, datafile_length) != EXP_OK) {
        fprintf(stderr, "start: %s\n", exp_last_error());
        exit(2);
    }
    return c;
}

/* One run_when_ready answer, waited for on a condition variable. */
typedef struct answer {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int calls;
    int status;
} answer;

static void answer_init(answer *a) {
    pthread_mutex_init(&a->mutex, NULL);
    pthread_cond_init(&a->cond, NULL);
    a->calls = 0;
    a->status = 1;
}

static void on_ready(int status, void *user_data) {
    answer *a = user_data;
    pthread_mutex_lock(&a->mutex);
    a->calls++;
    a->status = status;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mutex);
}

static int await_answer(answer *a) {
    pthread_mutex_lock(&a->mutex);
    while (a->calls == 0) pthread_cond_wait(&a->cond, &a->mutex);
    int status = a->status;
    pthread_mutex_unlock(&a->mutex);
    return status;
}

static void test_ready_client(void) {
    exp_client *c = make_client(1);
    for (size_t i = 0; i < COUNT(huge_timeouts); i++) {
        CHECK(exp_client_wait_ready(c, huge_timeouts[i]) == EXP_OK);
        answer a;
        answer_init(&a);
        CHECK(exp_client_run_when_ready(c, huge_timeouts[i], on_ready, &a) == EXP_OK);
        CHECK(await_answer(&a) == EXP_OK);
        exp_status flushed = exp_flush_odp_events(c, huge_timeouts[i]);
        CHECK(flushed == EXP_OK || flushed == EXP_ERR_ODP_NOT_ENABLED);
    }
    for (size_t i = 0; i < COUNT(short_timeouts); i++) {
        CHECK(exp_client_wait_ready(c, short_timeouts[i]) == EXP_OK);
        answer a;
        answer_init(&a);
        CHECK(exp_client_run_when_ready(c, short_timeouts[i], on_ready, &a) == EXP_OK);
        CHECK(await_answer(&a) == EXP_OK);
        exp_status flushed = exp_flush_odp_events(c, short_timeouts[i]);
        if (short_timeouts[i] < 0) CHECK(flushed == EXP_ERR_INVALID_ARGUMENT);
        else CHECK(flushed == EXP_OK || flushed == EXP_ERR_ODP_NOT_ENABLED);
    }
    exp_client_close(c);
}

/* wait_ready with a huge timeout on a thread: it ends when the main thread starts the client. */
typedef struct waiter {
    exp_client *client;
    int64_t timeout;
    exp_status status;
} waiter;

static void *wait_on_thread(void *arg) {
    waiter *w = arg;
    w->status = exp_client_wait_ready(w->client, w->timeout);
    return NULL;
}

static void test_unready_client_waits_for_start(void) {
    for (size_t i = 0; i < COUNT(huge_timeouts); i++) {
        exp_client *c = make_client(0);
        waiter w = {c, huge_timeouts[i], 1};
        pthread_t thread;
        pthread_create(&thread, NULL, wait_on_thread, &w);
        answer a;
        answer_init(&a);
        CHECK(exp_client_run_when_ready(c, huge_timeouts[i], on_ready, &a) == EXP_OK);
        CHECK(exp_client_start(c, datafile, datafile_length) == EXP_OK);
        pthread_join(thread, NULL);
        CHECK(w.status == EXP_OK);
        CHECK(await_answer(&a) == EXP_OK);
        exp_client_close(c);
    }
}

static void test_unready_client_huge_wait_ends_at_close(void) {
    exp_client *c = make_client(0);
    answer a;
    answer_init(&a);
    CHECK(exp_client_run_when_ready(c, INT64_MAX, on_ready, &a) == EXP_OK);
    exp_client_close(c);  /* returns once the callback ran */
    CHECK(a.calls == 1 && a.status == EXP_ERR_CLOSED);
}

static void test_unready_client_short_timeouts(void) {
    exp_client *c = make_client(0);
    for (size_t i = 0; i < COUNT(short_timeouts); i++) {
        CHECK(exp_client_wait_ready(c, short_timeouts[i]) == EXP_ERR_TIMEOUT);
        answer a;
        answer_init(&a);
        CHECK(exp_client_run_when_ready(c, short_timeouts[i], on_ready, &a) == EXP_OK);
        CHECK(await_answer(&a) == EXP_ERR_TIMEOUT);
    }
    exp_client_close(c);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: deadlines <datafile.json> <state_dir>\n"); return 2; }
    datafile = read_file(argv[1], &datafile_length);
    snprintf(options, sizeof options, "{\"event_endpoint\": \"none\", \"state_dir\": \"%s\"}", argv[2]);
    test_ready_client();
    test_unready_client_waits_for_start();
    test_unready_client_huge_wait_ends_at_close();
    test_unready_client_short_timeouts();
    free(datafile);
    if (failures) { fprintf(stderr, "%d checks failed\n", failures); return 1; }
    puts("deadlines: every timeout-taking call held over the int64 range");
    return 0;
}
