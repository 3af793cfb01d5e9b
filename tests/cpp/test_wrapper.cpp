/*
 * test_wrapper.cpp — the parts of bindings/cpp/experiment.hpp the C++ examples do not show: logger and log
 * level, notification listeners, one-experiment handles with typed parameters, JSON decisions, JSON user
 * properties, the host's profile store, ODP identify, named clients, forced decisions and the typed errors.
 *
 *     c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -Ibindings/cpp tests/cpp/test_wrapper.cpp \
 *         -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -o test_wrapper
 *     ./test_wrapper examples/datafiles/demo.json
 *
 * Run by tests/cpp/check_wrapper.py (make test-cpp), which also checks that every exp_* function of the
 * header is reached by the wrapper and run by this program or an example. Exit status 1 on any failure.
 */
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "experiment.hpp"

namespace {

int failures = 0;

#define CHECK(condition)                                                                   \
    do {                                                                                   \
        if (!(condition)) {                                                                \
            std::cerr << __FILE__ << ":" << __LINE__ << ": check failed: " #condition "\n"; \
            ++failures;                                                                    \
        }                                                                                  \
    } while (0)

std::string read_file(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot read ") + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/* Runs `body`, which must throw an experiment::Error with `code`. */
template <typename Body>
void expect_error(exp_status code, Body body) {
    try {
        body();
        std::cerr << "expected " << exp_status_str(code) << ", nothing was thrown\n";
        ++failures;
    } catch (const experiment::Error &error) {
        if (error.code() != code) {
            std::cerr << "expected " << exp_status_str(code) << ", got " << error.status_name() << ": "
                      << error.what() << "\n";
            ++failures;
        }
    }
}

void logger_and_listeners(const std::string &datafile) {
    experiment::Client client{R"({"profile_store": "none", "event_endpoint": "none"})"};
    std::mutex mutex;
    std::vector<std::pair<exp_log_level, std::string>> messages;
    client.set_logger([&](exp_log_level level, std::string_view message) {
        std::lock_guard<std::mutex> lock(mutex);
        messages.emplace_back(level, std::string(message));
    });
    client.set_log_level(EXP_LOG_DEBUG);

    std::vector<std::string> updates, decisions, tracks;
    std::int64_t on_update = client.add_listener(EXP_NOTIFY_CONFIG_UPDATE,
        [&](exp_notification_type type, std::string_view payload) {
            CHECK(type == EXP_NOTIFY_CONFIG_UPDATE);
            updates.emplace_back(payload);
        });
    std::int64_t on_decision = client.add_listener(EXP_NOTIFY_DECISION,
        [&](exp_notification_type, std::string_view payload) { decisions.emplace_back(payload); });
    client.add_listener(EXP_NOTIFY_TRACK, [&](exp_notification_type, std::string_view payload) {
        tracks.emplace_back(payload);
        throw std::runtime_error("a listener that throws does not reach the library");
    });

    client.start(datafile);
    CHECK(updates.size() == 1 && updates[0].find("\"revision\":\"42\"") != std::string::npos);
    client.decide("user-1", "free_shipping", {{"country", "NL"}});
    CHECK(decisions.size() == 1 && decisions[0].find("free_shipping") != std::string::npos);
    client.track("purchase", "user-1");
    CHECK(tracks.size() == 1);

    client.remove_listener(on_decision);
    client.decide("user-1", "free_shipping");
    CHECK(decisions.size() == 1);
    expect_error(EXP_ERR_NOT_FOUND, [&] { client.remove_listener(on_decision); });
    client.remove_listener(on_update);

    // A rejected datafile is logged (at error or warning) through the C++ logger.
    expect_error(EXP_ERR_INVALID_JSON, [&] { client.start("{not json"); });
    {
        std::lock_guard<std::mutex> lock(mutex);
        CHECK(!messages.empty());
    }
    client.set_log_level(EXP_LOG_ERROR);
    expect_error(EXP_ERR_INVALID_ARGUMENT, [&] { client.set_log_level(static_cast<exp_log_level>(9)); });
    client.set_logger({});  // back to the default (standard error)
}

void experiments_and_json(const std::string &datafile) {
    experiment::Client client{R"({"profile_store": "none", "event_endpoint": "none",
                                  "default_decide_options": ["DISABLE_DECISION_EVENT"]})"};
    client.start(datafile);

    // Find a user in checkout_redesign_ab (its audience: premium plan or NL/DE shoppers).
    std::optional<experiment::Experiment> found;
    for (int i = 0; i < 200 && !found; ++i)
        found = client.get_experiment("user-" + std::to_string(i), "checkout_redesign_ab",
                                      {{"country", "NL"}, {"plan", "premium"}});
    CHECK(found.has_value());
    if (found) {
        experiment::Experiment moved = std::move(*found);
        CHECK(moved.key() == "checkout_redesign_ab");
        CHECK(moved.id() == "3001");
        CHECK(!moved.variation_id().empty() && !moved.variation_key().empty());
        CHECK(moved.group_index() >= 0);
        CHECK(moved.parameters_json().find("button_color") != std::string::npos);
        CHECK(moved.param_string("button_color").has_value());
        CHECK(moved.param_int("steps").has_value());
        CHECK(moved.param_bool("show_trust_badges").has_value());
        expect_error(EXP_ERR_TYPE_MISMATCH, [&] { (void)moved.param_double("button_color"); });
        expect_error(EXP_ERR_NOT_FOUND, [&] { (void)moved.param_json("no_such_parameter"); });
    }
    CHECK(!client.get_experiment("nobody", "checkout_redesign_ab", {{"country", "US"}}).has_value());
    expect_error(EXP_ERR_UNKNOWN_EXPERIMENT, [&] { (void)client.get_experiment("u", "no_such_experiment"); });

    std::string one = client.decide_json("user-1", "free_shipping", R"({"country": "NL"})");
    CHECK(one.find("\"flag_key\":\"free_shipping\"") != std::string::npos);
    std::string two = client.decide_for_keys_json("user-1", R"(["free_shipping", "dark_mode"])");
    CHECK(two.find("dark_mode") != std::string::npos && two.find("free_shipping") != std::string::npos);
    expect_error(EXP_ERR_INVALID_JSON, [&] { (void)client.decide_json("user-1", "free_shipping", "{"); });

    client.set_user_property_json("user-1", "plan", R"("premium")");
    CHECK(client.user_properties_json("user-1").find("premium") != std::string::npos);
    expect_error(EXP_ERR_INVALID_JSON, [&] { client.set_user_property_json("user-1", "plan", "[1,"); });

    // ODP is not configured for the demo datafile: identify answers EXP_ERR_ODP_NOT_ENABLED.
    expect_error(EXP_ERR_ODP_NOT_ENABLED, [&] { client.identify_user("user-1"); });
}

void profile_store(const std::string &datafile) {
    experiment::Client client{R"({"profile_store": "callbacks", "event_endpoint": "none",
                                  "default_decide_options": ["DISABLE_DECISION_EVENT"]})"};
    std::mutex mutex;
    std::map<std::string, std::string> profiles;
    std::atomic<int> lookups{0}, saves{0};
    client.set_profile_store(
        [&](std::string_view user) -> std::optional<std::string> {
            ++lookups;
            std::lock_guard<std::mutex> lock(mutex);
            auto it = profiles.find(std::string(user));
            if (it == profiles.end()) return std::nullopt;
            return it->second;
        },
        [&](std::string_view user, std::string_view profile) {
            ++saves;
            std::lock_guard<std::mutex> lock(mutex);
            profiles[std::string(user)] = std::string(profile);
            return true;
        });
    client.start(datafile);
    // A pre-filled profile pins the user to "one_page_checkout" of experiment 3001 (sticky bucketing).
    {
        std::lock_guard<std::mutex> lock(mutex);
        profiles["sticky-user"] = R"({"user_id": "sticky-user", "experiment_bucket_map": )"
                                  R"({"3001": {"variation_id": "3102"}}})";
    }
    std::optional<std::string> variation = client.get_variation("checkout_redesign_ab", "sticky-user",
                                                               {{"plan", "premium"}, {"country", "NL"}});
    CHECK(lookups.load() >= 1);
    std::optional<std::string> fresh = client.get_variation("checkout_redesign_ab", "new-user",
                                                            {{"plan", "premium"}, {"country", "NL"}});
    if (fresh) CHECK(saves.load() >= 1);
    CHECK(variation.has_value() && *variation == "one_page_checkout");
    expect_error(EXP_ERR_INVALID_ARGUMENT, [&] { client.set_profile_store({}, [](std::string_view, std::string_view) { return true; }); });
    client.set_profile_store({}, {});  // sticky bucketing off
}

