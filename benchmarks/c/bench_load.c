/*
 * Datafile load benchmark: how long until a client is ready, and how much memory the compiled config
 * keeps, against json-c's own parse of the same bytes in the same run (the floor: libexperiment parses
 * with json-c, then compiles json-c's tree into its config and frees the tree).
 *
 *   bench_load FILE...
 *
 * For each datafile, the median of several runs of:
 *   json-c parse   json_tokener_parse_ex over the buffer with the library's settings (depth 64,
 *                  JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8); json_object_put timed apart ("free")
 *   start          exp_client_start (parse + compile + free + install) on a new client with the default log
 *                  level; the client's creation (options, state directory, event journal) is timed apart, as
 *                  "create". The library's own split of the start (parse, compile, free) comes from its debug
 *                  log line, in separate starts (debug logging has a cost of its own: the split's clock reads
 *                  and the log lines).
 * and, in a forked child so the figures are this datafile's alone:
 *   config memory  heap bytes still in use while the started client is alive (mallinfo2)
 *   peak memory    the child's peak resident set growth across exp_client_start (VmHWM after resetting it
 *                  through /proc/self/clear_refs, minus the resident set before the start), twice: as a first
 *                  start of this datafile finds the process ("peak RSS +": it includes the pages of the
 *                  library's code that this datafile is the first to run, read from the .so file), and with
 *                  every page of the process's file mappings made resident before ("data RSS +": the start's
 *                  own memory, what a poll or a second client costs again)
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

/* json-c's parse of the bytes as the library runs it; *free_ms receives json_object_put's time. */
static double json_c_parse_ms(const char *bytes, size_t length, double *free_ms) {
    double start = now_ms();
    json_tokener *tokener = json_tokener_new_ex(64);
    json_tokener_set_flags(tokener, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *root = json_tokener_parse_ex(tokener, bytes, (int)length);
    json_tokener_free(tokener);
    double elapsed = now_ms() - start;
    if (!root) {
        fprintf(stderr, "json-c rejects the datafile\n");
        exit(1);
    }
    double freeing = now_ms();
    json_object_put(root);
    *free_ms = now_ms() - freeing;
    return elapsed;
}

/* The library's split of a start, from its debug line "datafile of N bytes: parse P ms (json-c), compile C ms,
 * free F ms". */
typedef struct { double parse, compile, free; int seen; } start_split;

static void read_split(int level, const char *message, void *user_data) {
    (void)level;
    start_split *split = user_data;
    const char *line = strstr(message, "datafile of ");
    if (line && sscanf(strstr(line, "parse "), "parse %lf ms (json-c), compile %lf ms, free %lf ms", &split->parse,
                       &split->compile, &split->free) == 3)
        split->seen = 1;
}

/* Times exp_client_start on a fresh client; *create_ms receives the time exp_client_create took. */
static double start_ms(const char *bytes, size_t length, double *create_ms, start_split *split) {
    exp_client *client = NULL;
    double created = now_ms();
    if (exp_client_create("{\"profile_store\": \"none\", \"event_endpoint\": \"none\"}", &client) != EXP_OK) {
        fprintf(stderr, "libexperiment: %s\n", exp_last_error());
        exit(1);
    }
    if (split) {
        split->seen = 0;
        exp_client_set_logger(client, read_split, split);
        exp_client_set_log_level(client, EXP_LOG_DEBUG);
    }
    double start = now_ms();
    *create_ms = start - created;
    if (exp_client_start(client, bytes, length) != EXP_OK) {
        fprintf(stderr, "libexperiment: %s\n", exp_last_error());
        exit(1);
    }
    double elapsed = now_ms() - start;
    exp_client_free(client);
    if (split && !split->seen) {
        fprintf(stderr, "libexperiment logged no parse/compile/free split\n");
        exit(1);
    }
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

/* Reads one byte of every page of the process's file-backed mappings (the code and read-only data of the
 * program and its libraries), so that running code for the first time adds nothing to the resident set. */
static void touch_file_mappings(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    long page = sysconf(_SC_PAGESIZE);
    volatile unsigned char sink = 0;
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long start = 0, end = 0;
        char permissions[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &start, &end, permissions, path) != 4) continue;
        if (permissions[0] != 'r' || path[0] != '/') continue;
        for (unsigned long address = start; address < end; address += (unsigned long)page)
            sink ^= *(const volatile unsigned char *)address;
    }
    if (maps) fclose(maps);
    (void)sink;
}

