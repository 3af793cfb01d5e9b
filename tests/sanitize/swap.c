/*
 * Hot swap consistency: deciding threads run continuously while the config is swapped hundreds of times,
 * both by exp_client_start and by the datafile manager (exp_client_start_async + exp_client_refresh over a
 * file:// URL whose file is replaced underneath). Two datafiles of one project differ in revision,
 * variation key and variable: every decision must come whole from one of them ("va" with "A", or "vb"
 * with "B"), config-update listeners must fire once per real revision change, and nothing may leak or race
 * (built against the ThreadSanitizer and AddressSanitizer libraries by tests/sanitize/run.sh).
 *
 *     swap <swap_a.json> <swap_b.json> <scratch dir>
 */
#include <experiment.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWAPS 300

static char *datafiles[2]; static size_t lengths[2];
static exp_client *client;
/* A second client in cache-TTL mode over the same file: its decisions kick background refreshes
   (run with EXPERIMENT_TEST_SECOND_MS=5, so its 10 s TTL lasts 50 ms). */
static exp_client *ttl_client;
static atomic_int stop_deciding;
static atomic_long decisions, updates, inconsistent, ready_calls;
static const char *scratch;

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*len + 1);
    if (!b || fread(b, 1, *len, f) != *len) abort();
    b[*len] = 0;
    fclose(f);
    return b;
}

/* Replaces the served file atomically (write a temporary, rename over). */
static void publish(int which) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/swap.json.tmp", scratch);
    snprintf(path, sizeof path, "%s/swap.json", scratch);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(datafiles[which], 1, lengths[which], f) != lengths[which]) abort();
    fclose(f);
    if (rename(tmp, path) != 0) abort();
}

static void on_update(int type, const char *payload, void *user_data) {
    (void)type; (void)user_data;
    if (!strstr(payload, "\"revision\":\"rev-")) atomic_fetch_add(&inconsistent, 1);
    atomic_fetch_add(&updates, 1);
}
static void on_ready(int status, void *user_data) {
    (void)user_data;
    if (status != EXP_OK) fprintf(stderr, "async start: %s\n", exp_status_str(status));
    atomic_fetch_add(&ready_calls, 1);
}

static atomic_long rejections;
/* The broken datafile is rejected on purpose hundreds of times: count those messages, show the rest. */
static void on_log(int level, const char *message, void *user_data) {
    (void)level; (void)user_data;
    if (strstr(message, "rejected datafile")) atomic_fetch_add(&rejections, 1);
    else fprintf(stderr, "log: %s\n", message);
}

static void *decider(void *arg) {
    char user[32]; long id = (long)arg;
    for (long i = 0; !atomic_load(&stop_deciding); i++) {
        snprintf(user, sizeof user, "user-%ld-%ld", id, i % 1000);
        exp_decision d = {0};
        exp_client *target = (i % 2) ? ttl_client : client;
        if (exp_decide(target, user, "banner", NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT, &d) != EXP_OK) abort();
        int a = strcmp(d.variation_key, "va") == 0 && strstr(d.variables_json, "\"A\"") != NULL;
        int b = strcmp(d.variation_key, "vb") == 0 && strstr(d.variables_json, "\"B\"") != NULL;
        if (!a && !b) {
            fprintf(stderr, "mixed decision: %s %s\n", d.variation_key, d.variables_json);
            atomic_fetch_add(&inconsistent, 1);
        }
        exp_decision_release(&d);
        atomic_fetch_add(&decisions, 1);
        if (i % 97 == 0) {
            char *status = NULL;
            if (exp_client_datafile_status_json(client, &status) != EXP_OK) abort();
            exp_free(status);
            if (exp_client_wait_ready(client, 0) != EXP_OK) abort();
        }
    }
    return NULL;
}

