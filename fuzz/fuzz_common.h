/*
 * fuzz_common.h — shared helpers for the libexperiment fuzz harnesses (fuzz_*.c).
 *
 * Everything here is about checking the C API contract of include/experiment.h from the outside:
 * status codes, exp_last_error(), out-parameters, UTF-8 and JSON well-formedness of what the library
 * hands back. A violation prints what was seen and calls abort(), which libFuzzer reports as a crash
 * (and saves the input as crash-<sha1>).
 *
 * Header-only (static functions) so each harness is a single translation unit.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* strdup, strnlen */
#endif
/* Each harness uses a subset of these helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"

#ifndef FUZZ_DEMO_DATAFILE
#define FUZZ_DEMO_DATAFILE "examples/datafiles/demo.json"
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Failing                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

static void fz_fail(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void fz_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    const char *last = exp_last_error();
    fprintf(stderr, "\n==== libexperiment API CONTRACT VIOLATION (%s:%d) ====\n", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nexp_last_error(): %s%s%s\n", last ? "\"" : "", last ? last : "(NULL)", last ? "\"" : "");
    fflush(stderr);
    abort();
}

#define FZ_CHECK(cond, ...) do { if (!(cond)) fz_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)

/* ---------------------------------------------------------------------------------------------- */
/* Status codes                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/* Sets of allowed error codes, as bit masks over -status (1..18). EXP_ERR_INTERNAL is never allowed:
 * the header calls it "a bug". */
#define FZ_BIT(code) (1u << (unsigned)(-(code)))
#define FZ_ARGS      (FZ_BIT(EXP_ERR_INVALID_ARGUMENT) | FZ_BIT(EXP_ERR_INVALID_UTF8) | FZ_BIT(EXP_ERR_TOO_LARGE) | FZ_BIT(EXP_ERR_CLOSED))
#define FZ_JSONERR   (FZ_BIT(EXP_ERR_INVALID_JSON) | FZ_BIT(EXP_ERR_TOO_DEEP) | FZ_BIT(EXP_ERR_TOO_LARGE) | FZ_BIT(EXP_ERR_INVALID_UTF8))

static const char *fz_status_name(int s) {
    const char *name = exp_status_str((exp_status)s);
    return name ? name : "(NULL from exp_status_str)";
}

/* Checks one call's result: a known code from `allowed` (or OK), a non-NULL exp_last_error() that is
 * "" after success and a message after failure, and a non-NULL static name. Returns the status. */
static exp_status fz_status_at(const char *file, int line, const char *call, exp_status s, unsigned allowed) {
    /* Read exp_last_error() first: it is valid only until the next exp_* call. */
    const char *last = exp_last_error();
    if (last == NULL) fz_fail(file, line, "%s: exp_last_error() returned NULL", call);
    int empty = (last[0] == '\0');
    if (s == EXP_OK) {
        if (!empty) fz_fail(file, line, "%s: EXP_OK but exp_last_error() is not empty", call);
    } else {
        if ((int)s == EXP_ERR_INTERNAL) fz_fail(file, line, "%s: EXP_ERR_INTERNAL (a library bug by its own definition)", call);
        if ((int)s > 0 || (int)s < -27) fz_fail(file, line, "%s: status %d is not a documented exp_status", call, (int)s);
        if (!(allowed & FZ_BIT(s)))
            fz_fail(file, line, "%s: status %d (%s) is not one this call documents", call, (int)s, fz_status_name(s));
        if (empty) fz_fail(file, line, "%s: failed with %s but exp_last_error() is empty", call, fz_status_name(s));
    }
    if (exp_status_str(s) == NULL) fz_fail(file, line, "%s: exp_status_str(%d) returned NULL", call, (int)s);
    return s;
}
#define FZ_STATUS(call_name, s, allowed) fz_status_at(__FILE__, __LINE__, call_name, (s), (allowed))

/* ---------------------------------------------------------------------------------------------- */
/* UTF-8                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static int fz_utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t len; uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}
static int fz_cstr_utf8(const char *s) { return s == NULL || fz_utf8_valid((const unsigned char *)s, strlen(s)); }

/* ---------------------------------------------------------------------------------------------- */
/* JSON (for checking what the library returns; also measures nesting of inputs)                   */
/* ---------------------------------------------------------------------------------------------- */

