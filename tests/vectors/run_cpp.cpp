/*
 * Replays tests/vectors/cases through the C++ wrapper (bindings/cpp/experiment.hpp), as run_c.c does through
 * the C ABI (format: tests/vectors/README.md). Prints `N passed, N failed` last, exits 1 on any failure;
 * call kinds the wrapper has no call for are counted apart as "not applicable".
 *
 *     c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -Ibindings/cpp -o run_cpp tests/vectors/run_cpp.cpp \
 *         -L.build/release -lexperiment -ljson-c
 *     ./run_cpp [--root DIR] tests/vectors/cases/<name>.json ...
 *
 * The cases are read with json-c (the product's JSON dependency); decide calls with forced decisions go
 * through experiment::UserContext, the others through experiment::Client by user id.
 */
#include <experiment.hpp>
#include <json-c/json.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char *const TAG = "$vector_type";
const long MAX_LISTED = 15;

/* json-c objects owned by a unique_ptr (json_object_put when it goes). */
struct JsonPut {
    void operator()(json_object *o) const { json_object_put(o); }
};
using Json = std::unique_ptr<json_object, JsonPut>;

json_object *field(json_object *object, const char *name) {
    json_object *value = nullptr;
    return object && json_object_object_get_ex(object, name, &value) ? value : nullptr;
}

std::string text_of(json_object *string) {
    return std::string(json_object_get_string(string), static_cast<std::size_t>(json_object_get_string_len(string)));
}

std::optional<std::string> optional_text(json_object *string) {
    if (!string) return std::nullopt;
    return text_of(string);
}

json_object *json_string(const std::string &text) {
    return json_object_new_string_len(text.data(), static_cast<int>(text.size()));
}

json_object *json_optional(const std::optional<std::string> &text) { return text ? json_string(*text) : nullptr; }

Json read_json(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return nullptr;
    std::stringstream buffer;
    buffer << in.rdbuf();
    return Json(json_tokener_parse(buffer.str().c_str()));
}

/* ------------------------------------------------------------------------------------------------ */
/* Tally                                                                                            */
/* ------------------------------------------------------------------------------------------------ */

struct Tally {
    long passed = 0, failed = 0, known = 0, known_fixed = 0, listed = 0;
    std::map<std::string, long> not_applicable;
    json_object *known_differences = nullptr;   // the "calls" array of known_differences.json

    bool is_known(const std::string &case_name, std::size_t index) const {
        std::size_t n = known_differences ? json_object_array_length(known_differences) : 0;
        for (std::size_t i = 0; i < n; i++) {
            json_object *entry = json_object_array_get_idx(known_differences, i);
            json_object *c = field(entry, "case"), *x = field(entry, "index"), *bindings = field(entry, "bindings");
            if (!c || !x || text_of(c) != case_name || static_cast<std::size_t>(json_object_get_int64(x)) != index)
                continue;
            if (!bindings) return true;   // an entry naming no binding applies to every runner
            for (std::size_t b = 0; b < json_object_array_length(bindings); b++)
                if (text_of(json_object_array_get_idx(bindings, b)) == "c++") return true;
        }
        return false;
    }

    void record(const std::string &case_name, std::size_t index, const std::string &kind, json_object *expected,
                json_object *actual) {
        bool ok = json_object_equal(expected, actual) != 0, known_here = is_known(case_name, index);
        if (ok) {
            passed++;
            known_fixed += known_here;
            return;
        }
        if (known_here) {
            known++;
            return;
        }
        failed++;
        if (listed++ >= MAX_LISTED) return;
        int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
        for (const char *part : {"result", "events", "notifications"}) {   // the first part that differs
            json_object *e = field(expected, part), *a = field(actual, part);
            if (json_object_equal(e, a)) continue;
            std::printf("DIFF %s#%zu %s: at .%s\n     expected %.500s\n     got      %.500s\n", case_name.c_str(),
                        index, kind.c_str(), part, json_object_to_json_string_ext(e, flags),
                        json_object_to_json_string_ext(a, flags));
            return;
        }
    }

    int report() const {
        long total = 0;
        for (const auto &entry : not_applicable) total += entry.second;
        if (total) {
            std::printf("c++: %ld not applicable (no such call in the C++ wrapper:", total);
            const char *separator = "";
            for (const auto &entry : not_applicable) {
                std::printf("%s %s %ld", separator, entry.first.c_str(), entry.second);
                separator = ",";
            }
            std::printf(")\n");
        }
        if (known || known_fixed)
            std::printf("c++: %ld known differences (known_differences.json), %ld listed there now pass\n", known,
                        known_fixed);
        std::printf("%ld passed, %ld failed\n", passed, failed);
        return failed ? 1 : 0;
    }
};

