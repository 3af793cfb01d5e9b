/*
 * Creates, starts, uses and frees a client 10,000 times. Under LeakSanitizer (tests/sanitize/run.sh) any
 * leaked byte fails the run; the resident set size is also checked to stay flat after a warm-up.
 */
#include <experiment.h>
#include <stdio.h>
#include <stdlib.h>

static long resident_kib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) abort();
    fclose(f);
    return resident * 4;
}

static int dispatch(const exp_event *event, void *user_data) {
    (void)event;
    ++*(long *)user_data;
    return 0;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/datafiles/demo.json";
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 2; }
    fseek(f, 0, SEEK_END);
    size_t length = (size_t)ftell(f);
    rewind(f);
    char *datafile = malloc(length);
    if (!datafile || fread(datafile, 1, length, f) != length) abort();
    fclose(f);

    long events = 0, warm = 0;
    for (int i = 0; i < 10000; i++) {
        exp_client *client = NULL;
        if (exp_client_create("{\"sdk_key\": \"lifecycle-test-key\"}", &client) != EXP_OK) abort();
        exp_client_set_event_dispatcher(client, dispatch, &events);
        if (exp_client_start(client, datafile, length) != EXP_OK) abort();
        exp_attribute attributes[] = {exp_attr_string("country", "NL")};
        exp_decision decision = {0};
        if (exp_decide(client, "user-1", "free_shipping", attributes, 1, EXP_DECIDE_INCLUDE_REASONS, &decision) != EXP_OK)
            abort();
        exp_decision_release(&decision);
        exp_value plan = {EXP_VALUE_STRING, 0, 0, 0.0, "pro"};
        exp_set_user_property(client, "user-1", "plan", &plan);
        exp_client_close(client);
        exp_client_free(client);
        if (i == 1000) warm = resident_kib();
    }
    long end = resident_kib();
    free(datafile);
    printf("10000 clients: resident %ld KiB after 1000, %ld KiB after 10000, %ld events\n", warm, end, events);
    return end - warm > 8 * 1024 ? 1 : 0;  /* more than 8 MiB of growth over 9000 clients is a leak */
}
