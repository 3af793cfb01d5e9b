/*
 * Many threads on one client at once — decide, track with events, user properties, forced decisions — while
 * another thread keeps replacing the datafile and offering a broken one. Built against ThreadSanitizer and
 * AddressSanitizer builds of the library by tests/sanitize/run.sh; any sanitizer report fails the run.
 */
#include <experiment.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *datafile; static size_t datafile_len;
static exp_client *client;
static volatile int stop = 0;

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*len + 1);
    if (!b || fread(b, 1, *len, f) != *len) abort();
    fclose(f);
    return b;
}
static int dispatch(const exp_event *e, void *ud) { (void)ud; return e->body_length > 0 ? 0 : 1; }

/* The Sigma calls: properties, a typed flag value, the user's experiments and holdouts, an experiment handle. */
static void sigma_calls(const char *user, const exp_attribute *attrs, size_t n) {
    exp_edit_user_properties(client, user, "{\"app_version\": \"3.1.0\", \"custom.vip\": true}");
    int64_t steps = 0; int found = 0; char *text = NULL;
    exp_flag_int(client, user, "checkout_redesign", "steps", attrs, n, &steps, &found);
    exp_user_experiments(client, user, attrs, n, &text); exp_free(text); text = NULL;
    exp_user_holdouts_json(client, user, attrs, n, &text); exp_free(text); text = NULL;
    exp_experiment *e = NULL;
    if (exp_get_experiment(client, user, "checkout_redesign_ab", attrs, n, &e) == EXP_OK && e) {
        exp_experiment_param_string(e, "button_color", &text, &found); exp_free(text);
        if (!exp_experiment_variation_key(e)) abort();
    }
    exp_experiment_free(e);
}

static void *decider(void *arg) {
    char user[32]; long id = (long)arg;
    for (int i = 0; i < 3000; i++) {
        snprintf(user, sizeof user, "user-%ld-%d", id, i);
        exp_attribute attrs[] = { exp_attr_string("country", "NL"), exp_attr_int("age", 30) };
        exp_decision d = {0};
        if (exp_decide(client, user, "free_shipping", attrs, 2, 0, &d) == EXP_OK) {
            if (!d.flag_key) abort();
        }
        exp_decision_release(&d);
        exp_track(client, "purchase", user, attrs, 2, "{\"revenue\": 1}");
        if (i % 7 == 0) {
            exp_value v = {EXP_VALUE_STRING, 0, 0, 0.0, "DE"};
            exp_set_user_property(client, user, "country", &v);
        }
        if (i % 11 == 0) exp_set_forced_decision(client, user, "free_shipping", NULL, "on");
        if (i % 5 == 0) sigma_calls(user, attrs, 2);
    }
    return NULL;
}
static void *swapper(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        exp_client_start(client, datafile, datafile_len);
        exp_client_start(client, "{bad", 4);  /* rejected: the current config stays */
    }
    return NULL;
}
int main(void) {
    datafile = slurp("examples/datafiles/demo.json", &datafile_len);
    if (exp_client_create("{\"user_store_capacity\": 100, \"log_level\": \"warning\"}", &client) != EXP_OK) return 1;
    exp_client_set_log_level(client, EXP_LOG_WARNING);
    exp_client_set_event_dispatcher(client, dispatch, NULL);
    if (exp_client_start(client, datafile, datafile_len) != EXP_OK) return 1;
    pthread_t t[5];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, decider, (void *)i);
    pthread_create(&t[4], NULL, swapper, NULL);
    for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
    exp_client_free(client); free(datafile);
    puts("stress done");
    return 0;
}