/* Deepest bracket nesting of a text, ignoring brackets inside strings: the depth the library would
 * meet if the text parsed (documents deeper than EXP_MAX_JSON_DEPTH must be refused). */
static unsigned fz_json_depth(const char *s, size_t n) {
    unsigned depth = 0, max = 0;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') in_string = 1;
        else if (c == '[' || c == '{') { if (++depth > max) max = depth; }
        else if (c == ']' || c == '}') { if (depth) depth--; }
    }
    return max;
}

/* A small strict RFC 8259 scanner. If `collect_member` is set, the top-level object's member of that
 * name is handed to `collect` (decoded, NUL-free strings only): each string element if it is an array,
 * the value itself if it is a string. */
typedef struct fz_json {
    const char *s;
    size_t n, i;
    unsigned depth;
    const char *collect_member;
    void (*collect)(void *ctx, const char *value, size_t len);
    void *ctx;
    char *buf; size_t buf_len, buf_cap;  /* decoded string of the last scanned string */
    int buf_has_nul;
} fz_json;

static void fz_json_ws(fz_json *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r')) j->i++;
}
static void fz_json_put(fz_json *j, const char *bytes, size_t len) {
    if (j->buf_len + len + 1 > j->buf_cap) {
        size_t cap = j->buf_cap ? j->buf_cap : 64;
        while (cap < j->buf_len + len + 1) cap *= 2;
        j->buf = realloc(j->buf, cap);
        if (!j->buf) abort();
        j->buf_cap = cap;
    }
    memcpy(j->buf + j->buf_len, bytes, len);
    j->buf_len += len;
    j->buf[j->buf_len] = 0;
}
static int fz_hex4(const char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k]; v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v; return 1;
}
static void fz_json_put_cp(fz_json *j, uint32_t cp) {
    char b[4]; size_t len;
    if (cp < 0x80) { b[0] = (char)cp; len = 1; if (cp == 0) j->buf_has_nul = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); len = 2; }
    else if (cp < 0x10000) { b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[2] = (char)(0x80 | (cp & 0x3F)); len = 3; }
    else { b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); len = 4; }
    fz_json_put(j, b, len);
}
static int fz_json_string(fz_json *j) {
    j->buf_len = 0; j->buf_has_nul = 0;
    fz_json_put(j, "", 0);
    j->i++;  /* opening quote */
    while (j->i < j->n) {
        unsigned char c = (unsigned char)j->s[j->i];
        if (c == '"') { j->i++; return 1; }
        if (c < 0x20) return 0;
        if (c != '\\') { fz_json_put(j, (const char *)&j->s[j->i], 1); j->i++; continue; }
        if (++j->i >= j->n) return 0;
        char e = j->s[j->i++];
        switch (e) {
        case '"': fz_json_put(j, "\"", 1); break;
        case '\\': fz_json_put(j, "\\", 1); break;
        case '/': fz_json_put(j, "/", 1); break;
        case 'b': fz_json_put(j, "\b", 1); break;
        case 'f': fz_json_put(j, "\f", 1); break;
        case 'n': fz_json_put(j, "\n", 1); break;
        case 'r': fz_json_put(j, "\r", 1); break;
        case 't': fz_json_put(j, "\t", 1); break;
        case 'u': {
            uint32_t cp;
            if (j->n - j->i < 4 || !fz_hex4(j->s + j->i, &cp)) return 0;
            j->i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && j->n - j->i >= 6 && j->s[j->i] == '\\' && j->s[j->i + 1] == 'u') {
                uint32_t lo;
                if (fz_hex4(j->s + j->i + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    j->i += 6;
                }
            }
            fz_json_put_cp(j, cp);
            break;
        }
        default: return 0;
        }
    }
    return 0;
}
static int fz_json_number(fz_json *j) {
    const char *s = j->s; size_t n = j->n;
    if (j->i < n && s[j->i] == '-') j->i++;
    if (j->i >= n || s[j->i] < '0' || s[j->i] > '9') return 0;
    if (s[j->i] == '0') j->i++; else while (j->i < n && s[j->i] >= '0' && s[j->i] <= '9') j->i++;
    if (j->i < n && s[j->i] == '.') {
        j->i++;
        if (j->i >= n || s[j->i] < '0' || s[j->i] > '9') return 0;
        while (j->i < n && s[j->i] >= '0' && s[j->i] <= '9') j->i++;
    }
    if (j->i < n && (s[j->i] == 'e' || s[j->i] == 'E')) {
        j->i++;
        if (j->i < n && (s[j->i] == '+' || s[j->i] == '-')) j->i++;
        if (j->i >= n || s[j->i] < '0' || s[j->i] > '9') return 0;
        while (j->i < n && s[j->i] >= '0' && s[j->i] <= '9') j->i++;
    }
    return 1;
}
static int fz_json_value(fz_json *j, int collecting);
static int fz_json_literal(fz_json *j, const char *word) {
    size_t len = strlen(word);
    if (j->n - j->i < len || memcmp(j->s + j->i, word, len) != 0) return 0;
    j->i += len; return 1;
}
static int fz_json_value(fz_json *j, int collecting) {
    fz_json_ws(j);
    if (j->i >= j->n) return 0;
    char c = j->s[j->i];
    if (c == '{' || c == '[') {
        if (++j->depth > 512) return 0;
        int top = (j->depth == 1);
        j->i++;
        fz_json_ws(j);
        char close = (c == '{') ? '}' : ']';
        if (j->i < j->n && j->s[j->i] == close) { j->i++; j->depth--; return 1; }
        for (;;) {
            int collect_child = 0;
            if (c == '{') {
                fz_json_ws(j);
                if (j->i >= j->n || j->s[j->i] != '"' || !fz_json_string(j)) return 0;
                if (top && j->collect_member && strcmp(j->buf, j->collect_member) == 0 && !j->buf_has_nul) collect_child = 1;
                fz_json_ws(j);
                if (j->i >= j->n || j->s[j->i] != ':') return 0;
                j->i++;
                fz_json_ws(j);
                /* 1: the member is an array (collect its strings); 2: the member is a string itself. */
                if (collect_child && j->i < j->n && j->s[j->i] == '"') collect_child = 2;
                else if (collect_child && (j->i >= j->n || j->s[j->i] != '[')) collect_child = 0;
            }
            if (!fz_json_value(j, c == '{' ? collect_child : collecting)) return 0;
            fz_json_ws(j);
            if (j->i < j->n && j->s[j->i] == ',') { j->i++; continue; }
            if (j->i < j->n && j->s[j->i] == close) { j->i++; j->depth--; return 1; }
            return 0;
        }
    }
    if (c == '"') {
        if (!fz_json_string(j)) return 0;
        if (((collecting == 1 && j->depth == 2) || (collecting == 2 && j->depth == 1)) && j->collect && !j->buf_has_nul)
            j->collect(j->ctx, j->buf, j->buf_len);
        return 1;
    }
    if (c == 't') return fz_json_literal(j, "true");
    if (c == 'f') return fz_json_literal(j, "false");
    if (c == 'n') return fz_json_literal(j, "null");
    return fz_json_number(j);
}

