/*
 * Real-time segments under many threads: fetches (async and sync, against a port where nothing listens, so
 * they fail fast), segments set and read, decisions that read them, ODP events queued to the state file,
 * the VUID — then close while fetches and events are still in flight. Built against the ThreadSanitizer and
 * AddressSanitizer builds of the library by tests/sanitize/run.sh; any sanitizer report fails the run.
 *     odp_stress <segments datafile> <state_dir> [odp_host]   (default: a port where nothing listens)
 */
#include <experiment.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static exp_client *client;
static atomic_int completions;

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*len + 1);
    if (!b || fread(b, 1, *len, f) != *len) abort();
    fclose(f);
    return b;
}

static void quiet(int level, const char *message, void *user_data) { (void)level; (void)message; (void)user_data; }

static void on_segments(exp_status status, const char *segments, const char *message, void *user_data) {
    (void)user_data;
    if ((status == EXP_OK) != (segments != NULL) || !message) abort();
    atomic_fetch_add(&completions, 1);
}

static void *worker(void *arg) {
    long id = (long)arg;
    char user[48];
    for (int i = 0; i < 400; i++) {
        snprintf(user, sizeof user, "user-%ld-%d", id, i % 20);
        switch (i % 5) {
        case 0: exp_fetch_qualified_segments_async(client, user, (unsigned)(i % 4), on_segments, NULL); break;
        case 1: exp_set_qualified_segments_json(client, user, i % 2 ? "[\"seg-a\"]" : "[]"); break;
        case 2: exp_send_odp_event(client, NULL, "tick", "{\"fs_user_id\": \"x\"}", "{\"i\": 1}"); break;
        case 3: {
            char *json = NULL;
            if (exp_get_qualified_segments_json(client, user, &json) == EXP_OK) exp_free(json);
            int yes = 0;
            exp_is_qualified_for(client, user, "seg-a", &yes);
            break;
        }
        default: {
            char *vuid = NULL;
            if (exp_get_vuid(client, &vuid) == EXP_OK) exp_free(vuid);
            if (i % 50 == 4) exp_fetch_qualified_segments(client, user, EXP_SEGMENT_IGNORE_CACHE, NULL);
        }
        }
        exp_decision d = {0};
        if (exp_decide(client, user, "segment_flag", NULL, 0, 0, &d) == EXP_OK && !d.flag_key) abort();
        exp_decision_release(&d);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) { fprintf(stderr, "usage: %s <datafile> <state_dir> [odp_host]\n", argv[0]); return 2; }
    const char *host = argc == 4 ? argv[3] : "http://127.0.0.1:9";
    size_t len;
    char *datafile = slurp(argv[1], &len);
    char options[1024];
    snprintf(options, sizeof options, "{\"state_dir\": \"%s\", \"log_level\": \"error\", \"close_timeout_ms\": 200, "
             "\"odp\": {\"host\": \"%s\", \"api_key\": \"test-api-key\", \"fetch_timeout_ms\": 500, "
             "\"event_timeout_ms\": 500}}", argv[2], host);
    if (exp_client_create(options, &client) != EXP_OK || exp_client_start(client, datafile, len) != EXP_OK) {
        fprintf(stderr, "setup: %s\n", exp_last_error());
        return 1;
    }
    exp_client_set_logger(client, quiet, NULL);
    pthread_t threads[4];
    for (long t = 0; t < 4; t++) pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < 4; t++) pthread_join(threads[t], NULL);
    exp_client_close(client);  // async fetches still queued complete with EXP_ERR_CLOSED
    exp_client_free(client);
    free(datafile);
    printf("odp stress: %d async completions\n", atomic_load(&completions));
    return atomic_load(&completions) == 4 * 80 ? 0 : 1;
}
