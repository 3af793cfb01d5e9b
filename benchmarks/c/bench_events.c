/*
 * bench_events.c — the event pipeline with the durable queue on: what exp_track (and a decide that sends
 * an impression) costs the caller, and how many events per second reach a local HTTP server.
 *
 * A minimal HTTP/1.1 server runs in this process on 127.0.0.1 (its own thread): it reads each request,
 * counts the visitors in the body ("visitor_id" occurrences) and answers 200. The client writes its state
 * file to a fresh temporary directory and POSTs to that server.
 *
 * Scenarios:
 *   track        exp_track("purchase", user, 2 attributes, no tags) into the SQLite queue (WAL,
 *                synchronous=NORMAL), the dispatcher thread delivering in the background; ns per call
 *                (median and p99 of per-call samples over 20,000 calls).
 *   decide-imp   exp_decide of a flag whose decision sends an impression (the same queue).
 *   delivery     200,000 exp_track calls as fast as the caller can go, batch size 500: events per second
 *                from the first call until the server has counted every event, and the caller's rate.
 *   stalls       issue 18 item 6: the same with every 5th request (20%) stalling 4 s before its 200:
 *                60,000 events, batch size 1000, event_max_inflight 4 (the default) and 1 (one POST at a
 *                time, as before): events per second delivered.
 *
 * Usage: bench_events [--data-dir DIR] [--results FILE]   (TSV rows: ev<TAB>scenario<TAB>value<TAB>unit)
 *        bench_events --calls N --scenario track|decide-imp [--data-dir DIR]
 *            runs exactly N calls (after a warm-up) inside bench_measured_calls(), for
 *            valgrind --tool=callgrind --toggle-collect=bench_measured_calls ./bench_events --calls 20000 --scenario track
 * Build (benchmarks/run.sh does this):
 *   cc -O2 -std=gnu11 -Wall -Wextra -Iinclude -Itests/support benchmarks/c/bench_events.c -o bench_events \
 *      -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -lpthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "experiment.h"
#include "event_receiver.h"

/* ---------------------------------------------------------------------------------------------- */
/* Helpers                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)size + 1);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) { perror(path); exit(1); }
    fclose(f);
    data[size] = 0;
    *length = (size_t)size;
    return data;
}

static void check(exp_status status, const char *what) {
    if (status != EXP_OK) {
        fprintf(stderr, "bench_events: %s: %s (%s)\n", what, exp_status_str(status), exp_last_error());
        exit(1);
    }
}

static exp_client *make_client_inflight(const char *datafile, size_t length, int port, int batch_size,
                                        int inflight) {
    char state_dir[] = "/tmp/bench-events-XXXXXX";
    if (!mkdtemp(state_dir)) { perror("mkdtemp"); exit(1); }
    char options[600];
    snprintf(options, sizeof options,
             "{\"state_dir\": \"%s\", \"event_endpoint\": \"http://127.0.0.1:%d/v1/events\", "
             "\"event_batch_size\": %d, \"event_flush_interval_ms\": 100, \"event_queue_capacity\": 10000000, "
             "\"close_timeout_ms\": 60000, \"event_max_inflight\": %d, \"request_timeout_ms\": 10000}",
             state_dir, port, batch_size, inflight);
    exp_client *client = NULL;
    check(exp_client_create(options, &client), "exp_client_create");
    check(exp_client_start(client, datafile, length), "exp_client_start");
    return client;
}

static exp_client *make_client(const char *datafile, size_t length, int port, int batch_size) {
    return make_client_inflight(datafile, length, port, batch_size, 4);
}

/* Tracks `events` events as fast as the caller can and waits until the receiver counted them all; events/s
 * from the first call to the last arrival (0 when they did not all arrive within `limit_s`). */
