/*
 * events.c — the built-in event pipeline under ThreadSanitizer / AddressSanitizer: 4 threads track
 * conversions and decide with impressions while a fifth flushes and reads stats, against an HTTP server in
 * this process on 127.0.0.1 that answers every third request with 500 (so retries and the SQLite queue are
 * exercised), then the client is closed and a second client on the same state directory delivers the rest.
 * Exits 1 when fewer events arrive than were accepted.
 *
 *   events DATAFILE
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

enum { THREADS = 4, EVENTS_PER_THREAD = 1500 };

static atomic_long g_accepted;   /* exp_track / impression calls that returned EXP_OK */

static exp_client *open_client(const char *state_dir, int port, const char *datafile, size_t length) {
    char options[512];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:%d/v1/events\", "
             "\"event_batch_size\": 25, \"event_flush_interval_ms\": 10, \"close_timeout_ms\": 200, \"log_level\": \"error\"}",
             state_dir, port);
    exp_client *client = NULL;
    if (exp_client_create(options, &client) || exp_client_start(client, datafile, length)) {
        fprintf(stderr, "events: cannot create the client: %s\n", exp_last_error());
        exit(1);
    }
    return client;
}

static void *produce(void *context) {
    exp_client *client = context;
    char user[32];
    for (int i = 0; i < EVENTS_PER_THREAD; ++i) {
        snprintf(user, sizeof user, "user-%d", i % 97);
        exp_attribute attributes[1] = {exp_attr_string("country", "NL")};
        if (exp_track(client, "purchase", user, attributes, 1, "{\"revenue\": 10}") == EXP_OK) {
            atomic_fetch_add(&g_accepted, 1);
        }
    }
    return NULL;
}

static atomic_int g_stop;

static void *observe(void *context) {
    exp_client *client = context;
    while (!atomic_load(&g_stop)) {
        char *stats = NULL;
        if (exp_client_stats(client, &stats) == EXP_OK) exp_free(stats);
        (void)exp_flush(client);
        usleep(2000);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: events DATAFILE\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *datafile = malloc((size_t)size);
    if (fread(datafile, 1, (size_t)size, f) != (size_t)size) { perror(argv[1]); return 2; }
    fclose(f);

    int port = receiver_start(3); /* every third request fails: retries and the SQLite queue run */

    char state_dir[] = "/tmp/sanitize-events-XXXXXX";
    if (!mkdtemp(state_dir)) { perror("mkdtemp"); return 1; }
    exp_client *client = open_client(state_dir, port, datafile, (size_t)size);
    pthread_t producers[THREADS], observer;
    for (int i = 0; i < THREADS; ++i) pthread_create(&producers[i], NULL, produce, client);
    pthread_create(&observer, NULL, observe, client);
    for (int i = 0; i < THREADS; ++i) pthread_join(producers[i], NULL);
    atomic_store(&g_stop, 1);
    pthread_join(observer, NULL);
    exp_client_close(client);
    exp_client_free(client);

    /* The next client on the same state directory adopts whatever the first left, in the background (its
     * flush would wait only for its own events): wait until the state file's backlog is empty. */
    client = open_client(state_dir, port, datafile, (size_t)size);
    for (int waited_ms = 0; waited_ms < 60000; waited_ms += 10) {
        char *stats = NULL;
        long backlog = -1;
        if (exp_client_stats(client, &stats) == EXP_OK) {
            const char *at = strstr(stats, "\"backlog\":");
            backlog = at ? atol(at + strlen("\"backlog\":")) : -1;
            exp_free(stats);
        }
        if (backlog == 0) break;
        usleep(10000);
    }
    exp_client_close(client);
    exp_client_free(client);
    free(datafile);

    long accepted = atomic_load(&g_accepted), received = atomic_load(&receiver_visitors);
    printf("events: %ld accepted, %ld received in %ld requests\n", accepted, received, atomic_load(&receiver_requests));
    if (received < accepted) {
        fprintf(stderr, "events: %ld accepted events were not delivered\n", accepted - received);
        return 1;
    }
    return 0;
}
