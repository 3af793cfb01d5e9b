/*
 * optimizely_config.c — exp_client_optimizely_config_json through the exported C ABI: its errors (NULLs,
 * not ready, a client without its datafile's text, closed), the document for the demo datafile, and the
 * same text from a second call. Built with -Wall -Wextra -Werror -pedantic (make test-c).
 *
 *     ./optimizely_config_c examples/datafiles/demo.json STATE_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"

static int failures = 0;

#define EXPECT(condition)                                                                   \
    do {                                                                                    \
        if (!(condition)) {                                                                 \
            fprintf(stderr, "%s:%d: expected %s (%s)\n", __FILE__, __LINE__, #condition,    \
                    exp_last_error());                                                      \
            ++failures;                                                                     \
        }                                                                                   \
    } while (0)

static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    *length = fread(text, 1, (size_t)size, file);
    text[*length] = 0;
    fclose(file);
    return text;
}

static exp_client *create(const char *state_dir, int keep_datafile) {
    char options[1024];
    snprintf(options, sizeof options, "{\"profile_store\": \"none\", \"state_dir\": \"%s\", \"keep_datafile\": %s}",
             state_dir, keep_datafile ? "true" : "false");
    exp_client *client = NULL;
    EXPECT(exp_client_create(options, &client) == EXP_OK);
    return client;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: optimizely_config_c DATAFILE STATE_DIR\n");
        return 2;
    }
    size_t length = 0;
    char *datafile = read_file(argv[1], &length);
    if (!datafile) return 2;

    exp_client *client = create(argv[2], 1);
    char *json = NULL;
    EXPECT(exp_client_optimizely_config_json(NULL, &json) == EXP_ERR_INVALID_ARGUMENT);
    EXPECT(exp_client_optimizely_config_json(client, NULL) == EXP_ERR_INVALID_ARGUMENT);
    EXPECT(exp_client_optimizely_config_json(client, &json) == EXP_ERR_NOT_READY && json == NULL);

    EXPECT(exp_client_start(client, datafile, length) == EXP_OK);
    EXPECT(exp_client_optimizely_config_json(client, &json) == EXP_OK && json != NULL);
    if (json) {
        EXPECT(strstr(json, "\"revision\":") != NULL);
        EXPECT(strstr(json, "\"features_map\":{\"checkout_redesign\":") != NULL);
        EXPECT(strstr(json, "\"variables_map\":{\"button_color\":") != NULL);
        EXPECT(strstr(json, "\"audiences\":\"\\\"High-value adult carts\\\" OR") != NULL);
        EXPECT(strstr(json, "\"datafile\":\"") != NULL);
        char *again = NULL;
        EXPECT(exp_client_optimizely_config_json(client, &again) == EXP_OK && again && strcmp(json, again) == 0);
        exp_free(again);
    }
    exp_free(json);
    exp_client_close(client);
    json = NULL;
    EXPECT(exp_client_optimizely_config_json(client, &json) == EXP_ERR_CLOSED && json == NULL);
    exp_client_free(client);

    exp_client *forgetful = create(argv[2], 0);
    EXPECT(exp_client_start(forgetful, datafile, length) == EXP_OK);
    EXPECT(exp_client_optimizely_config_json(forgetful, &json) == EXP_ERR_NOT_FOUND && json == NULL);
    exp_client_close(forgetful);
    exp_client_free(forgetful);

    free(datafile);
    if (failures) return 1;
    puts("optimizely config: ok");
    return 0;
}
