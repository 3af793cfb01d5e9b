/*
 * callbacks.c — Kameleoon's asynchronous calls under ThreadSanitizer / AddressSanitizer: 4 threads each
 * register run-when-ready waiters on a client that is not ready yet, then (once a fifth thread started it)
 * track conversions with completion callbacks and start asynchronous flushes, against an HTTP server in this
 * process on 127.0.0.1 that answers every third request with 500; the client is closed while callbacks are
 * pending. Every callback must have been called exactly once when exp_client_close returns (the counters
 * live in this program: a callback after the close would be a use of freed state).
 *
 *   callbacks DATAFILE STATE_DIR
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment.h"
#include "event_receiver.h"

enum { THREADS = 4, CALLS_PER_THREAD = 100 };

static exp_client *g_client;
static atomic_long g_registered; /* calls that returned EXP_OK, so owe exactly one callback */
static atomic_long g_called;
static atomic_long g_delivered;

static void on_ready(int status, void *user_data) {
    (void)status;
    atomic_fetch_add((atomic_long *)user_data, 1);
    atomic_fetch_add(&g_called, 1);
}

static void on_delivery(exp_status status, size_t sent, void *user_data) {
    (void)user_data;
    if (status == EXP_OK) atomic_fetch_add(&g_delivered, (long)sent);
    atomic_fetch_add(&g_called, 1);
}

static atomic_long g_ready_answers;
static atomic_int g_started;

static void *work(void *context) {
    long id = (long)context;
    char user[32];
    for (int i = 0; i < CALLS_PER_THREAD; ++i) {
        if (exp_client_run_when_ready(g_client, i % 7 == 0 ? 0 : 5000, on_ready, &g_ready_answers) == EXP_OK)
            atomic_fetch_add(&g_registered, 1);
    }
    while (!atomic_load(&g_started)) usleep(1000);
    for (int i = 0; i < CALLS_PER_THREAD; ++i) {
        if (exp_client_run_when_ready(g_client, 5000, on_ready, &g_ready_answers) == EXP_OK)
            atomic_fetch_add(&g_registered, 1);
        snprintf(user, sizeof user, "user-%ld-%d", id, i % 13);
        if (exp_track_conversion_with_callback(g_client, user, 100 + i, 1.5, on_delivery, NULL) == EXP_OK)
            atomic_fetch_add(&g_registered, 1);
        if (i % 50 == 0 && exp_client_flush_async(g_client, on_delivery, NULL) == EXP_OK)
            atomic_fetch_add(&g_registered, 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: callbacks DATAFILE STATE_DIR\n"); return 2; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *datafile = malloc((size_t)length);
    if (fread(datafile, 1, (size_t)length, file) != (size_t)length) { perror(argv[1]); return 2; }
    fclose(file);

    int port = receiver_start(3);
    char options[512];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:%d/v1/events\", "
             "\"event_batch_size\": 25, \"event_flush_interval_ms\": 10, \"close_timeout_ms\": 300, \"log_level\": \"error\"}",
             argv[2], port);
    if (exp_client_create(options, &g_client) != EXP_OK) { fprintf(stderr, "%s\n", exp_last_error()); return 1; }

    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, work, (void *)t);
    usleep(20000);
    if (exp_client_start(g_client, datafile, (size_t)length) != EXP_OK) { fprintf(stderr, "%s\n", exp_last_error()); return 1; }
    atomic_store(&g_started, 1);
    for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
    exp_client_close(g_client);  /* every pending callback runs before this returns */
    long registered = atomic_load(&g_registered), called = atomic_load(&g_called);
    exp_client_free(g_client);
    free(datafile);
    printf("%ld callbacks registered, %ld called, %ld events delivered\n", registered, called,
           atomic_load(&g_delivered));
    if (registered != called) {
        fprintf(stderr, "callbacks: %ld registered but %ld called by the time exp_client_close returned\n",
                registered, called);
        return 1;
    }
    return 0;
}
