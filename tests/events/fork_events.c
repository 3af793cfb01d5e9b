/*
 * fork_events.c — issue 33 item 1: a client created before fork() works in the parent and in the child with
 * no call from the program. The parent tracks from a second thread while it forks (the library's dispatcher
 * and sender threads run too); the child decides, tracks and closes; the parent tracks more and closes.
 * A local HTTP collector (tests/support/event_receiver.h, a thread of the parent) counts every event received.
 * Every close must report all of its events delivered, and the collector must count exactly as many events
 * as were tracked: a lost event or a duplicate (the child sending the parent's journal) changes the count.
 *
 *   fork_events DATAFILE STATE_DIR     exit status 0: the child exited normally, each event arrived once
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/event_receiver.h"
#include "experiment.h"

enum { BEFORE = 200, DURING = 2000, CHILD = 300, AFTER = 200 };

static exp_client *g_client;

static int track_many(const char *who, int count) {
    char user[48], tags[64];
    for (int i = 0; i < count; ++i) {
        snprintf(user, sizeof user, "%s-%d", who, i % 50);
        snprintf(tags, sizeof tags, "{\"seq\": %d}", i);
        if (exp_track(g_client, "purchase", user, NULL, 0, tags) != EXP_OK) {
            fprintf(stderr, "%s: exp_track: %s\n", who, exp_last_error());
            return 1;
        }
    }
    return 0;
}

/* Tracks while the main thread forks: the fork lands while this thread holds the library's locks. */
static void *track_during_fork(void *unused) {
    (void)unused;
    return (void *)(long)track_many("during", DURING);
}

static int decide_once(const char *user) {
    exp_decision decision;
    /* No impression: the collector's count must equal the conversions tracked, exactly. */
    exp_status status = exp_decide(g_client, user, "checkout_redesign", NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT,
                                   &decision);
    exp_decision_release(&decision);
    return status == EXP_OK ? 0 : 1;
}

static int run_child(void) {
    int failed = decide_once("child-user") || track_many("child", CHILD);
    exp_status closed = exp_client_close(g_client);
    if (closed != EXP_OK) fprintf(stderr, "child: exp_client_close: %s\n", exp_status_str(closed));
    return failed || closed != EXP_OK;
}

static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    *length = (size_t)ftell(file);
    rewind(file);
    char *text = malloc(*length);
    if (fread(text, 1, *length, file) != *length) *length = 0;
    fclose(file);
    return text;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fork_events DATAFILE STATE_DIR\n");
        return 2;
    }
    size_t length = 0;
    char *datafile = read_file(argv[1], &length);
    int port = receiver_start(0);
    char options[1024];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:%d/v1/events\", "
             "\"event_flush_interval_ms\": 20, \"event_batch_size\": 50, \"close_timeout_ms\": 20000}",
             argv[2], port);
    if (!datafile || exp_client_create(options, &g_client) || exp_client_start(g_client, datafile, length)) {
        fprintf(stderr, "setup: %s\n", exp_last_error());
        return 1;
    }
    free(datafile);
    if (decide_once("parent-user") || track_many("before", BEFORE)) return 1;

    pthread_t producer;
    pthread_create(&producer, NULL, track_during_fork, NULL);
    usleep(2000);
    pid_t child = fork();
    if (child == 0) _exit(run_child());
    void *producer_failed = NULL;
    pthread_join(producer, &producer_failed);
    if (producer_failed || track_many("after", AFTER)) return 1;

    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child failed: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return 1;
    }
    exp_status closed = exp_client_close(g_client);
    if (closed != EXP_OK) {
        fprintf(stderr, "parent: exp_client_close: %s\n", exp_status_str(closed));
        return 1;
    }
    exp_client_free(g_client);
    long expected = BEFORE + DURING + CHILD + AFTER;
    /* Both closes returned OK: every POST of either process was acknowledged, so the count is final. */
    long received = atomic_load(&receiver_visitors);
    printf("fork_events: tracked %ld (parent %d, child %d), received %ld\n", expected,
           BEFORE + DURING + AFTER, CHILD, received);
    return received == expected ? 0 : 1;
}
