/*
 * event_receiver.h — a small HTTP/1.1 event endpoint on 127.0.0.1 for C test and benchmark programs
 * (tests/sanitize/events.c, benchmarks/c/bench_events.c): it reads keep-alive POSTs on a thread of its own,
 * counts the visitors ("visitor_id") of every acknowledged request, and can answer every Nth request with 500
 * so that retries are exercised, or stall every Nth request before its 200 (a slow endpoint). Each connection
 * is served on a thread of its own, so concurrent POSTs overlap. Header-only: include it in one program.
 */
#ifndef EXPERIMENT_TESTS_EVENT_RECEIVER_H
#define EXPERIMENT_TESTS_EVENT_RECEIVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_long receiver_visitors; /* visitors in acknowledged requests */
static atomic_long receiver_requests; /* requests answered, acknowledged or failed */
static int receiver_fail_every;       /* 0: acknowledge all; n: request number n-1, 2n-1, ... get a 500 */
static int receiver_listen_fd = -1;
static int receiver_stall_every;      /* 0: never; n: requests n-1, 2n-1, ... wait receiver_stall_ms first */
static int receiver_stall_ms;

static long receiver_count_visitors(const char *body, size_t length) {
    static const char needle[] = "\"visitor_id\"";
    long count = 0;
    const char *cursor = body, *end = body + length;
    while ((cursor = memmem(cursor, (size_t)(end - cursor), needle, sizeof needle - 1)) != NULL) {
        ++count;
        cursor += sizeof needle - 1;
    }
    return count;
}

/* Reads into *buffer until `enough` bytes are there; 0 when the peer closed the connection first. */
static int receiver_read_until(int fd, char **buffer, size_t *capacity, size_t *filled, size_t enough) {
    while (*filled < enough) {
        if (*filled == *capacity) *buffer = realloc(*buffer, *capacity *= 2);
        ssize_t got = read(fd, *buffer + *filled, *capacity - *filled);
        if (got <= 0) return 0;
        *filled += (size_t)got;
    }
    return 1;
}

/* Serves one connection: requests until the client closes it. */
static void receiver_serve_connection(int fd) {
    size_t capacity = 1 << 16, filled = 0;
    char *buffer = malloc(capacity);
    for (;;) {
        char *header_end;
        while ((header_end = memmem(buffer, filled, "\r\n\r\n", 4)) == NULL) {
            if (!receiver_read_until(fd, &buffer, &capacity, &filled, filled + 1)) goto done;
        }
        size_t header_length = (size_t)(header_end - buffer) + 4, body_length = 0;
        char *field = memmem(buffer, header_length, "Content-Length:", 15);
        if (!field) field = memmem(buffer, header_length, "content-length:", 15);
        if (field) body_length = strtoul(field + 15, NULL, 10);
        if (!receiver_read_until(fd, &buffer, &capacity, &filled, header_length + body_length)) goto done;
        long number = atomic_fetch_add(&receiver_requests, 1);
        if (receiver_stall_every > 0 && number % receiver_stall_every == receiver_stall_every - 1) {
            usleep((useconds_t)receiver_stall_ms * 1000u);
        }
        const char *reply;
        if (receiver_fail_every > 0 && number % receiver_fail_every == receiver_fail_every - 1) {
            reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
        } else {
            atomic_fetch_add(&receiver_visitors, receiver_count_visitors(buffer + header_length, body_length));
            reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        }
        if (write(fd, reply, strlen(reply)) < 0) goto done;
        size_t used = header_length + body_length;
        memmove(buffer, buffer + used, filled - used);
        filled -= used;
    }
done:
    free(buffer);
    close(fd);
}

static void *receiver_serve_thread(void *fd) {
    receiver_serve_connection((int)(long)fd);
    return NULL;
}

static void *receiver_serve(void *unused) {
    (void)unused;
    for (;;) {
        int fd = accept(receiver_listen_fd, NULL, NULL);
        if (fd < 0) return NULL;
        pthread_t thread;
        if (pthread_create(&thread, NULL, receiver_serve_thread, (void *)(long)fd) != 0) {
            receiver_serve_connection(fd);
            continue;
        }
        pthread_detach(thread);
    }
}

/* Starts the receiver on a free port of 127.0.0.1 and returns the port; exits the program on failure. */
static int receiver_start(int fail_every) {
    receiver_fail_every = fail_every;
    receiver_listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(receiver_listen_fd, (struct sockaddr *)&address, sizeof address) || listen(receiver_listen_fd, 64) ||
        getsockname(receiver_listen_fd, (struct sockaddr *)&address, &length)) {
        perror("event receiver");
        exit(1);
    }
    pthread_t thread;
    pthread_create(&thread, NULL, receiver_serve, NULL);
    pthread_detach(thread);
    return ntohs(address.sin_port);
}

#endif