/* 1 when `s[0..n)` is exactly one valid JSON value (with optional surrounding whitespace). */
static int fz_json_valid_ex(const char *s, size_t n, const char *member,
                            void (*collect)(void *, const char *, size_t), void *ctx) {
    fz_json j = {0};
    j.s = s; j.n = n; j.collect_member = member; j.collect = collect; j.ctx = ctx;
    int ok = fz_json_value(&j, 0);
    if (ok) { fz_json_ws(&j); ok = (j.i == j.n); }
    free(j.buf);
    return ok;
}
static int fz_json_valid(const char *s) { return s && fz_json_valid_ex(s, strlen(s), NULL, NULL, NULL); }

/* json-c's verdict on the input, as libexperiment calls it (its depth limit, the end signalled after a
 * number or literal that ends the input, trailing text checked). */
static int fz_json_c_accepts(const char *text, size_t size) {
    json_tokener *tokener = json_tokener_new_ex(EXP_MAX_JSON_DEPTH);
    if (!tokener) return 1;
    json_tokener_set_flags(tokener, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *parsed = json_tokener_parse_ex(tokener, text, (int)size);
    enum json_tokener_error status = json_tokener_get_error(tokener);
    size_t end = json_tokener_get_parse_end(tokener);
    if (status == json_tokener_continue && end == size) {
        json_object_put(parsed);
        parsed = json_tokener_parse_ex(tokener, "", 1);
        status = json_tokener_get_error(tokener);
        end = size;
    }
    int accepted = status == json_tokener_success;
    for (size_t i = end; accepted && i < size; i++)
        accepted = text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n';
    json_object_put(parsed);
    json_tokener_free(tokener);
    return accepted;
}

/* Checks a library-returned JSON text: non-NULL, valid UTF-8, valid JSON, and (if `open`) starting
 * with that character after optional whitespace. */
static void fz_check_json_out_at(const char *file, int line, const char *what, const char *json, char open) {
    if (json == NULL) fz_fail(file, line, "%s: NULL JSON text", what);
    size_t n = strlen(json);
    if (!fz_utf8_valid((const unsigned char *)json, n)) fz_fail(file, line, "%s: returned JSON is not valid UTF-8: %.400s", what, json);
    if (!fz_json_valid_ex(json, n, NULL, NULL, NULL)) fz_fail(file, line, "%s: returned text is not valid JSON: %.400s", what, json);
    if (open) {
        const char *p = json;
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (*p != open) fz_fail(file, line, "%s: expected a JSON %s: %.400s", what, open == '{' ? "object" : "array", json);
    }
}
#define FZ_CHECK_JSON(what, json, open) fz_check_json_out_at(__FILE__, __LINE__, what, json, open)

/* ---------------------------------------------------------------------------------------------- */
/* Decisions                                                                                       */
/* ---------------------------------------------------------------------------------------------- */

static int fz_is_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) if (b[i]) return 0;
    return 1;
}