/* Everything else the examples leave out: validation, decide options, forced decisions and memberships,
 * user properties, typed flags, reports, Kameleoon calls, event stats, real-time segments. */
void remaining_calls(const std::string &datafile) {
    experiment::validate_datafile(datafile);
    expect_error(EXP_ERR_INVALID_JSON, [] { experiment::validate_datafile("{"); });
    CHECK(experiment::parse_decide_options(R"(["INCLUDE_REASONS"])") == EXP_DECIDE_INCLUDE_REASONS);

    std::vector<std::string> events;
    experiment::Client client{R"({"profile_store": "none", "event_endpoint": "none"})"};
    client.set_event_dispatcher([&](const experiment::Event &event) {
        events.emplace_back(event.body);
        return true;
    });
    client.start(datafile);

    // "qa" is outside the NL/DE rule; forced into its "on" variation, the decision names that rule.
    client.set_forced_decision("qa", "free_shipping", "free_shipping_nl_de", "on");
    CHECK(client.decide("qa", "free_shipping").rule_key == std::optional<std::string>("free_shipping_nl_de"));
    client.remove_forced_decisions("qa");
    CHECK(client.decide("qa", "free_shipping").rule_key != std::optional<std::string>("free_shipping_nl_de"));

    // A user id with a NUL byte comes back whole in the reasons that quote it (exp_decision_text_n).
    const std::string nul_user("q\0a", 3);
    const auto quoted = client.decide(nul_user, "free_shipping", {}, experiment::decide_option::include_reasons);
    bool whole = false;
    for (const auto &reason : quoted.reasons) whole = whole || reason.find("\"" + nul_user + "\"") != std::string::npos;
    CHECK(!quoted.reasons.empty() && whole);
    {
        exp_decision raw{};
        CHECK(exp_decide_n(client.native_handle(), nul_user.data(), nul_user.size(), "free_shipping", 13, nullptr, 0,
                           EXP_DECIDE_INCLUDE_REASONS, &raw) == EXP_OK);
        const char *text = nullptr;
        std::size_t length = 0;
        CHECK(exp_decision_text_n(&raw, EXP_DECISION_FLAG_KEY, 0, &text, &length) == EXP_OK && length == 13 &&
              text == raw.flag_key);
        CHECK(exp_decision_text_n(&raw, EXP_DECISION_REASON, raw.reason_count, &text, &length) ==
              EXP_ERR_INVALID_ARGUMENT);
        CHECK(exp_decision_text_n(&raw, EXP_DECISION_RULE_KEY, 1, &text, &length) == EXP_ERR_INVALID_ARGUMENT);
        exp_decision_release(&raw);
    }

    client.set_user_property("u", "plan", "premium");
    client.remove_user_property("u", "plan");
    CHECK(client.user_properties_json("u").find("plan") == std::string::npos);
    client.set_user_property("u", "plan", "premium");
    client.clear_user_properties("u");
    CHECK(client.user_properties_json("u") == "{}");

    client.force_include("forced", "3001", 1);
    CHECK(client.get_variation("checkout_redesign_ab", "forced") == std::optional<std::string>("one_page_checkout"));
    client.force_exclude("forced", "3001");
    CHECK(!client.get_variation("checkout_redesign_ab", "forced").has_value());
    client.force_exclude_all("forced");
    client.force_clear("forced", "3001");
    client.force_clear("forced");
    CHECK(client.profile_stats_json().find("\"store\"") != std::string::npos);

    const experiment::Attributes nl{{"country", "NL"}};
    CHECK(client.flag_string("u", "free_shipping", "banner_text", nl).has_value());
    (void)client.flag_json("u", "search_ranking", "ranking_config", nl);
    expect_error(EXP_ERR_TYPE_MISMATCH, [&] { (void)client.flag_json("u", "free_shipping", "banner_text", nl); });
    CHECK(client.user_experiments_json("u", nl).front() == '[');
    CHECK(client.user_holdouts_json("u", nl).front() == '[');

    client.add_user_data("u", R"({"type": "custom", "index": 1, "value": "gold"})");
    client.flush_user("u");
    std::size_t before = events.size();
    client.track_conversion("u", 8001, 10.0);
    CHECK(events.size() > before);
    expect_error(EXP_ERR_INVALID_ARGUMENT, [&] { client.track_conversion("u", -1); });
    CHECK(client.flush());
    CHECK(client.stats_json().find("\"queued\"") != std::string::npos);

    // Real-time segments: the demo datafile configures no ODP; segments set by the host still work.
    expect_error(EXP_ERR_FETCH_FAILED, [&] { (void)client.fetch_qualified_segments("u"); });
    // The completion may run on the library's thread until the client closes: it owns what it touches.
    auto completions = std::make_shared<std::atomic<int>>(0);
    try {
        client.fetch_qualified_segments_async("u", [completions](exp_status, const std::string &,
                                                                 const std::string &) { ++*completions; });
    } catch (const experiment::Error &error) {
        CHECK(error.code() == EXP_ERR_FETCH_FAILED);
    }
    client.set_qualified_segments_json("u", R"(["has_email"])");
    CHECK(client.is_qualified_for("u", "has_email"));
    CHECK(client.qualified_segments_json("u").find("has_email") != std::string::npos);
    client.set_qualified_segments_json("u", std::nullopt);
    expect_error(EXP_ERR_ODP_NOT_ENABLED, [&] { client.send_odp_event("purchased", R"({"fs_user_id": "u"})"); });
    try {
        client.flush_odp_events(100);
    } catch (const experiment::Error &error) {
        CHECK(error.code() == EXP_ERR_ODP_NOT_ENABLED);
    }
    CHECK(client.vuid().rfind("vuid_", 0) == 0);
}