/* ------------------------------------------------------------------------------------------------ */
/* Inputs (README "Values") and outputs                                                             */
/* ------------------------------------------------------------------------------------------------ */

experiment::Value tagged_value(json_object *tagged) {
    std::string kind = field(tagged, TAG) ? text_of(field(tagged, TAG)) : "";
    json_object *inner = field(tagged, "value");
    if (kind == "bigint") return experiment::Value::big_integer(text_of(inner));
    if (kind == "float") {
        std::string text = text_of(inner);
        return text == "nan" ? NAN : (text[0] == '-' ? -INFINITY : INFINITY);
    }
    return experiment::Value::unsupported();   // list and dict: a type conditions cannot use
}

experiment::Value value_of(json_object *value) {
    switch (json_object_get_type(value)) {
    case json_type_boolean: return experiment::Value(json_object_get_boolean(value) != 0);
    case json_type_int: return experiment::Value(static_cast<std::int64_t>(json_object_get_int64(value)));
    case json_type_double: return experiment::Value(json_object_get_double(value));
    case json_type_string: return experiment::Value(text_of(value));
    case json_type_object: return tagged_value(value);
    default: return experiment::Value(nullptr);
    }
}

experiment::Attributes attributes_of(json_object *call) {
    experiment::Attributes attributes;
    json_object *object = field(call, "attributes");
    json_object_object_foreach(object, key, value) attributes.set(key, value_of(value));
    return attributes;
}

unsigned options_of(json_object *call) {
    json_object *names = field(call, "options");
    return names ? experiment::parse_decide_options(json_object_to_json_string(names)) : 0;
}

json_object *decision_json(const experiment::Decision &d) {
    json_object *out = json_object_new_object(), *reasons = json_object_new_array();
    json_object_object_add(out, "flag_key", json_string(d.flag_key));
    json_object_object_add(out, "enabled", json_object_new_boolean(d.enabled));
    json_object_object_add(out, "variation_key", json_optional(d.variation_key));
    json_object_object_add(out, "rule_key", json_optional(d.rule_key));
    json_object_object_add(out, "variables", json_tokener_parse(d.variables_json.c_str()));
    for (const std::string &reason : d.reasons) json_object_array_add(reasons, json_string(reason));
    json_object_object_add(out, "reasons", reasons);
    return out;
}

json_object *decisions_json(const std::vector<experiment::Decision> &decisions) {
    json_object *out = json_object_new_object();
    for (const experiment::Decision &d : decisions) json_object_object_add(out, d.flag_key.c_str(), decision_json(d));
    return out;
}

json_object *raised(const experiment::Error &error) {
    json_object *out = json_object_new_object();
    json_object_object_add(out, "raised", json_object_new_string(error.what()));
    return out;
}

/* README "Events": the uuid and timestamp of each event, the client's name and version are not compared. */
void normalize_params(json_object *params) {
    json_object_object_del(params, "client_name");
    json_object_object_del(params, "client_version");
    json_object *visitors = field(params, "visitors");
    for (std::size_t v = 0; visitors && v < json_object_array_length(visitors); v++) {
        json_object *snapshots = field(json_object_array_get_idx(visitors, v), "snapshots");
        for (std::size_t s = 0; snapshots && s < json_object_array_length(snapshots); s++) {
            json_object *events = field(json_object_array_get_idx(snapshots, s), "events");
            for (std::size_t e = 0; events && e < json_object_array_length(events); e++) {
                json_object_object_del(json_object_array_get_idx(events, e), "uuid");
                json_object_object_del(json_object_array_get_idx(events, e), "timestamp");
            }
        }
    }
}

/* What one call dispatched and notified, in order. */
struct Capture {
    json_object *events = nullptr;
    json_object *notifications = nullptr;
};

/* ------------------------------------------------------------------------------------------------ */
/* The calls                                                                                        */
/* ------------------------------------------------------------------------------------------------ */

struct CallInput {
    json_object *call;
    std::string user_id;
    experiment::Attributes attributes;
    unsigned options;
};

bool has_forced_decisions(const CallInput &in) {
    json_object *forced = field(in.call, "forced_decisions");
    return forced && json_object_array_length(forced) > 0;
}

std::unique_ptr<experiment::UserContext> forced_user(experiment::Client &client, const CallInput &in) {
    auto user = std::make_unique<experiment::UserContext>(client, in.user_id, in.attributes);
    json_object *forced = field(in.call, "forced_decisions");
    for (std::size_t i = 0; i < json_object_array_length(forced); i++) {
        json_object *f = json_object_array_get_idx(forced, i);
        std::optional<std::string> rule = optional_text(field(f, "rule_key"));
        std::optional<std::string_view> rule_view;
        if (rule) rule_view = *rule;
        user->set_forced_decision(text_of(field(f, "flag_key")), rule_view, text_of(field(f, "variation_key")));
    }
    return user;
}