/* Checks a filled decision against the header's description of exp_decision. */
static void fz_check_decision_at(const char *file, int line, const exp_decision *d, unsigned options) {
    if (d->flag_key == NULL) fz_fail(file, line, "decision: flag_key is NULL");
    if (!fz_cstr_utf8(d->flag_key)) fz_fail(file, line, "decision: flag_key is not valid UTF-8");
    if (!fz_cstr_utf8(d->variation_key)) fz_fail(file, line, "decision %s: variation_key is not valid UTF-8", d->flag_key);
    if (!fz_cstr_utf8(d->rule_key)) fz_fail(file, line, "decision %s: rule_key is not valid UTF-8", d->flag_key);
    fz_check_json_out_at(file, line, "decision.variables_json", d->variables_json, '{');
    if ((options & EXP_DECIDE_EXCLUDE_VARIABLES) && strcmp(d->variables_json, "{}") != 0)
        fz_fail(file, line, "decision %s: EXCLUDE_VARIABLES but variables_json is %.200s", d->flag_key, d->variables_json);
    if (d->variation_key == NULL && d->enabled)
        fz_fail(file, line, "decision %s: enabled without a variation", d->flag_key);
    if (options & EXP_DECIDE_INCLUDE_REASONS) {
        if (d->reason_count > 0 && d->reasons == NULL) fz_fail(file, line, "decision %s: reason_count %zu with NULL reasons", d->flag_key, d->reason_count);
        for (size_t i = 0; i < d->reason_count; i++) {
            if (d->reasons[i] == NULL) fz_fail(file, line, "decision %s: reasons[%zu] is NULL", d->flag_key, i);
            if (!fz_cstr_utf8(d->reasons[i])) fz_fail(file, line, "decision %s: reasons[%zu] is not valid UTF-8", d->flag_key, i);
        }
    } else if (d->reasons != NULL || d->reason_count != 0) {
        fz_fail(file, line, "decision %s: reasons without EXP_DECIDE_INCLUDE_REASONS", d->flag_key);
    }
}
#define FZ_CHECK_DECISION(d, options) fz_check_decision_at(__FILE__, __LINE__, (d), (options))

/* Releases a decision and checks it is zeroed (release is documented to zero it and be idempotent). */
static void fz_release_at(const char *file, int line, exp_decision *d) {
    exp_decision_release(d);
    if (!fz_is_zero(d, sizeof *d)) fz_fail(file, line, "exp_decision_release did not zero the decision");
    exp_decision_release(d);
}
#define FZ_RELEASE(d) fz_release_at(__FILE__, __LINE__, (d))

/* ---------------------------------------------------------------------------------------------- */
/* Files and the event dispatcher                                                                  */
/* ---------------------------------------------------------------------------------------------- */

/* Reads a whole file (NUL-terminated copy); exits (not aborts: this is setup, not a finding) on error. */
static char *fz_read_file(const char *path, size_t *out_len) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "fuzz: cannot open %s (set FUZZ_DEMO_DATAFILE)\n", path); exit(2); }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) { cap *= 2; buf = realloc(buf, cap); }
    }
    fclose(f);
    if (!buf) exit(2);
    buf[len] = 0;
    *out_len = len;
    return buf;
}

