/*
 * seed_state.c — leaves a state directory as a user's often is: events an earlier run queued for an event
 * endpoint that is down. A client opened on it starts its event pipeline at once, and the pipeline's
 * thread retries (and logs) while the harness runs and during exp_client_close: the condition under which
 * a harness that frees its log context too early reads freed memory (issue 18, item 10). run.sh replays
 * the regression inputs on such a directory.
 *
 *     seed_state <state dir> <datafile>
 */
#include <stdio.h>
#include <stdlib.h>

#include "experiment.h"

#define CHECK(call) do { exp_status s_ = (call); \
    if (s_ != EXP_OK) { fprintf(stderr, "seed_state: %s: %s\n", #call, exp_last_error()); return 1; } } while (0)

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s <state dir> <datafile>\n", argv[0]); return 2; }
    FILE *file = fopen(argv[2], "rb");
    if (!file) { perror(argv[2]); return 1; }
    static char datafile[1 << 20];
    size_t length = fread(datafile, 1, sizeof datafile, file);
    fclose(file);
    char options[4096];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:9/events\", \"close_timeout_ms\": 0, "
             "\"log_level\": \"error\"}", argv[1]);
    exp_client *client = NULL;
    CHECK(exp_client_create(options, &client));
    CHECK(exp_client_start(client, datafile, length));
    char user[32];
    for (int i = 0; i < 20; i++) {
        snprintf(user, sizeof user, "seed-user-%d", i);
        CHECK(exp_track(client, "purchase", user, NULL, 0, NULL));
    }
    exp_client_close(client);   /* the endpoint is down: the events stay on disk */
    exp_client_free(client);
    return 0;
}
