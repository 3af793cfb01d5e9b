/*
 * segments.c — real-time audience segments (ODP) from C.
 *
 * The datafile examples/datafiles/segments.json has a flag, "segment_flag", whose rollout rule targets
 * users qualified for the ODP segment "seg-a" or "seg-b". The program decides that flag for a user, asks
 * the ODP segments service which segments the user qualifies for (synchronously, then asynchronously
 * with a completion callback), decides again, and sends a custom ODP event.
 *
 *     ./segments <datafile.json> <odp_host> <odp_api_key> <state_dir>
 *
 * <odp_host> is where the ODP APIs live, e.g. https://api.zaius.com (the datafile's integrations entry
 * names it too; the `odp` client option given here wins). tests/odp/test_segments_c.sh runs this program
 * against a local stand-in server (tests/odp/odp_server.py). Exits 1 when a call that should succeed fails.
 *
 *     cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude examples/c/segments.c \
 *        -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -o segments
 */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    fclose(file);
    *out_length = length;
    return buffer;
}

static void decide(exp_client *client, const char *user_id) {
    exp_decision d = {0};
    CHECK(exp_decide(client, user_id, "segment_flag", NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT, &d));
    printf("decide %s segment_flag -> %s\n", user_id, d.variation_key ? d.variation_key : "(none)");
    exp_decision_release(&d);
}

/* The async fetch's completion: runs once, on the library's ODP thread. */
static atomic_int async_done;

static void on_segments(exp_status status, const char *segments_json, const char *message, void *user_data) {
    const char *user_id = user_data;
    if (status == EXP_OK) printf("async segments %s: %s\n", user_id, segments_json);
    else printf("async fetch %s failed: %s: %s\n", user_id, exp_status_str(status), message);
    atomic_store(&async_done, 1);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s <datafile.json> <odp_host> <odp_api_key> <state_dir>\n", argv[0]);
        return 2;
    }
    size_t length = 0;
    char *datafile = read_file(argv[1], &length);
    if (!datafile) { perror(argv[1]); return 1; }

    char options[2048];
    int written = snprintf(options, sizeof options,
                           "{\"state_dir\": \"%s\", \"odp\": {\"host\": \"%s\", \"api_key\": \"%s\", "
                           "\"segments_cache_size\": 100, \"segments_cache_timeout_s\": 600}}",
                           argv[4], argv[2], argv[3]);
    if (written < 0 || (size_t)written >= sizeof options) { fputs("arguments too long\n", stderr); return 2; }

    exp_client *client = NULL;
    CHECK(exp_client_create(options, &client));
    CHECK(exp_client_start(client, datafile, length));
    free(datafile);

    /* Before any fetch the user has no segments: the segment rule does not match. */
    decide(client, "user-1");

    /* Synchronous fetch: one GraphQL request, then the segments are cached and used by decisions. */
    char *segments = NULL;
    CHECK(exp_fetch_qualified_segments(client, "user-1", 0, &segments));
    printf("segments user-1: %s\n", segments);
    exp_free(segments);
    int qualified = 0;
    CHECK(exp_is_qualified_for(client, "user-1", "seg-a", &qualified));
    printf("user-1 qualified for seg-a: %s\n", qualified ? "yes" : "no");
    decide(client, "user-1");

    /* Errors tell an identifier ODP does not know from a service that failed. */
    exp_status status = exp_fetch_qualified_segments(client, "invalid-user", 0, NULL);
    printf("fetch invalid-user: %s\n", exp_status_str(status));

    /* Asynchronous fetch, bypassing the cache: the callback reports the outcome. */
    CHECK(exp_fetch_qualified_segments_async(client, "user-2", EXP_SEGMENT_IGNORE_CACHE, on_segments, "user-2"));
    for (int waited = 0; !atomic_load(&async_done) && waited < 1000; ++waited) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    decide(client, "user-2");

    /* Segments can be set directly (testing, or your own segment service). */
    CHECK(exp_set_qualified_segments_json(client, "user-3", "[\"seg-b\"]"));
    decide(client, "user-3");

    /* A custom ODP event, and the visitor id kept in the state directory for anonymous users. */
    CHECK(exp_send_odp_event(client, NULL, "purchased", "{\"fs_user_id\": \"user-1\"}",
                             "{\"amount\": 9.5, \"sku\": \"coffee\"}"));
    CHECK(exp_flush_odp_events(client, 10000));
    char *vuid = NULL;
    CHECK(exp_get_vuid(client, &vuid));
    printf("vuid: %s (%zu characters)\n", vuid, strlen(vuid));
    exp_free(vuid);

    CHECK(exp_client_close(client));
    exp_client_free(client);
    return 0;
}