static double deliver(exp_client *client, long events, int limit_s, char (*users)[16],
                      const exp_attribute *attributes, double *caller_rate) {
    long base = atomic_load(&receiver_visitors);
    uint64_t start = now_ns();
    for (long i = 0; i < events; ++i) check(exp_track(client, "purchase", users[i % 1000], attributes, 2, NULL), "exp_track");
    uint64_t tracked = now_ns();
    while (atomic_load(&receiver_visitors) - base < events) {
        if (now_ns() - start > (uint64_t)limit_s * 1000000000ull) {
            fprintf(stderr, "bench_events: only %ld of %ld events arrived within %d s\n",
                    atomic_load(&receiver_visitors) - base, events, limit_s);
            return 0;
        }
        usleep(1000);
    }
    if (caller_rate) *caller_rate = events / ((tracked - start) / 1e9);
    return events / ((now_ns() - start) / 1e9);
}

static FILE *g_results;

static void report(const char *scenario, double value, const char *unit) {
    printf("  %-34s %12.0f %s\n", scenario, value, unit);
    if (g_results) fprintf(g_results, "ev\t%s\t%.0f\t%s\n", scenario, value, unit);
}

/* Median and p99 of per-call times of `calls` calls of `body(i)`. */
#define TIME_CALLS(calls, samples, body)                                      \
    do {                                                                      \
        for (int i_ = 0; i_ < (calls); ++i_) {                                \
            uint64_t start_ = now_ns();                                       \
            body;                                                             \
            (samples)[i_] = now_ns() - start_;                                \
        }                                                                     \
        qsort((samples), (size_t)(calls), sizeof(uint64_t), compare_u64);     \
    } while (0)

static void run_calls(exp_client *client, int track, long calls, char (*users)[16],
                      const exp_attribute *attributes) {
    for (long i = 0; i < calls; ++i) {
        if (track) {
            check(exp_track(client, "purchase", users[i % 1000], attributes, 2, NULL), "exp_track");
        } else {
            exp_decision d;
            check(exp_decide(client, users[i % 1000], "checkout_flow", attributes, 2, 0, &d), "exp_decide");
        }
    }
}

/* Not inlined and not cloned, so that callgrind can collect exactly this function (--toggle-collect). */
__attribute__((noinline, noclone))
void bench_measured_calls(exp_client *client, int track, long calls, char (*users)[16],
                          const exp_attribute *attributes) {
    run_calls(client, track, calls, users, attributes);
}