static const char *fz_demo_path(void) {
    const char *env = getenv("FUZZ_DEMO_DATAFILE");
    return (env && *env) ? env : FUZZ_DEMO_DATAFILE;
}

/* Events seen by fz_dispatch; `validate_json` makes it check every body is valid JSON too. */
typedef struct fz_dispatch_state {
    size_t events;
    int validate_json;
    int result;         /* what the dispatcher returns (non-zero: a failed dispatch) */
} fz_dispatch_state;

static int fz_dispatch(const exp_event *event, void *user_data) {
    fz_dispatch_state *st = user_data;
    FZ_CHECK(event != NULL, "dispatcher: NULL event");
    FZ_CHECK(event->url != NULL && event->http_verb != NULL && event->body != NULL, "dispatcher: NULL url/verb/body");
    FZ_CHECK(event->body[event->body_length] == '\0', "dispatcher: body not NUL-terminated at body_length %zu", event->body_length);
    FZ_CHECK(strlen(event->body) == event->body_length, "dispatcher: body has a NUL before body_length (%zu < %zu)",
             strlen(event->body), event->body_length);
    FZ_CHECK(fz_utf8_valid((const unsigned char *)event->body, event->body_length),
             "dispatcher: body is not valid UTF-8: %.400s", event->body);
    if (st && st->validate_json)
        FZ_CHECK(fz_json_valid_ex(event->body, event->body_length, NULL, NULL, NULL),
                 "dispatcher: body is not valid JSON: %.600s", event->body);
    if (st) st->events++;
    return st ? st->result : 0;
}

/* Log messages: a known level, a valid UTF-8 C string, and never the SDK key in full (the header says
 * messages never contain SDK keys in full; `secret` is checked when it is long enough to be unambiguous). */
typedef struct fz_log_state {
    size_t messages;
    const char *secret;
    const char *input; size_t input_len;   /* the current input: a secret it contains may be echoed */
} fz_log_state;

/* The logger also runs on the client's own threads (event retries, datafile polling), at any time until
 * exp_client_close returns: whatever it reads must stay valid that long, and a state that changes per
 * input (`input`) is only touched under this lock (fz_log_set_input). */
static pthread_mutex_t fz_log_lock = PTHREAD_MUTEX_INITIALIZER;

/* Points the log check at the current input (NULL when the input is gone: libFuzzer frees it). */
static void fz_log_set_input(fz_log_state *st, const char *input, size_t input_len) {
    pthread_mutex_lock(&fz_log_lock);
    st->input = input;
    st->input_len = input_len;
    pthread_mutex_unlock(&fz_log_lock);
}

/* memmem without libFuzzer's interceptor: strstr/memmem are hooked, and the fuzzer would learn the
 * needle (the secret) and plant it in inputs. */
static int fz_contains(const char *hay, size_t hay_len, const char *needle, size_t needle_len) {
    if (needle_len == 0) return 1;
    for (size_t i = 0; i + needle_len <= hay_len; i++) {
        size_t k = 0;
        while (k < needle_len && hay[i + k] == needle[k]) k++;
        if (k == needle_len) return 1;
    }
    return 0;
}

static void fz_log(int level, const char *message, void *user_data) {
    fz_log_state *st = user_data;
    FZ_CHECK(level >= EXP_LOG_ERROR && level <= EXP_LOG_DEBUG, "logger: level %d is not an exp_log_level", level);
    FZ_CHECK(message != NULL, "logger: NULL message");
    FZ_CHECK(fz_cstr_utf8(message), "logger: message is not valid UTF-8: %.400s", message);
    pthread_mutex_lock(&fz_log_lock);
    if (st && st->secret && strlen(st->secret) >= 12 &&
        !(st->input && fz_contains(st->input, st->input_len, st->secret, strlen(st->secret))))
        FZ_CHECK(!fz_contains(message, strlen(message), st->secret, strlen(st->secret)),
                 "logger: message shows the SDK key \"%s\" in full: %.400s", st->secret, message);
    if (st) st->messages++;
    pthread_mutex_unlock(&fz_log_lock);
}

#endif /* FUZZ_COMMON_H */
