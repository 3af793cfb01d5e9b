/*
 * Datafile load benchmark: how long until a client is ready, and how much memory the compiled config
 * keeps, against json-c's own parse of the same bytes in the same run (the floor: libexperiment parses
 * with json-c, then validates and compiles).
 *
 *   bench_load FILE...
 *
 * For each datafile, the median of several runs of:
 *   json-c parse   json_tokener_parse_ex over the buffer, then json_object_put
 *   start          exp_client_start (validate + compile + install) on a new client; the client's creation
 *                  (options, state directory, event journal) is timed apart, as "create"
 * and, in a forked child so the figures are this datafile's alone:
 *   config memory  heap bytes still in use while the started client is alive (mallinfo2)
 *   peak memory    the child's peak resident set growth across exp_client_start (VmHWM after resetting it
 *                  through /proc/self/clear_refs, minus the resident set before the start)
 */
#define _GNU_SOURCE
#include <experiment.h>
#include <json-c/json.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *samples, int count) {
    qsort(samples, (size_t)count, sizeof *samples, compare_doubles);
    return samples[count / 2];
}

static char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *length = (size_t)ftell(f);
    rewind(f);
    char *bytes = malloc(*length);
    if (bytes && fread(bytes, 1, *length, f) != *length) {
        free(bytes);
        bytes = NULL;
    }
    fclose(f);
    return bytes;
}

static double json_c_parse_ms(const char *bytes, size_t length) {
    double start = now_ms();
    json_tokener *tokener = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    json_object *root = json_tokener_parse_ex(tokener, bytes, (int)length);
    double elapsed = now_ms() - start;
    if (!root) {
        fprintf(stderr, "json-c rejects the datafile\n");
        exit(1);
    }
    json_object_put(root);
    json_tokener_free(tokener);
    return elapsed;
}

/* Times exp_client_start on a fresh client; *create_ms receives the time exp_client_create took. */
static double start_ms(const char *bytes, size_t length, double *create_ms) {
    exp_client *client = NULL;
    double created = now_ms();
    if (exp_client_create("{\"profile_store\": \"none\", \"event_endpoint\": \"none\"}", &client) != EXP_OK) {
        fprintf(stderr, "libexperiment: %s\n", exp_last_error());
        exit(1);
    }
    double start = now_ms();
    *create_ms = start - created;
    if (exp_client_start(client, bytes, length) != EXP_OK) {
        fprintf(stderr, "libexperiment: %s\n", exp_last_error());
        exit(1);
    }
    double elapsed = now_ms() - start;
    exp_client_free(client);
    return elapsed;
}

/* A "VmRSS:" / "VmHWM:" figure of /proc/self/status, in bytes (-1 when unavailable). */
static double status_bytes(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double found = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0) found = atof(line + strlen(field)) * 1024.0;
    if (f) fclose(f);
    return found;
}

/* In a child: heap kept by the started client and peak RSS growth, written to `out` as two numbers. */
static void measure_memory(const char *bytes, size_t length, int out) {
    exp_client *client = NULL;
    /* A first start of a tiny datafile sets up what any first start sets up (runtime metadata, caches). */
    static const char tiny[] = "{\"version\": \"4\", \"projectId\": \"1\", \"accountId\": \"1\", \"revision\": \"1\", "
                               "\"experiments\": [], \"featureFlags\": [], \"rollouts\": [], \"groups\": [], "
                               "\"audiences\": [], \"attributes\": [], \"events\": []}";
    if (exp_client_create("{\"profile_store\": \"none\"}", &client) != EXP_OK ||
        exp_client_start(client, tiny, sizeof tiny - 1) != EXP_OK) {
        fprintf(stderr, "tiny datafile: %s\n", exp_last_error());
        _exit(1);
    }
    FILE *reset = fopen("/proc/self/clear_refs", "w"); /* "5" resets the peak (VmHWM) to the current RSS */
    if (reset) {
        fputs("5", reset);
        fclose(reset);
    }
    double rss_before = status_bytes("VmRSS:");
    size_t heap_before = mallinfo2().uordblks;
    if (exp_client_start(client, bytes, length) != EXP_OK) _exit(1);
    size_t heap_after = mallinfo2().uordblks;
    double figures[2] = {(double)(heap_after - heap_before), status_bytes("VmHWM:") - rss_before};
    if (write(out, figures, sizeof figures) != (ssize_t)sizeof figures) _exit(1);
    _exit(0);
}

static int memory_figures(const char *bytes, size_t length, double figures[2]) {
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return -1;
    pid_t child = fork();
    if (child == 0) {
        close(pipe_ends[0]);
        measure_memory(bytes, length, pipe_ends[1]);
    }
    close(pipe_ends[1]);
    ssize_t got = read(pipe_ends[0], figures, 2 * sizeof(double));
    close(pipe_ends[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return got == (ssize_t)(2 * sizeof(double)) && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_load FILE...\n");
        return 2;
    }
    printf("%-16s %10s %11s %10s %10s %8s %16s %10s %14s %8s\n", "datafile", "bytes", "create ms", "json-c ms",
           "start ms", "ratio", "config memory", "x size", "peak RSS +", "x size");
    for (int arg = 1; arg < argc; arg++) {
        size_t length = 0;
        char *bytes = read_file(argv[arg], &length);
        if (!bytes) {
            perror(argv[arg]);
            return 2;
        }
        int runs = length > 4000000 ? 9 : length > 400000 ? 21 : 101;  /* odd counts: the median is a sample */
        double parse[101], ready[101], create[101];
        double memory[2] = {0, 0};  /* first, before the timed runs leave freed memory resident */
        if (memory_figures(bytes, length, memory) != 0) {
            fprintf(stderr, "memory measurement failed for %s\n", argv[arg]);
            return 1;
        }
        json_c_parse_ms(bytes, length);  /* warm-up */
        start_ms(bytes, length, &create[0]);
        for (int run = 0; run < runs; run++) {
            parse[run] = json_c_parse_ms(bytes, length);
            ready[run] = start_ms(bytes, length, &create[run]);
        }
        double parse_ms = median(parse, runs), ready_ms = median(ready, runs), create_ms = median(create, runs);
        const char *name = strrchr(argv[arg], '/');
        printf("%-16s %10zu %11.3f %10.3f %10.3f %7.2fx %14.0f B %9.2fx %12.0f B %7.2fx\n", name ? name + 1 : argv[arg],
               length, create_ms, parse_ms, ready_ms, ready_ms / parse_ms, memory[0], memory[0] / (double)length,
               memory[1], memory[1] / (double)length);
        free(bytes);
    }
    return 0;
}