/* Asynchronous start by SDK key from a file:// URL, readiness, refresh, status, a named client. */
void async_start(const char *datafile_path) {
    std::string path(datafile_path);
    char resolved[4096];
    if (!realpath(path.c_str(), resolved)) throw std::runtime_error("realpath " + path);
    std::string absolute(resolved);
    std::string directory = absolute.substr(0, absolute.rfind('/'));
    std::string name = absolute.substr(absolute.rfind('/') + 1);
    std::string sdk_key = name.substr(0, name.rfind('.'));
    experiment::Client client{R"({"sdk_key": ")" + sdk_key + R"(", "datafile_url_template": "file://)" + directory +
                              R"(/{sdk_key}.json", "polling_interval_s": 0, "retry_count": 0, "tag": "cpp-async",
                                 "profile_store": "none", "event_endpoint": "none"})"};
    // on_ready runs on the library's thread once the start is over, which may be after wait_ready returns.
    struct Outcome {
        std::mutex mutex;
        std::condition_variable done;
        std::optional<exp_status> status;
    };
    auto outcome = std::make_shared<Outcome>();
    client.start_async({}, [outcome](exp_status status) {
        std::lock_guard<std::mutex> lock(outcome->mutex);
        outcome->status = status;
        outcome->done.notify_all();
    });
    CHECK(client.wait_ready(std::chrono::milliseconds(5000)));
    {
        std::unique_lock<std::mutex> lock(outcome->mutex);
        outcome->done.wait_for(lock, std::chrono::seconds(10), [&] { return outcome->status.has_value(); });
        CHECK(outcome->status == std::optional<exp_status>(EXP_OK));
    }
    client.refresh();
    CHECK(client.datafile_status_json().find("\"ready\":true") != std::string::npos);
    CHECK(experiment::Client::find_native("cpp-async") == client.native_handle());
    CHECK(experiment::Client::find_native("no-such-tag") == nullptr);
    client.close();
}


