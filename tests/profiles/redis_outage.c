/*
 * redis_outage.c — a C host deciding through a Redis profile store while the server goes away and comes
 * back (driven by bindings/python/tests/test_profiles.py). It must neither fail a decision nor be killed
 * by SIGPIPE (C programs keep the default action, unlike Python).
 *
 *   redis_outage <datafile> <redis-url> <seconds>
 * Decides "checkout_flow" for a rotating set of users for <seconds>, then prints the profile stats JSON
 * and exits 0; any failed call exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "experiment.h"

static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    rewind(file);
    char *text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, file) != (size_t)size) { free(text); text = NULL; }
    fclose(file);
    if (text) { text[size] = '\0'; *length = (size_t)size; }
    return text;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: redis_outage <datafile> <redis-url> <seconds>\n"); return 2; }
    size_t length = 0;
    char *datafile = read_file(argv[1], &length);
    if (!datafile) { perror(argv[1]); return 2; }
    char options[512];
    snprintf(options, sizeof options,
             "{\"profile_store\": {\"redis\": {\"url\": \"%s\", \"prefix\": \"c:\", \"timeout_ms\": 100}}, "
             "\"log_level\": \"error\", \"user_store_capacity\": 50}", argv[2]);
    exp_client *client = NULL;
    if (exp_client_create(options, &client) != EXP_OK || exp_client_start(client, datafile, length) != EXP_OK) {
        fprintf(stderr, "setup: %s\n", exp_last_error());
        return 1;
    }
    free(datafile);
    double deadline = now_s() + atof(argv[3]);
    unsigned long calls = 0;
    while (now_s() < deadline) {
        char user[32];
        snprintf(user, sizeof user, "user-%lu", calls % 500);   /* more users than the cache holds */
        exp_decision decision;
        if (exp_decide(client, user, "checkout_flow", NULL, 0, EXP_DECIDE_DISABLE_DECISION_EVENT, &decision) != EXP_OK) {
            fprintf(stderr, "decide failed: %s\n", exp_last_error());
            return 1;
        }
        exp_decision_release(&decision);
        calls++;
    }
    char *stats = NULL;
    if (exp_client_profile_stats(client, &stats) != EXP_OK) return 1;
    printf("%s\n", stats);
    exp_free(stats);
    exp_client_free(client);
    return 0;
}
