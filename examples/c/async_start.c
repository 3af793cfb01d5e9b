/*
 * Asynchronous start: fetch the datafile for an SDK key from a URL template (here a file:// URL, so the
 * example runs offline), fall back to the cache or a bundled datafile, wait until ready, decide.
 *
 *     async_start <directory holding <sdk_key>.json> <sdk_key> <state dir>
 *     e.g. async_start examples/datafiles demo /tmp/experiment-state
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <experiment.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static void on_ready(int status, void *user_data) {
    (void)user_data;
    printf("on_ready: %s\n", exp_status_str((exp_status)status));
}

static void on_update(int type, const char *payload, void *user_data) {
    (void)type; (void)user_data;
    printf("config update: %s\n", payload);
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s <datafile dir> <sdk_key> <state dir>\n", argv[0]); return 2; }
    char directory[PATH_MAX];
    if (!realpath(argv[1], directory)) { perror(argv[1]); return 2; }
    char options[3 * PATH_MAX];
    snprintf(options, sizeof options,
             "{\"sdk_key\": \"%s\", \"datafile_url_template\": \"file://%s/{sdk_key}.json\", \"state_dir\": \"%s\", "
             "\"polling_interval_s\": 0, \"tag\": \"example\"}", argv[2], directory, argv[3]);
    exp_client *client = NULL;
    if (exp_client_create(options, &client) != EXP_OK) { fprintf(stderr, "%s\n", exp_last_error()); return 1; }
    exp_add_notification_listener(client, EXP_NOTIFY_CONFIG_UPDATE, on_update, NULL, NULL);

    if (exp_client_start_async(client, NULL, 0, on_ready, NULL) != EXP_OK ||
        exp_client_wait_ready(client, 2000) != EXP_OK) {
        fprintf(stderr, "not ready: %s\n", exp_last_error());
        exp_client_free(client);
        return 1;
    }
    exp_client *same = NULL;
    if (exp_client_find("example", &same) != EXP_OK || same != client) { exp_client_free(client); return 1; }

    char *status = NULL;
    if (exp_client_datafile_status_json(client, &status) == EXP_OK) printf("status: %s\n", status);
    exp_free(status);
    if (exp_client_refresh(client) != EXP_OK) printf("refresh: %s\n", exp_last_error());
    exp_client_close(client);
    exp_client_free(client);
    return 0;
}