int main(int argc, char **argv) {
    const char *data_dir = "benchmarks/data";
    const char *scenario = NULL;
    long fixed_calls = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--data-dir") && i + 1 < argc) data_dir = argv[++i];
        else if (!strcmp(argv[i], "--results") && i + 1 < argc) g_results = fopen(argv[++i], "a");
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) fixed_calls = atol(argv[++i]);
        else if (!strcmp(argv[i], "--scenario") && i + 1 < argc) scenario = argv[++i];
        else {
            fprintf(stderr, "usage: bench_events [--data-dir DIR] [--results FILE]\n"
                            "       bench_events --calls N --scenario track|decide-imp [--data-dir DIR]\n");
            return 2;
        }
    }
    if (fixed_calls > 0 && (!scenario || (strcmp(scenario, "track") && strcmp(scenario, "decide-imp")))) {
        fprintf(stderr, "bench_events: --calls needs --scenario track or decide-imp\n");
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/bench_ab_rollout.json", data_dir);
    size_t length;
    char *datafile = read_file(path, &length);
    int port = receiver_start(0);

    enum { CALLS = 20000, WARMUP = 2000 };
    static uint64_t samples[CALLS];
    char users[1000][16];
    for (int i = 0; i < 1000; ++i) snprintf(users[i], sizeof users[i], "user-%d", i);
    exp_attribute attributes[2];
    attributes[0] = exp_attr_string("country", "NL");
    attributes[1] = exp_attr_int("age", 30);

    if (fixed_calls > 0) {
        /* Callgrind mode: a warm-up, then exactly N calls of one scenario inside bench_measured_calls(). */
        int track = !strcmp(scenario, "track");
        exp_client *client = make_client(datafile, length, port, 100);
        run_calls(client, track, 2000, users, attributes);
        bench_measured_calls(client, track, fixed_calls, users, attributes);
        check(exp_client_close(client), "exp_client_close");
        exp_client_free(client);
        free(datafile);
        return 0;
    }

    printf("== events: durable queue (SQLite WAL, synchronous=NORMAL) and delivery to 127.0.0.1:%d\n", port);

    /* exp_track caller cost */
    exp_client *client = make_client(datafile, length, port, 100);
    for (int i = 0; i < WARMUP; ++i) check(exp_track(client, "purchase", users[i % 1000], attributes, 2, NULL), "exp_track");
    TIME_CALLS(CALLS, samples, check(exp_track(client, "purchase", users[i_ % 1000], attributes, 2, NULL), "exp_track"));
    report("exp_track median (ns/call)", (double)samples[CALLS / 2], "ns");
    report("exp_track p99 (ns/call)", (double)samples[CALLS * 99 / 100], "ns");

    /* decide with an impression */
    for (int i = 0; i < WARMUP; ++i) {
        exp_decision d;
        check(exp_decide(client, users[i % 1000], "checkout_flow", attributes, 2, 0, &d), "exp_decide");
    }
    long impressions_before = 0;
    {
        char *stats = NULL;
        check(exp_client_stats(client, &stats), "exp_client_stats");
        char *queued = strstr(stats, "\"queued\":");
        impressions_before = queued ? atol(queued + 9) : 0;
        exp_free(stats);
    }
    TIME_CALLS(CALLS, samples, {
        exp_decision d;
        check(exp_decide(client, users[i_ % 1000], "checkout_flow", attributes, 2, 0, &d), "exp_decide");
    });
    char *stats = NULL;
    check(exp_client_stats(client, &stats), "exp_client_stats");
    char *queued = strstr(stats, "\"queued\":");
    long impressions = (queued ? atol(queued + 9) : 0) - impressions_before;
    exp_free(stats);
    report("decide + impression median (ns)", (double)samples[CALLS / 2], "ns");
    report("decide + impression p99 (ns)", (double)samples[CALLS * 99 / 100], "ns");
    printf("  (%ld of %d decisions sent an impression)\n", impressions, CALLS);
    TIME_CALLS(CALLS, samples, {
        exp_decision d;
        check(exp_decide(client, users[i_ % 1000], "checkout_flow", attributes, 2,
                         EXP_DECIDE_DISABLE_DECISION_EVENT, &d), "exp_decide");
    });
    report("decide, DISABLE_DECISION_EVENT (ns)", (double)samples[CALLS / 2], "ns");
    check(exp_client_close(client), "exp_client_close");
    exp_client_free(client);

    /* sustained delivery */
    enum { EVENTS = 200000, STALL_EVENTS = 60000 };
    client = make_client(datafile, length, port, 500);
    long requests_before = atomic_load(&receiver_requests);
    double caller = 0, rate = deliver(client, EVENTS, 120, users, attributes, &caller);
    if (rate == 0) return 1;
    report("caller rate, exp_track (events/s)", caller, "events/s");
    report("delivered to 127.0.0.1 (events/s)", rate, "events/s");
    printf("  (%d events, batch size 500, %ld POSTs in all)\n", EVENTS, atomic_load(&receiver_requests) - requests_before);
    check(exp_client_close(client), "exp_client_close");
    exp_client_free(client);

    /* delivery while 20% of requests stall 4 s */
    receiver_stall_every = 5;
    receiver_stall_ms = 4000;
    int inflight[2] = {4, 1};
    for (int k = 0; k < 2; ++k) {
        client = make_client_inflight(datafile, length, port, 1000, inflight[k]);
        requests_before = atomic_load(&receiver_requests);
        long events = inflight[k] == 1 ? STALL_EVENTS / 10 : STALL_EVENTS;
        rate = deliver(client, events, 180, users, attributes, NULL);
        char name[64];
        snprintf(name, sizeof name, "20%% stall 4 s, %d in flight (ev/s)", inflight[k]);
        report(name, rate, "events/s");
        printf("  (%ld events, batch size 1000, %ld POSTs)\n", events, atomic_load(&receiver_requests) - requests_before);
        (void)exp_client_close(client);
        exp_client_free(client);
    }
    receiver_stall_every = 0;
    free(datafile);
    if (g_results) fclose(g_results);
    return 0;
}