/* User contexts (exp_user), the managed synchronous start and stored profiles. */
void user_contexts(const std::string &datafile) {
    char state[] = "/tmp/exp-wrapper-XXXXXX";
    if (!mkdtemp(state)) throw std::runtime_error("mkdtemp failed");
    experiment::Client client(std::string(R"({"sdk_key": "wrapper-key", "state_dir": ")") + state + R"("})");
    CHECK(!client.start_sync(datafile, EXP_SYNC_UPDATE_NONE));  // nothing cached: the bundled datafile
    CHECK(client.ready());

    auto user = client.create_user_context("ctx-user", {{"country", "NL"}});
    CHECK(user.native_user_id() == "ctx-user");
    user.set_attribute("plan", "premium");
    CHECK(user.attributes_json() == R"({"country":"NL","plan":"premium"})");
    user.remove_attribute("plan");
    CHECK(user.attributes_json() == R"({"country":"NL"})");
    CHECK(user.decide("checkout_redesign").flag_key == "checkout_redesign");
    CHECK(user.decide_all().size() == client.flag_count());
    const auto chosen = user.decide_for_keys({"free_shipping", "no_such_flag"});
    CHECK(chosen.size() == 2 && chosen[1].flag_key == "no_such_flag" && !chosen[1].enabled);
    user.track_event("purchase", R"({"revenue": 100})");

    CHECK(user.set_forced_decision("checkout_redesign", std::nullopt, "on"));
    CHECK(user.set_forced_decision("checkout_redesign", "checkout_redesign_ab", "control"));
    CHECK(user.get_forced_decision("checkout_redesign") == std::optional<std::string>("on"));
    CHECK(user.get_forced_decision("checkout_redesign", "checkout_redesign_ab") == std::optional<std::string>("control"));
    // A key with a NUL byte comes back whole (exp_user_get_forced_decision_len).
    CHECK(user.set_forced_decision("no_such_flag", std::nullopt, std::string_view("o\0n", 3)));
    CHECK(user.get_forced_decision("no_such_flag") == std::optional<std::string>(std::string("o\0n", 3)));
    CHECK(user.decide("checkout_redesign").variation_key == std::optional<std::string>("on"));
    experiment::UserContext copy = user;
    CHECK(user.remove_forced_decision("checkout_redesign") && !user.remove_forced_decision("checkout_redesign"));
    CHECK(user.remove_all_forced_decisions());
    CHECK(!user.get_forced_decision("checkout_redesign", "checkout_redesign_ab"));
    CHECK(copy.get_forced_decision("checkout_redesign") == std::optional<std::string>("on"));
    auto other = client.create_user_context("ctx-user");
    CHECK(!other.get_forced_decision("checkout_redesign"));

    CHECK(user.qualified_segments_json() == "null");
    user.set_qualified_segments_json(R"(["vip"])");
    CHECK(user.is_qualified_for("vip") && !user.is_qualified_for("other"));
    CHECK(user.qualified_segments_json() == R"(["vip"])");
    expect_error(EXP_ERR_FETCH_FAILED, [&] { user.fetch_qualified_segments(); });  // no ODP in the datafile
    CHECK(user.qualified_segments_json() == "null");  // a failed fetch leaves none, as the reference

    // Sticky bucketing in the state file: read the profile the decision saved, then delete it.
    experiment::Decision sticky = user.decide("checkout_redesign", experiment::decide_option::disable_decision_event);
    (void)sticky;
    const auto profile = client.user_profile_json("ctx-user");
    if (profile) CHECK(profile->find("\"experiment_bucket_map\"") != std::string::npos);
    CHECK(client.delete_user_profile("ctx-user") == profile.has_value());
    CHECK(!client.user_profile_json("ctx-user"));
    client.close();
    expect_error(EXP_ERR_CLOSED, [&] { user.decide("checkout_redesign"); });
}

/* Kameleoon's runWhenReady and completion handlers, Sigma's forced memberships by key and an experiment's
 * flag values (issue 17 item 5). */
void kameleoon_and_sigma(const std::string &datafile) {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<exp_status> ready_calls;
    auto on_ready = [&](exp_status status) {
        std::lock_guard<std::mutex> lock(mutex);
        ready_calls.push_back(status);
        changed.notify_all();
    };
    {
        experiment::Client waiting(R"({"event_endpoint": "none"})");
        waiting.run_when_ready(std::chrono::milliseconds(60000), on_ready);
        waiting.start(datafile);
        std::unique_lock<std::mutex> lock(mutex);
        CHECK(changed.wait_for(lock, std::chrono::seconds(30), [&] { return !ready_calls.empty(); }));
        CHECK(ready_calls == std::vector<exp_status>{EXP_OK});
    }
    {
        experiment::Client closing(R"({"event_endpoint": "none"})");
        closing.run_when_ready(std::chrono::milliseconds(60000), on_ready);
        closing.run_when_ready(std::chrono::milliseconds(60000), [](exp_status) { throw std::runtime_error("swallowed"); });
        closing.close();  // returns after both callbacks ran
        std::lock_guard<std::mutex> lock(mutex);
        CHECK(ready_calls.size() == 2 && ready_calls[1] == EXP_ERR_CLOSED);
    }

    experiment::Client client(R"({"event_endpoint": "none"})");
    client.start(datafile);
    std::vector<std::pair<exp_status, std::size_t>> deliveries;
    auto on_complete = [&](exp_status status, std::size_t sent) {
        std::lock_guard<std::mutex> lock(mutex);
        deliveries.emplace_back(status, sent);
        changed.notify_all();
    };
    client.track_conversion("user-1", 42, 1.0, on_complete);  // nowhere to go: answered at once
    CHECK(deliveries.size() == 1 && deliveries[0].first == EXP_ERR_DELIVERY_FAILED && deliveries[0].second == 0);
    client.set_event_dispatcher([](const experiment::Event &) { return true; });
    client.track_conversion("user-1", 42, NAN, on_complete);
    client.flush_user("user-1", on_complete);  // nothing pending
    CHECK(deliveries.size() == 3 && deliveries[1] == std::make_pair(EXP_OK, std::size_t(1)) &&
          deliveries[2] == std::make_pair(EXP_OK, std::size_t(0)));
    client.flush_async(on_complete);
    {
        std::unique_lock<std::mutex> lock(mutex);
        CHECK(changed.wait_for(lock, std::chrono::seconds(30), [&] { return deliveries.size() == 4; }));
        CHECK(deliveries.size() == 4 && deliveries[3].first == EXP_OK);
    }
    expect_error(EXP_ERR_INVALID_ARGUMENT, [&] { client.track_conversion("user-1", -1, 1.0, on_complete); });

    expect_error(EXP_ERR_UNKNOWN_EXPERIMENT, [&] { client.force_include_key("qa", "nope"); });
    client.force_include_key("qa", "checkout_redesign_ab", 1);
    auto forced = client.get_experiment("qa", "checkout_redesign_ab");
    CHECK(forced.has_value());
    if (forced) {
        CHECK(forced->flag_bool("checkout_redesign") == std::optional<bool>(true));
        CHECK(forced->flag_string("checkout_redesign", "button_color") == std::optional<std::string>("green"));
        CHECK(forced->flag_int("checkout_redesign", "steps") == std::optional<std::int64_t>(1));
        CHECK(forced->flag_bool("checkout_redesign", "show_trust_badges") == std::optional<bool>(true));
        expect_error(EXP_ERR_NOT_FOUND, [&] { forced->flag_double("dark_mode", "contrast"); });
        expect_error(EXP_ERR_TYPE_MISMATCH, [&] { forced->flag_json("checkout_redesign", "steps"); });
    }
    client.force_exclude_key("qa", "checkout_redesign_ab");
    CHECK(!client.get_variation("checkout_redesign_ab", "qa").has_value());
    client.force_clear_key("qa", "checkout_redesign_ab");
}

/* The datafile text a client keeps ("keep_datafile"), and each event as it is built (EXP_NOTIFY_EVENT). */
void datafile_text_and_events(const std::string &datafile) {
    experiment::Client plain;
    plain.start(datafile);
    expect_error(EXP_ERR_NOT_FOUND, [&] { (void)plain.datafile_json(); });  // not kept by default

    experiment::Client client(R"({"keep_datafile": true, "event_endpoint": "none"})");
    expect_error(EXP_ERR_NOT_READY, [&] { (void)client.datafile_json(); });
    client.start(datafile);
    CHECK(client.datafile_json() == datafile);
    std::string other = datafile;
    other.replace(other.find("\"revision\""), 10, "\"revision\":\"77\", \"x\"");  // a second revision
    client.start(other);
    CHECK(client.datafile_json() == other);
    expect_error(EXP_ERR_INVALID_JSON, [&] { client.start("{not json"); });
    CHECK(client.datafile_json() == other);  // a refused datafile changes nothing

    std::vector<std::string> events;
    client.add_listener(EXP_NOTIFY_EVENT, [&](exp_notification_type, std::string_view payload) {
        events.emplace_back(payload);
    });
    client.track("purchase", "u1");  // no dispatcher and no endpoint: announced all the same
    CHECK(events.size() == 1 && events[0].find(R"("http_verb":"POST","params":{)") != std::string::npos);
    CHECK(events.size() == 1 && events[0].find(R"("key":"purchase")") != std::string::npos);
    client.close();
    expect_error(EXP_ERR_CLOSED, [&] { (void)client.datafile_json(); });
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::cerr << "usage: test_wrapper <datafile.json>\n";
        return 2;
    }
    try {
        std::string datafile = read_file(argv[1]);
        logger_and_listeners(datafile);
        experiments_and_json(datafile);
        profile_store(datafile);
        remaining_calls(datafile);
        async_start(argv[1]);
        user_contexts(datafile);
        kameleoon_and_sigma(datafile);
        datafile_text_and_events(datafile);
    } catch (const experiment::Error &error) {
        std::cerr << "unexpected " << error.status_name() << ": " << error.what() << "\n";
        return 1;
    } catch (const std::exception &error) {
        std::cerr << "unexpected: " << error.what() << "\n";
        return 1;
    }
    if (failures) {
        std::cerr << failures << " check(s) failed\n";
        return 1;
    }
    std::cout << "C++ wrapper test: OK\n";
    return 0;
}