static void *refresher(void *arg) {
    (void)arg;
    for (int i = 0; i < SWAPS; i++) {
        publish(i % 2);
        exp_client_refresh(client);  /* may also see the same file twice: a quiet no-op */
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: swap a.json b.json scratch-dir\n"); return 2; }
    datafiles[0] = slurp(argv[1], &lengths[0]);
    datafiles[1] = slurp(argv[2], &lengths[1]);
    scratch = argv[3];
    publish(0);
    char options[8192];
    snprintf(options, sizeof options,
             "{\"sdk_key\": \"swap\", \"datafile_url_template\": \"file://%s/{sdk_key}.json\", \"state_dir\": \"%s\", "
             "\"polling_interval_s\": 0, \"retry_count\": 0, \"tag\": \"swap-test\", \"log_level\": \"error\"}",
             scratch, scratch);
    if (exp_client_create(options, &client) != EXP_OK) { fprintf(stderr, "%s\n", exp_last_error()); return 1; }
    exp_client_set_logger(client, on_log, NULL);
    int64_t listener = 0;
    if (exp_add_notification_listener(client, EXP_NOTIFY_CONFIG_UPDATE, on_update, NULL, &listener) != EXP_OK) return 1;
    if (exp_client_start_async(client, datafiles[1], lengths[1], on_ready, NULL) != EXP_OK) return 1;
    if (exp_client_wait_ready(client, 5000) != EXP_OK) { fprintf(stderr, "%s\n", exp_last_error()); return 1; }
    exp_client *found = NULL;
    if (exp_client_find("swap-test", &found) != EXP_OK || found != client) return 1;
    exp_client *duplicate = NULL;
    if (exp_client_create("{\"tag\": \"swap-test\"}", &duplicate) != EXP_ERR_TAG_IN_USE || duplicate) return 1;

    char ttl_options[8192];
    snprintf(ttl_options, sizeof ttl_options,
             "{\"sdk_key\": \"swap\", \"datafile_url_template\": \"file://%s/{sdk_key}.json\", \"state_dir\": \"%s\", "
             "\"cache_ttl_s\": 10, \"retry_count\": 0, \"log_level\": \"error\"}", scratch, scratch);
    if (exp_client_create(ttl_options, &ttl_client) != EXP_OK) { fprintf(stderr, "%s\n", exp_last_error()); return 1; }
    exp_client_set_logger(ttl_client, on_log, NULL);
    if (exp_client_start_async(ttl_client, NULL, 0, NULL, NULL) != EXP_OK ||
        exp_client_wait_ready(ttl_client, 5000) != EXP_OK) { fprintf(stderr, "ttl: %s\n", exp_last_error()); return 1; }

    pthread_t threads[5];
    for (long i = 0; i < 3; i++) pthread_create(&threads[i], NULL, decider, (void *)i);
    pthread_create(&threads[3], NULL, refresher, NULL);
    /* Meanwhile this thread swaps by exp_client_start, alternating, with a broken datafile in between. */
    long started = 0;
    for (int i = 0; i < SWAPS; i++) {
        if (exp_client_start(client, datafiles[i % 2], lengths[i % 2]) == EXP_OK) started++;
        exp_client_start(client, "{\"version\": \"4\", \"revision\":", 27);
    }
    pthread_join(threads[3], NULL);
    atomic_store(&stop_deciding, 1);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);

    char *ttl_status = NULL;
    if (exp_client_datafile_status_json(ttl_client, &ttl_status) != EXP_OK) return 1;
    printf("cache-TTL client: %s\n", ttl_status);
    exp_free(ttl_status);
    exp_client_free(ttl_client);
    exp_client_close(client);
    exp_client_close(client);  /* idempotent */
    if (exp_client_find("swap-test", &found) != EXP_ERR_NOT_FOUND) return 1;
    exp_client_free(client);
    free(datafiles[0]); free(datafiles[1]);
    printf("swap: %ld decisions, %ld exp_client_start swaps + %d refreshes, %ld config updates, %ld ready callback, %ld rejections logged\n",
           atomic_load(&decisions), started, SWAPS, atomic_load(&updates), atomic_load(&ready_calls), atomic_load(&rejections));
    if (atomic_load(&inconsistent) != 0) { fprintf(stderr, "%ld inconsistent decisions or payloads\n", atomic_load(&inconsistent)); return 1; }
    if (started != SWAPS || atomic_load(&ready_calls) != 1 || atomic_load(&updates) < 2
        || atomic_load(&rejections) < SWAPS) return 1;
    return 0;
}