json_object *run_decide(experiment::Client &client, const CallInput &in) {
    std::string key = text_of(field(in.call, "flag_key"));
    if (has_forced_decisions(in)) return decision_json(forced_user(client, in)->decide(key, in.options));
    return decision_json(client.decide(in.user_id, key, in.attributes, in.options));
}

json_object *run_decide_all(experiment::Client &client, const CallInput &in) {
    if (has_forced_decisions(in)) return decisions_json(forced_user(client, in)->decide_all(in.options));
    return decisions_json(client.decide_all(in.user_id, in.attributes, in.options));
}

json_object *run_decide_for_keys(experiment::Client &client, const CallInput &in) {
    json_object *keys_json = field(in.call, "keys");
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < json_object_array_length(keys_json); i++)
        keys.push_back(text_of(json_object_array_get_idx(keys_json, i)));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    return decisions_json(client.decide_for_keys(in.user_id, views, in.attributes, in.options));
}

/* set_forced_variation: true when set; the reference's false is an unknown experiment or variation. */
json_object *run_set_forced_variation(experiment::Client &client, const CallInput &in) {
    std::optional<std::string> variation = optional_text(field(in.call, "variation_key"));
    std::optional<std::string_view> variation_view;
    if (variation) variation_view = *variation;
    try {
        client.set_forced_variation(text_of(field(in.call, "experiment_key")), in.user_id, variation_view);
    } catch (const experiment::UnknownExperimentError &) {
        return json_object_new_boolean(0);
    } catch (const experiment::UnknownVariationError &) {
        return json_object_new_boolean(0);
    }
    return json_object_new_boolean(1);
}

json_object *run_get_forced_variation(experiment::Client &client, const CallInput &in) {
    try {
        return json_optional(client.get_forced_variation(text_of(field(in.call, "experiment_key")), in.user_id));
    } catch (const experiment::UnknownExperimentError &) {
        return nullptr;   // the reference's answer for an experiment it does not know
    }
}

json_object *run_call(experiment::Client &client, const std::string &kind, const CallInput &in) {
    if (kind == "decide") return run_decide(client, in);
    if (kind == "decide_all") return run_decide_all(client, in);
    if (kind == "decide_for_keys") return run_decide_for_keys(client, in);
    if (kind == "activate")
        return json_optional(client.activate(text_of(field(in.call, "experiment_key")), in.user_id, in.attributes));
    if (kind == "get_variation")
        return json_optional(
            client.get_variation(text_of(field(in.call, "experiment_key")), in.user_id, in.attributes));
    if (kind == "set_forced_variation") return run_set_forced_variation(client, in);
    if (kind == "get_forced_variation") return run_get_forced_variation(client, in);
    if (kind == "track") {
        std::optional<std::string> tags = optional_text(field(in.call, "tags_json"));
        std::optional<std::string_view> tags_view;
        if (tags) tags_view = *tags;
        client.track(text_of(field(in.call, "event_key")), in.user_id, in.attributes, tags_view);
        return nullptr;
    }
    return nullptr;
}

bool is_applicable(const std::string &kind) {
    for (const char *k : {"decide", "decide_all", "decide_for_keys", "activate", "get_variation",
                          "set_forced_variation", "get_forced_variation", "track"})
        if (kind == k) return true;
    return false;
}

/* ------------------------------------------------------------------------------------------------ */
/* A case                                                                                           */
/* ------------------------------------------------------------------------------------------------ */

bool has_tagged_value(json_object *attributes) {
    json_object_object_foreach(attributes, key, value) {
        (void)key;
        if (json_object_is_type(value, json_type_object) && field(value, TAG)) return true;
    }
    return false;
}

/* The vector's expectations made whole (README "Notifications"): a notification without "attributes" has
 * the call's; for calls whose attributes JSON cannot carry, notifications are compared without them. */
Json comparable(json_object *call, json_object *actual) {
    json_object *expected = nullptr, *attributes = field(call, "attributes");
    json_object_deep_copy(field(call, "expect"), &expected, nullptr);
    bool lossy = has_tagged_value(attributes);
    json_object *sides[2] = {field(expected, "notifications"), field(actual, "notifications")};
    for (int side = 0; side < 2; side++) {
        for (std::size_t i = 0; sides[side] && i < json_object_array_length(sides[side]); i++) {
            json_object *n = json_object_array_get_idx(sides[side], i);
            if (lossy) json_object_object_del(n, "attributes");
            else if (side == 0 && !field(n, "attributes"))
                json_object_object_add(n, "attributes", json_object_get(attributes));
        }
    }
    return Json(expected);
}

