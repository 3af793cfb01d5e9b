/*
 * concurrent_track.c — issue 18 item 5: 8 threads tracking ~300-byte events as fast as they can must never
 * get EXP_ERR_TOO_LARGE (a caller drops an event on that code for good). A full journal segment means
 * "switch segments or write to SQLite", never "too large". Before the fix, a thread whose segment was full
 * ingested the other one into SQLite and retried once; the other threads had filled the fresh segment
 * meanwhile, and it failed with "event too large for the event journal" (11 of 200,000 calls here).
 *
 * The endpoint is a closed port on 127.0.0.1 (refused at once), so journaled events go to SQLite, the slow
 * path that lets the fresh segment fill. Afterwards every accepted event must be on disk ("pending").
 *
 *   concurrent_track DATAFILE [EVENTS_PER_THREAD]    exit status 0: no call failed, nothing lost
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment.h"

enum { THREADS = 8 };

static exp_client *g_client;
static long g_per_thread = 25000;
static atomic_long g_accepted, g_too_large, g_other_errors;
static char g_last_error[256];

static void *produce(void *context) {
    int thread = (int)(long)context;
    char user[32], tags[400];
    char padding[241];
    memset(padding, 'x', sizeof padding - 1);
    padding[sizeof padding - 1] = '\0';
    for (long i = 0; i < g_per_thread; ++i) {
        snprintf(user, sizeof user, "user-%d-%ld", thread, i % 1000);
        snprintf(tags, sizeof tags, "{\"seq\": %ld, \"pad\": \"%s\"}", i, padding);
        exp_status status = exp_track(g_client, "purchase", user, NULL, 0, tags);
        if (status == EXP_OK) {
            atomic_fetch_add(&g_accepted, 1);
        } else {
            atomic_fetch_add(status == EXP_ERR_TOO_LARGE ? &g_too_large : &g_other_errors, 1);
            snprintf(g_last_error, sizeof g_last_error, "%s", exp_last_error());
        }
    }
    return NULL;
}

static long stat_field(const char *json, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = strstr(json, key);
    return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: concurrent_track DATAFILE [EVENTS_PER_THREAD]\n");
        return 2;
    }
    if (argc > 2) g_per_thread = atol(argv[2]);
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    static char datafile[1 << 20];
    size_t length = fread(datafile, 1, sizeof datafile, file);
    fclose(file);

    char state_dir[] = "/tmp/exp-concurrent-track-XXXXXX";
    if (!mkdtemp(state_dir)) { perror("mkdtemp"); return 2; }
    char options[512];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:9/v1/events\", "
             "\"event_queue_capacity\": 10000000, \"close_timeout_ms\": 0, \"log_level\": \"error\"}", state_dir);
    if (exp_client_create(options, &g_client) || exp_client_start(g_client, datafile, length)) {
        fprintf(stderr, "concurrent_track: cannot create the client: %s\n", exp_last_error());
        return 2;
    }
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, produce, (void *)t);
    for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
    exp_status closed = exp_client_close(g_client);
    char *stats = NULL;
    exp_client_stats(g_client, &stats);
    long pending = stat_field(stats, "pending");
    long accepted = atomic_load(&g_accepted);
    printf("concurrent_track: %d threads x %ld events: %ld accepted, %ld EXP_ERR_TOO_LARGE, %ld other errors, "
           "%ld pending on disk after close (status %d)\n",
           THREADS, g_per_thread, accepted, atomic_load(&g_too_large), atomic_load(&g_other_errors), pending,
           (int)closed);
    if (atomic_load(&g_too_large) || atomic_load(&g_other_errors)) printf("  last error: %s\n", g_last_error);
    exp_free(stats);
    exp_client_free(g_client);
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", state_dir);
    if (system(command) != 0) fprintf(stderr, "concurrent_track: cannot remove %s\n", state_dir);
    int ok = atomic_load(&g_too_large) == 0 && atomic_load(&g_other_errors) == 0 && pending == accepted &&
             accepted == THREADS * g_per_thread;
    return ok ? 0 : 1;
}
