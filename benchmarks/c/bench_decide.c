/*
 * bench_decide.c — latency, throughput and heap allocations of exp_decide / exp_decide_all.
 *
 * Scenarios (datafiles in benchmarks/data):
 *   a          exp_decide of "checkout_flow" (bench_ab_rollout.json): one A/B experiment on 50% of traffic,
 *              then an audience-targeted 50% delivery rule, then everyone else. No impression event.
 *   a-events   the same with impression events on, handed to a no-op dispatcher callback.
 *   a-reasons  the same as a with EXP_DECIDE_INCLUDE_REASONS (expected to allocate).
 *   a-context  the same as a through user contexts: exp_user_decide on one exp_user per user, made (with the
 *              user's attributes) before the measured calls, as a server keeps a context per request.
 *   b          exp_decide_all over bench_50_flags.json (50 flags, experiments, groups, rollouts). No events.
 *   b-events   the same with impression events on (no-op dispatcher).
 *   a-sqlite   a with sticky bucketing in the SQLite state file (a temporary state_dir), warm cache.
 *   a-redis    a with sticky bucketing in Redis at $BENCH_REDIS_URL (skipped when unset), warm cache.
 *   a-callbacks a with sticky bucketing through C callbacks over an in-memory table, warm cache.
 *   b-sqlite   b with sticky bucketing in the SQLite state file, warm cache.
 *   Every other scenario runs with "profile_store": "none" (stateless, as before sticky bucketing existed).
 *
 * Users: 10,000 pre-built user ids ("user-0" .. "user-9999") with typed attributes derived from the index
 * (the same formula as benchmarks/python/bench_decide.py): country, age, app_version. Calls cycle over them.
 *
 * Timing: after a warm-up, many batches of calls are timed with clock_gettime(CLOCK_MONOTONIC); each batch
 * gives one ns-per-call sample (batch time / batch size). The table shows the median and p99 of the samples.
 *
 * Allocations: malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign are defined in this
 * executable, so they interpose the C library's for every shared object in the process (libexperiment
 * included). They forward to glibc's __libc_* entry points and count calls while `g_counting` is set. A
 * self-test at start-up checks the counter with a deliberate malloc and with strdup (an allocation made
 * inside another shared object).
 *
 * Usage:
 *   bench_decide [--scenario NAME|all] [--data-dir DIR] [--results FILE]
 *       timed run; default: all scenarios, DIR = benchmarks/data. --results appends TSV rows:
 *       c<TAB>scenario<TAB>title<TAB>median_ns<TAB>p99_ns<TAB>decisions_per_s<TAB>allocs_per_call<TAB>bytes_per_call
 *   bench_decide --calls N --scenario NAME [--data-dir DIR]
 *       runs exactly N calls inside bench_measured_calls(), for
 *       valgrind --tool=callgrind --toggle-collect=bench_measured_calls ./bench_decide --calls 100000 --scenario a
 *
 * Build (benchmarks/run.sh does this):
 *   cc -O2 -std=gnu11 -Wall -Wextra -Iinclude benchmarks/c/bench_decide.c -o bench_decide \
 *      -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "experiment.h"

/* ---------------------------------------------------------------------------------------------- */
/* Counting allocator                                                                              */
/* ---------------------------------------------------------------------------------------------- */

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static atomic_int g_counting;
static atomic_ulong g_alloc_calls;
static atomic_ulong g_alloc_bytes;

static inline void note_allocation(size_t size) {
    if (atomic_load_explicit(&g_counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&g_alloc_calls, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_alloc_bytes, size, memory_order_relaxed);
    }
}