std::string client_options(json_object *c, const std::string &state_dir) {
    Json options(json_object_new_object());
    json_object *odp = json_object_new_object();   // as the reference ran: no UPS, ODP off (no network)
    json_object_object_add(odp, "disabled", json_object_new_boolean(1));
    json_object_object_add(options.get(), "odp", odp);
    json_object_object_add(options.get(), "profile_store", json_object_new_string("none"));
    json_object_object_add(options.get(), "state_dir", json_object_new_string(state_dir.c_str()));
    json_object_object_add(options.get(), "log_level", json_object_new_string("error"));
    json_object_object_add(options.get(), "default_decide_options",
                           json_object_get(field(field(c, "client"), "default_decide_options")));
    return json_object_to_json_string(options.get());
}

std::string datafile_of(json_object *c, const std::string &root) {
    if (json_object *text = field(c, "datafile_text")) return text_of(text);
    std::ifstream in(root + "/" + text_of(field(c, "datafile_path")), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void install_capture(experiment::Client &client, Capture &captured) {
    client.set_event_dispatcher([&captured](const experiment::Event &event) {
        json_object *params = json_tokener_parse(std::string(event.body).c_str()), *out = json_object_new_object();
        normalize_params(params);
        json_object_object_add(out, "url", json_string(std::string(event.url)));
        json_object_object_add(out, "http_verb", json_string(std::string(event.http_verb)));
        json_object_object_add(out, "params", params);
        json_object_array_add(captured.events, out);
        return true;
    });
    auto listener = [&captured](exp_notification_type type, std::string_view payload_json) {
        Json payload(json_tokener_parse(std::string(payload_json).c_str()));
        json_object *out = json_object_new_object();
        json_object_object_add(out, "notification",
                               json_object_new_string(type == EXP_NOTIFY_TRACK ? "TRACK" : "DECISION"));
        json_object_object_foreach(payload.get(), key, value) json_object_object_add(out, key, json_object_get(value));
        json_object_array_add(captured.notifications, out);
    };
    client.add_listener(EXP_NOTIFY_DECISION, listener);
    client.add_listener(EXP_NOTIFY_TRACK, listener);
}

void replay_call(Tally &tally, experiment::Client &client, Capture &captured, const std::string &name,
                 std::size_t index, json_object *call) {
    std::string kind = text_of(field(call, "call"));
    if (!is_applicable(kind)) {
        tally.not_applicable[kind]++;
        return;
    }
    captured.events = json_object_new_array();
    captured.notifications = json_object_new_array();
    Json actual(json_object_new_object());
    json_object *result = nullptr;
    try {
        CallInput in{call, text_of(field(call, "user_id")), attributes_of(call), options_of(call)};
        result = run_call(client, kind, in);
    } catch (const experiment::Error &error) {
        result = raised(error);
    }
    json_object_object_add(actual.get(), "result", result);
    json_object_object_add(actual.get(), "events", captured.events);
    json_object_object_add(actual.get(), "notifications", captured.notifications);
    Json expected = comparable(call, actual.get());
    tally.record(name, index, kind, expected.get(), actual.get());
    captured.events = captured.notifications = nullptr;
}

void replay_case(Tally &tally, const std::string &path, const std::string &root) {
    Json c = read_json(path);
    if (!c) {
        std::fprintf(stderr, "%s: cannot read the case\n", path.c_str());
        tally.failed++;
        return;
    }
    std::string name = text_of(field(c.get(), "name"));
    // Each client its own state directory, never the user's; removed with the case.
    std::string state_template = (std::filesystem::temp_directory_path() / "vectors-cpp-XXXXXX").string();
    if (!mkdtemp(state_template.data())) throw std::runtime_error("mkdtemp failed");
    std::filesystem::path state_dir = state_template;
    Capture captured;
    {
        experiment::Client client(client_options(c.get(), state_dir.string()));
        client.start(datafile_of(c.get(), root));
        install_capture(client, captured);
        json_object *calls = field(c.get(), "calls");
        for (std::size_t i = 0; i < json_object_array_length(calls); i++)
            replay_call(tally, client, captured, name, i, json_object_array_get_idx(calls, i));
    }
    std::filesystem::remove_all(state_dir);
}

}  // namespace

int main(int argc, char **argv) {
    Tally tally;
    std::string root = ".";
    int first = 1;
    if (argc > 2 && std::string(argv[1]) == "--root") {
        root = argv[2];
        first = 3;
    }
    Json known = read_json(root + "/tests/vectors/known_differences.json");
    tally.known_differences = field(known.get(), "calls");
    try {
        for (int i = first; i < argc; i++) replay_case(tally, argv[i], root);
    } catch (const std::exception &error) {
        std::fprintf(stderr, "run_cpp: %s\n", error.what());
        tally.failed++;
    }
    return tally.report();
}
