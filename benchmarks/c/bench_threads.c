/*
 * Decisions per second with 1, 2, 4 and 8 threads on one client while another thread replaces the datafile
 * every 100 ms (benchmarks/data/bench_ab_rollout.json). Throughput should grow with cores, not collapse on a
 * lock, and not drop during swaps.
 *
 *     cc -O2 -Iinclude benchmarks/c/bench_threads.c -o bench_threads -L.build/release -lexperiment \
 *        -Wl,-rpath,$PWD/.build/release -lpthread && ./bench_threads
 */
#include <experiment.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static exp_client *client;
static char *datafile;
static size_t datafile_length;
static atomic_int running;
static atomic_long swaps;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *decide_loop(void *arg) {
    long id = (long)arg, count = 0;
    char user[32];
    exp_attribute attributes[] = {exp_attr_string("country", "NL"), exp_attr_int("age", 31),
                                  exp_attr_string("app_version", "2.3.1")};
    while (atomic_load_explicit(&running, memory_order_relaxed)) {
        for (int i = 0; i < 1000; i++) {
            snprintf(user, sizeof user, "user-%ld-%ld", id, count + i);
            exp_decision d = {0};
            if (exp_decide(client, user, "checkout_flow", attributes, 3, EXP_DECIDE_DISABLE_DECISION_EVENT, &d))
                abort();
            exp_decision_release(&d);
        }
        count += 1000;
    }
    return (void *)count;
}

static void *swap_loop(void *arg) {
    (void)arg;
    while (atomic_load_explicit(&running, memory_order_relaxed)) {
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        if (exp_client_start(client, datafile, datafile_length)) abort();
        atomic_fetch_add(&swaps, 1);
    }
    return NULL;
}

static double run(int threads, int swapping, double seconds) {
    pthread_t workers[64], swapper;
    atomic_store(&running, 1);
    if (swapping) pthread_create(&swapper, NULL, swap_loop, NULL);
    double start = now();
    for (long i = 0; i < threads; i++) pthread_create(&workers[i], NULL, decide_loop, (void *)i);
    struct timespec wait = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&wait, NULL);
    atomic_store(&running, 0);
    long total = 0;
    for (int i = 0; i < threads; i++) {
        void *count;
        pthread_join(workers[i], &count);
        total += (long)count;
    }
    double elapsed = now() - start;
    if (swapping) pthread_join(swapper, NULL);
    return (double)total / elapsed;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "benchmarks/data/bench_ab_rollout.json";
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 2; }
    fseek(f, 0, SEEK_END);
    datafile_length = (size_t)ftell(f);
    rewind(f);
    datafile = malloc(datafile_length);
    if (!datafile || fread(datafile, 1, datafile_length, f) != datafile_length) return 2;
    fclose(f);
    /* Stateless (no sticky bucketing), as the figures before profile stores existed. */
    if (exp_client_create("{\"profile_store\": \"none\"}", &client) || exp_client_start(client, datafile, datafile_length)) {
        fprintf(stderr, "%s\n", exp_last_error());
        return 1;
    }
    printf("threads  decisions/s (steady)  decisions/s (datafile swapped every 100 ms)  vs 1 thread\n");
    double single = 0;
    for (int threads = 1; threads <= 8; threads *= 2) {
        double steady = run(threads, 0, 2.0);
        double swapped = run(threads, 1, 2.0);
        if (threads == 1) single = steady;
        printf("%7d  %21.0f  %44.0f  %10.2fx\n", threads, steady, swapped, steady / single);
    }
    printf("(%ld datafile swaps during the swapping runs)\n", atomic_load(&swaps));
    exp_client_free(client);
    free(datafile);
    return 0;
}