void *malloc(size_t size) {
    note_allocation(size);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    note_allocation(count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    note_allocation(size);
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    note_allocation(size);
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    note_allocation(size);
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    note_allocation(size);
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *out = pointer;
    return 0;
}

static void counting_start(void) {
    atomic_store(&g_alloc_calls, 0);
    atomic_store(&g_alloc_bytes, 0);
    atomic_store(&g_counting, 1);
}

static unsigned long counting_stop(unsigned long *out_bytes) {
    atomic_store(&g_counting, 0);
    if (out_bytes) *out_bytes = atomic_load(&g_alloc_bytes);
    return atomic_load(&g_alloc_calls);
}

/* Checks that the counter sees a malloc made here and one made inside libc (another shared object). */
static int counting_self_test(void) {
    counting_start();
    void *volatile p = malloc(64);
    unsigned long direct = counting_stop(NULL);
    free(p);

    counting_start();
    char *volatile s = strdup("allocation inside libc");
    unsigned long shared = counting_stop(NULL);
    free(s);

    if (direct != 1 || shared < 1) {
        fprintf(stderr, "allocation counter self-test failed: malloc counted %lu (want 1), strdup %lu (want >= 1)\n",
                direct, shared);
        return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* Users                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

enum { USER_COUNT = 10000, ATTRIBUTES_PER_USER = 3 };

static char g_user_ids[USER_COUNT][16];
static exp_attribute g_attributes[USER_COUNT][ATTRIBUTES_PER_USER];

/* Keep in sync with benchmarks/python/bench_decide.py (user_attributes). */
static void build_users(void) {
    static const char *const countries[] = {"NL", "DE", "FR", "US", "GB"};
    static const char *const versions[] = {"1.9.3", "2.0.0", "2.4.1", "3.1.0"};
    for (int i = 0; i < USER_COUNT; i++) {
        snprintf(g_user_ids[i], sizeof g_user_ids[i], "user-%d", i);
        g_attributes[i][0] = exp_attr_string("country", countries[i % 5]);
        g_attributes[i][1] = exp_attr_int("age", 16 + (i * 7) % 60);
        g_attributes[i][2] = exp_attr_string("app_version", versions[(i / 5) % 4]);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Scenarios                                                                                       */
/* ---------------------------------------------------------------------------------------------- */

typedef struct scenario {
    const char *name;
    const char *title;
    const char *datafile;   /* file name inside the data directory */
    int decide_all;         /* 0: exp_decide of `flag`; 1: exp_decide_all; 2: exp_user_decide of `flag` */
    const char *flag;
    unsigned options;
    int with_dispatcher;    /* install the no-op event dispatcher */
    size_t batch;           /* calls per timed batch */
    size_t batches;         /* timed batches */
    const char *profile;    /* profile store: NULL = "none", "sqlite", "redis", "callbacks" */
} scenario;

static const scenario g_scenarios[] = {
    {"a", "decide, A/B + targeted rollout, no event", "bench_ab_rollout.json", 0, "checkout_flow",
     EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 1000, 3000, NULL},
    {"a-context", "user context decide, same as a", "bench_ab_rollout.json", 2, "checkout_flow",
     EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 1000, 3000, NULL},
    {"a-events", "decide, same, impression event (no-op dispatch)", "bench_ab_rollout.json", 0,
     "checkout_flow", 0, 1, 1000, 1000, NULL},
    {"a-reasons", "decide, same, INCLUDE_REASONS, no event", "bench_ab_rollout.json", 0, "checkout_flow",
     EXP_DECIDE_DISABLE_DECISION_EVENT | EXP_DECIDE_INCLUDE_REASONS, 0, 1000, 500, NULL},
    {"b", "decide_all, 50 flags, no events", "bench_50_flags.json", 1, NULL,
     EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 100, 300, NULL},
    {"b-events", "decide_all, 50 flags, impression events", "bench_50_flags.json", 1, NULL, 0, 1, 100, 50, NULL},
    {"a-sqlite", "decide, as a, sticky: sqlite (warm cache)", "bench_ab_rollout.json", 0, "checkout_flow",
     EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 1000, 3000, "sqlite"},
    {"a-redis", "decide, as a, sticky: redis (warm cache)", "bench_ab_rollout.json", 0, "checkout_flow",
     EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 1000, 3000, "redis"},
    {"a-callbacks", "decide, as a, sticky: C callbacks (warm cache)", "bench_ab_rollout.json", 0,
     "checkout_flow", EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 1000, 3000, "callbacks"},
    {"b-sqlite", "decide_all, as b, sticky: sqlite (warm cache)", "bench_50_flags.json", 1, NULL,
     EXP_DECIDE_DISABLE_DECISION_EVENT, 0, 100, 300, "sqlite"},
};
enum { SCENARIO_COUNT = sizeof g_scenarios / sizeof g_scenarios[0] };

typedef struct bench {
    const scenario *sc;
    exp_client *client;
    exp_decision *decisions;  /* decide_all output, `capacity` long */
    exp_user **users;         /* user contexts (scenario kind 2), USER_COUNT of them */
    size_t capacity;
    size_t flags_per_call;    /* decisions per call: 1, or the flag count */
    size_t cursor;            /* next user */
    unsigned long events;     /* events seen by the dispatcher */
    int failed;
} bench;

static int noop_dispatch(const exp_event *event, void *user_data) {
    bench *b = user_data;
    b->events += event->body_length > 0;
    return 0;
}

static char *read_file(const char *path, size_t *out_length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    if (fseek(file, 0, SEEK_END) != 0) { fclose(file); return NULL; }
    long size = ftell(file);
    if (size < 0 || fseek(file, 0, SEEK_SET) != 0) { fclose(file); return NULL; }
    char *buffer = malloc((size_t)size + 1);
    if (buffer && fread(buffer, 1, (size_t)size, file) != (size_t)size) { free(buffer); buffer = NULL; }
    fclose(file);
    if (buffer) { buffer[size] = '\0'; *out_length = (size_t)size; }
    return buffer;
}

/* The host profile store of the callbacks scenario: user id -> profile JSON in an open-addressing table. */
enum { PROFILE_SLOTS = 32768 };
static char *g_profile_users[PROFILE_SLOTS];
static char *g_profile_json[PROFILE_SLOTS];

static size_t profile_slot(const char *user_id) {
    size_t hash = 5381;
    for (const char *p = user_id; *p; p++) hash = hash * 33 + (unsigned char)*p;
    size_t slot = hash % PROFILE_SLOTS;
    while (g_profile_users[slot] && strcmp(g_profile_users[slot], user_id) != 0) slot = (slot + 1) % PROFILE_SLOTS;
    return slot;
}

static int table_lookup(const char *user_id, exp_profile_reply *reply, void *user_data) {
    (void)user_data;
    size_t slot = profile_slot(user_id);
    if (!g_profile_json[slot]) return 0;
    return exp_profile_reply_set(reply, g_profile_json[slot], strlen(g_profile_json[slot])) == EXP_OK ? 0 : 1;
}

static int table_save(const char *user_id, const char *profile_json, void *user_data) {
    (void)user_data;
    size_t slot = profile_slot(user_id);
    if (!g_profile_users[slot]) g_profile_users[slot] = strdup(user_id);
    free(g_profile_json[slot]);
    g_profile_json[slot] = strdup(profile_json);
    return 0;
}

/* Temporary state directories, made on first use and removed at exit. */
static char g_events_dir[] = "/tmp/bench-decide-events-XXXXXX";
static char g_sqlite_dir[] = "/tmp/bench-decide-state-XXXXXX";

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static void remove_temporary_dirs(void) {
    if (!strstr(g_events_dir, "XXXXXX")) nftw(g_events_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!strstr(g_sqlite_dir, "XXXXXX")) nftw(g_sqlite_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* `template` made into a directory the first time (it then no longer ends in XXXXXX). */
static const char *temporary_dir(char *template) {
    if (strstr(template, "XXXXXX")) {
        if (!mkdtemp(template)) { perror("mkdtemp"); return NULL; }
        static int registered;
        if (!registered) atexit(remove_temporary_dirs);
        registered = 1;
    }
    return template;
}

/* The client options for a scenario's profile store; NULL (skip the scenario) when it cannot run here.
 * Scenarios without a SQLite profile store still get a state file (the event queue lives there): a private
 * temporary one, so events another program left in the default state directory are not retried by a
 * background thread during the run (its work and allocations would be counted against the decisions). */
static const char *profile_options(const scenario *sc, char *buffer, size_t size) {
    if (!sc->profile || strcmp(sc->profile, "callbacks") == 0) {
        const char *state_dir = temporary_dir(g_events_dir);
        if (!state_dir) return NULL;
        snprintf(buffer, size, "{\"sdk_key\": \"bench\", \"state_dir\": \"%s\", \"profile_store\": \"%s\"}",
                 state_dir, sc->profile ? "callbacks" : "none");
    } else if (strcmp(sc->profile, "sqlite") == 0) {
        const char *state_dir = temporary_dir(g_sqlite_dir);
        if (!state_dir) return NULL;
        snprintf(buffer, size, "{\"sdk_key\": \"bench\", \"state_dir\": \"%s\"}", state_dir);
    } else {
        const char *url = getenv("BENCH_REDIS_URL");
        if (!url || !*url) return NULL;
        snprintf(buffer, size, "{\"sdk_key\": \"bench\", \"profile_store\": {\"redis\": {\"url\": \"%s\", "
                 "\"prefix\": \"bench:%d:\"}}}", url, (int)time(NULL));
    }
    return buffer;
}

static int bench_open(bench *b, const scenario *sc, const char *data_dir) {
    memset(b, 0, sizeof *b);
    b->sc = sc;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data_dir, sc->datafile);
    size_t length = 0;
    char *text = read_file(path, &length);
    if (!text) { perror(path); return 0; }
    char options[1024];
    if (!profile_options(sc, options, sizeof options)) {
        free(text);
        return -1;
    }
    exp_status s = exp_client_create(options, &b->client);
    if (s == EXP_OK && sc->profile && strcmp(sc->profile, "callbacks") == 0)
        s = exp_client_set_profile_store(b->client, table_lookup, table_save, NULL);
    if (s == EXP_OK) s = exp_client_start(b->client, text, length);
    free(text);
    if (s == EXP_OK && sc->with_dispatcher) s = exp_client_set_event_dispatcher(b->client, noop_dispatch, b);
    if (s == EXP_OK) s = exp_flag_count(b->client, &b->capacity);
    if (s != EXP_OK) {
        fprintf(stderr, "%s: setting up the client failed: %s: %s\n", sc->name, exp_status_str(s), exp_last_error());
        return 0;
    }
    b->flags_per_call = sc->decide_all == 1 ? b->capacity : 1;
    if (sc->decide_all == 2) {
        b->users = calloc(USER_COUNT, sizeof *b->users);
        if (!b->users) return 0;
        for (int i = 0; i < USER_COUNT; i++) {
            s = exp_user_create(b->client, g_user_ids[i], strlen(g_user_ids[i]), g_attributes[i],
                                ATTRIBUTES_PER_USER, &b->users[i]);
            if (s != EXP_OK) {
                fprintf(stderr, "%s: exp_user_create failed: %s\n", sc->name, exp_last_error());
                return 0;
            }
        }
    }
    if (sc->decide_all == 1) {
        b->decisions = calloc(b->capacity, sizeof *b->decisions);
        if (!b->decisions) return 0;
    }
    return 1;
}

static void bench_close(bench *b) {
    free(b->decisions);
    if (b->users)
        for (int i = 0; i < USER_COUNT; i++) exp_user_free(b->users[i]);
    free(b->users);
    exp_client_free(b->client);
}

/* The measured work: `n` calls, each for the next user, each result released as a real caller would. */
static inline void run_calls(bench *b, size_t n) {
    const scenario *sc = b->sc;
    size_t cursor = b->cursor;
    int failed = 0;
    if (sc->decide_all == 2) {
        size_t flag_length = strlen(sc->flag);
        for (size_t i = 0; i < n; i++) {
            exp_decision d = {0};
            failed |= exp_user_decide(b->users[cursor], sc->flag, flag_length, sc->options, &d) != EXP_OK;
            exp_decision_release(&d);
            if (++cursor == USER_COUNT) cursor = 0;
        }
    } else if (!sc->decide_all) {
        for (size_t i = 0; i < n; i++) {
            exp_decision d = {0};
            failed |= exp_decide(b->client, g_user_ids[cursor], sc->flag, g_attributes[cursor],
                                 ATTRIBUTES_PER_USER, sc->options, &d) != EXP_OK;
            exp_decision_release(&d);
            if (++cursor == USER_COUNT) cursor = 0;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            size_t filled = 0;
            failed |= exp_decide_all(b->client, g_user_ids[cursor], g_attributes[cursor], ATTRIBUTES_PER_USER,
                                     sc->options, b->decisions, b->capacity, &filled) != EXP_OK;
            exp_decisions_release(b->decisions, filled);
            if (++cursor == USER_COUNT) cursor = 0;
        }
    }
    b->cursor = cursor;
    if (failed && !b->failed) {
        b->failed = 1;
        fprintf(stderr, "%s: a call failed: %s\n", sc->name, exp_last_error());
    }
}

/* Not inlined and not cloned, so that callgrind can collect exactly this function (--toggle-collect). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noinline, noipa))
#else
__attribute__((noinline))
#endif
void bench_measured_calls(bench *b, size_t n) {
    run_calls(b, n);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int compare_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

typedef struct result {
    double median_ns, p99_ns, decisions_per_s, allocs_per_call, bytes_per_call;
    size_t calls;
} result;

static int run_timed(bench *b, result *r) {
    const scenario *sc = b->sc;
    /* Warm up: one pass over every user (caches, branch predictors, lazily built state). */
    run_calls(b, USER_COUNT < sc->batch * sc->batches ? USER_COUNT : sc->batch * sc->batches);

    /* Allocations, counted over one pass of every user (timed batches run with counting off). */
    size_t counted_calls = sc->decide_all == 1 ? 1000 : USER_COUNT;
    unsigned long bytes = 0;
    counting_start();
    run_calls(b, counted_calls);
    unsigned long allocs = counting_stop(&bytes);

    double *samples = malloc(sc->batches * sizeof *samples);
    if (!samples) return 0;
    for (size_t i = 0; i < sc->batches; i++) {
        uint64_t start = now_ns();
        run_calls(b, sc->batch);
        samples[i] = (double)(now_ns() - start) / (double)sc->batch;
    }
    qsort(samples, sc->batches, sizeof *samples, compare_double);
    r->median_ns = sc->batches % 2 ? samples[sc->batches / 2]
                                   : (samples[sc->batches / 2 - 1] + samples[sc->batches / 2]) / 2;
    size_t p99_index = (size_t)((double)(sc->batches - 1) * 0.99 + 0.5);
    r->p99_ns = samples[p99_index];
    r->decisions_per_s = 1e9 / r->median_ns * (double)b->flags_per_call;
    r->allocs_per_call = (double)allocs / (double)counted_calls;
    r->bytes_per_call = (double)bytes / (double)counted_calls;
    r->calls = sc->batch * sc->batches;
    free(samples);
    return !b->failed;
}

static const scenario *find_scenario(const char *name) {
    for (size_t i = 0; i < SCENARIO_COUNT; i++)
        if (strcmp(g_scenarios[i].name, name) == 0) return &g_scenarios[i];
    return NULL;
}

static void usage(void) {
    fprintf(stderr, "usage: bench_decide [--scenario NAME|all] [--data-dir DIR] [--results FILE]\n"
                    "       bench_decide --calls N --scenario NAME [--data-dir DIR]\nscenarios:");
    for (size_t i = 0; i < SCENARIO_COUNT; i++) fprintf(stderr, " %s", g_scenarios[i].name);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv) {
    const char *scenario_name = "all", *data_dir = "benchmarks/data", *results_path = NULL;
    long long fixed_calls = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--scenario") == 0 && i + 1 < argc) scenario_name = argv[++i];
        else if (strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc) data_dir = argv[++i];
        else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results_path = argv[++i];
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) fixed_calls = atoll(argv[++i]);
        else { usage(); return 2; }
    }
    build_users();

    /* Callgrind mode: exactly N calls of one scenario inside bench_measured_calls(). */
    if (fixed_calls >= 0) {
        const scenario *sc = find_scenario(scenario_name);
        if (!sc) { usage(); return 2; }
        bench b;
        if (bench_open(&b, sc, data_dir) != 1) return 1;
        run_calls(&b, 1000); /* warm-up outside the collected function */
        bench_measured_calls(&b, (size_t)fixed_calls);
        printf("%s: %lld calls (%zu decisions per call)\n", sc->name, fixed_calls, b.flags_per_call);
        int ok = !b.failed;
        bench_close(&b);
        return ok ? 0 : 1;
    }

    if (!counting_self_test()) return 1;

    FILE *results = NULL;
    if (results_path && !(results = fopen(results_path, "a"))) { perror(results_path); return 1; }

    printf("libexperiment %s — %d users, per-call times from batches timed with CLOCK_MONOTONIC\n",
           exp_version(), USER_COUNT);
    printf("%-11s %-48s %10s %10s %10s %14s %12s %12s\n", "scenario", "what", "calls", "median ns",
           "p99 ns", "decisions/s", "allocs/call", "bytes/call");
    int ok = 1, ran = 0;
    for (size_t i = 0; i < SCENARIO_COUNT; i++) {
        const scenario *sc = &g_scenarios[i];
        if (strcmp(scenario_name, "all") != 0 && strcmp(scenario_name, sc->name) != 0) continue;
        ran = 1;
        bench b;
        result r = {0};
        int opened = bench_open(&b, sc, data_dir);
        if (opened < 0) { printf("%-10s %-48s skipped (set BENCH_REDIS_URL)\n", sc->name, sc->title); continue; }
        if (!opened) { ok = 0; continue; }
        if (!run_timed(&b, &r)) {
            fprintf(stderr, "%s: failed, no result\n", sc->name);
            ok = 0;
            bench_close(&b);
            continue;
        }
        if (sc->with_dispatcher && b.events == 0) {
            fprintf(stderr, "%s: no event reached the dispatcher\n", sc->name);
            ok = 0;
        }
        printf("%-11s %-48s %10zu %10.1f %10.1f %14.0f %12.2f %12.1f\n", sc->name, sc->title, r.calls,
               r.median_ns, r.p99_ns, r.decisions_per_s, r.allocs_per_call, r.bytes_per_call);
        fflush(stdout);
        if (results) {
            fprintf(results, "c\t%s\t%s\t%.1f\t%.1f\t%.0f\t%.2f\t%.1f\n", sc->name, sc->title, r.median_ns,
                    r.p99_ns, r.decisions_per_s, r.allocs_per_call, r.bytes_per_call);
            fflush(results); /* keep finished rows if a later scenario crashes */
        }
        bench_close(&b);
    }
    if (results) fclose(results);
    if (!ran) { usage(); return 2; }
    return ok ? 0 : 1;
}