/* In a child: heap kept by the started client and peak RSS growth, written to `out` as two numbers; with
 * `resident_code`, the file mappings are made resident first. */
static void measure_memory(const char *bytes, size_t length, int resident_code, int out) {
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
    if (resident_code) touch_file_mappings();
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

static int memory_figures(const char *bytes, size_t length, int resident_code, double figures[2]) {
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return -1;
    pid_t child = fork();
    if (child == 0) {
        close(pipe_ends[0]);
        measure_memory(bytes, length, resident_code, pipe_ends[1]);
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
    printf("%-14s %9s %9s %9s %9s %8s %7s | %9s %9s %9s %9s %7s | %12s %7s %12s %7s %12s %7s\n", "datafile",
           "bytes", "create ms", "json-c", "jc free", "start ms", "ratio", "parse ms", "compile", "free ms", "log sum",
           "ratio", "config mem", "x size", "peak RSS +", "x size", "data RSS +", "x size");
    for (int arg = 1; arg < argc; arg++) {
        size_t length = 0;
        char *bytes = read_file(argv[arg], &length);
        if (!bytes) {
            perror(argv[arg]);
            return 2;
        }
        int runs = length > 4000000 ? 9 : length > 400000 ? 21 : 101;  /* odd counts: the median is a sample */
        double parse[101], parse_free[101], ready[101], create[101];
        double lib_parse[101], lib_compile[101], lib_free[101], lib_sum[101];
        /* first, before the timed runs leave freed memory resident */
        double memory[2] = {0, 0}, data_memory[2] = {0, 0};
        if (memory_figures(bytes, length, 0, memory) != 0 || memory_figures(bytes, length, 1, data_memory) != 0) {
            fprintf(stderr, "memory measurement failed for %s\n", argv[arg]);
            return 1;
        }
        json_c_parse_ms(bytes, length, &parse_free[0]);  /* warm-up */
        start_ms(bytes, length, &create[0], NULL);
        for (int run = 0; run < runs; run++) {
            start_split split;
            double split_create;
            parse[run] = json_c_parse_ms(bytes, length, &parse_free[run]);
            ready[run] = start_ms(bytes, length, &create[run], NULL);
            /* The library logs its own split of a start (one debug line) when debug logging is on. */
            start_ms(bytes, length, &split_create, &split);
            lib_parse[run] = split.parse;
            lib_compile[run] = split.compile;
            lib_free[run] = split.free;
            lib_sum[run] = split.parse + split.compile + split.free;
        }
        double parse_ms = median(parse, runs), ready_ms = median(ready, runs), create_ms = median(create, runs);
        double sum_ms = median(lib_sum, runs);
        const char *name = strrchr(argv[arg], '/');
        printf("%-14s %9zu %9.3f %9.3f %9.3f %8.3f %6.2fx | %9.3f %9.3f %9.3f %9.3f %6.2fx | %10.0f B %6.2fx %10.0f B %6.2fx "
               "%10.0f B %6.2fx\n",
               name ? name + 1 : argv[arg], length, create_ms, parse_ms, median(parse_free, runs), ready_ms,
               ready_ms / parse_ms, median(lib_parse, runs), median(lib_compile, runs), median(lib_free, runs), sum_ms,
               sum_ms / parse_ms, memory[0], memory[0] / (double)length, memory[1], memory[1] / (double)length,
               data_memory[1], data_memory[1] / (double)length);
        free(bytes);
    }
    printf("json-c / jc free: json-c's parse and json_object_put with the library's settings; start ms: exp_client_start;\n"
           "ratio: start / json-c parse. parse / compile / free: the library's own split (debug log, in other starts),\n"
           "log sum: their sum. peak RSS +: a first start's resident set growth (with the library code it runs first);\n"
           "data RSS +: the same with every file mapping resident before (the start's own memory).\n");
    return 0;
}
