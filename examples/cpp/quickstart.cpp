/*
 * quickstart.cpp — a first tour of libexperiment through the C++ wrapper (bindings/cpp/experiment.hpp).
 *
 * It loads a datafile (an Optimizely v4 JSON project configuration), decides feature flags for a few
 * users through user contexts (client.create_user_context), forces a decision in one context, runs a classic A/B experiment, records a conversion, and shows stored user properties, forced
 * variations and typed errors. Every event the library would send goes to a lambda that counts it.
 *
 * Build and run from the repository root:
 *
 *     c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -Ibindings/cpp examples/cpp/quickstart.cpp \
 *         -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -o quickstart-cpp
 *     ./quickstart-cpp examples/datafiles/demo.json
 *
 * The program exits with status 1 if anything that should succeed fails, so it doubles as a smoke test.
 */
#include <atomic>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "experiment.hpp"

namespace {

/* Reads a whole file; throws std::runtime_error when it cannot. */
std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw std::runtime_error("cannot read " + path);
    return text.str();
}

void print_decision(const std::string &user_id, const experiment::Decision &d) {
    std::printf("  %-8s %-18s variation=%-18s rule=%-28s enabled=%d\n", user_id.c_str(), d.flag_key.c_str(),
                d.variation_key.value_or("(none)").c_str(), d.rule_key.value_or("(none)").c_str(),
                d.enabled ? 1 : 0);
    std::printf("  %-8s %-18s variables=%s\n", "", "", d.variables_json.c_str());
}

/* A check that must hold; reported on stderr, the program then exits 1. */
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
void expect(bool condition, const std::string &what) {
    if (!condition) throw Failure("expected " + what);
}

int run(const std::string &path) {
    std::printf("libexperiment %s (wrapper built against header %s)\n\n", experiment::version().c_str(),
                EXP_VERSION_STRING);

    // 1. Create a client. Options are a JSON object; unknown keys are rejected (InvalidOptionError).
    experiment::Client client{R"({"sdk_key": "DemoShopProduction1234"})"};

    // Before start() there is no datafile: decide answers as the reference SDK does, with a disabled error
    // decision whose reason says why (evaluations never throw for data conditions).
    const auto early = client.decide("user-1", "checkout_redesign");
    expect(!early.enabled && early.reasons.size() == 1, "decide before start() to give an error decision");
    std::printf("before start: %s\n\n", early.reasons[0].c_str());

    // 2. Start it with a datafile. The text is only borrowed for the call.
    client.start(read_file(path));
    expect(client.ready(), "the client to be ready after start()");

    // 3. Route events to a lambda instead of the network. It runs on the thread whose call produced the
    //    event; returning true tells the library the event was accepted. The Client keeps it alive.
    std::atomic<int> event_count{0};
    client.set_event_dispatcher([&event_count](const experiment::Event &event) {
        ++event_count;
        std::printf("    [event] %.*s %.*s (%zu bytes of JSON)\n", static_cast<int>(event.http_verb.size()),
                    event.http_verb.data(), static_cast<int>(event.url.size()), event.url.data(),
                    event.body.size());
        return true;
    });

    // 4. Decide flags through user contexts, as Optimizely code does: the user id and attributes are given
    //    once. Attributes are typed (string, integer, double, bool) and own their contents.
    std::puts("Decisions:");
    struct User {
        std::string id;
        experiment::Attributes attributes;
    };
    const std::vector<User> users{
        {"user-3", {{"country", "FR"}, {"cart_value", 80.0}, {"age", 30}}},          // a high-value adult cart
        {"user-2", {{"country", "NL"}}},                                             // ships to the Netherlands
        {"bob", {{"email", "bob@demo-shop.example"}, {"beta_tester", false}}},      // an employee
    };
    for (const User &user : users) {
        experiment::UserContext context = client.create_user_context(user.id, user.attributes);
        for (const char *flag : {"checkout_redesign", "free_shipping", "search_ranking"})
            print_decision(user.id, context.decide(flag));
    }
    // The id-based shortcut decides the same without a context.
    print_decision("user-2", client.decide("user-2", "free_shipping", users[1].attributes));

    // Forced decisions live in the context that sets them; another context of the same user is not affected.
    std::puts("\nForced decision in one context:");
    auto qa = client.create_user_context("user-2", users[1].attributes);
    auto other = client.create_user_context("user-2", users[1].attributes);
    qa.set_forced_decision("checkout_redesign", std::nullopt, "on");
    qa.set_attribute("plan", "premium");
    const auto forced_decision = qa.decide("checkout_redesign", experiment::decide_option::disable_decision_event);
    const auto unforced = other.decide("checkout_redesign", experiment::decide_option::disable_decision_event);
    print_decision("qa", forced_decision);
    print_decision("other", unforced);
    expect(forced_decision.variation_key == std::optional<std::string>("on"), "the forced variation in the qa context");
    expect(qa.get_forced_decision("checkout_redesign") == std::optional<std::string>("on"), "get_forced_decision");
    expect(!other.get_forced_decision("checkout_redesign"), "no forced decision in the other context");
    experiment::UserContext copy = qa;  // an independent copy, forced decision included
    expect(qa.remove_forced_decision("checkout_redesign") && !qa.remove_forced_decision("checkout_redesign"),
           "remove_forced_decision to report what it removed");
    expect(copy.get_forced_decision("checkout_redesign").has_value(), "a copy to keep its forced decision");
    qa.track_event("add_to_cart");

    // 5. Every flag at once, without impression events for this call, and with the reasons.
    std::puts("\nAll flags for user-3:");
    const auto all = client.decide_all("user-3", users[0].attributes,
                                       experiment::decide_option::disable_decision_event |
                                           experiment::decide_option::include_reasons);
    for (const auto &d : all) print_decision("user-3", d);
    expect(all.size() == client.flag_count(), "decide_all to return one decision per flag");
    expect(!all.empty() && !all[0].reasons.empty(), "reasons with include_reasons");
    std::printf("  first reason for %s: %s\n", all[0].flag_key.c_str(), all[0].reasons[0].c_str());

    // A user context decides every flag, or a chosen set, too.
    auto alice = client.create_user_context("alice", {{"country", "NL"}, {"age", 31}});
    const experiment::Decision shipping = alice.decide("free_shipping");
    std::printf("\nalice (user context): free_shipping enabled=%d variation=%s\n", shipping.enabled ? 1 : 0,
                shipping.variation_key ? shipping.variation_key->c_str() : "-");
    expect(shipping.flag_key == "free_shipping", "a user context to decide its flag");
    expect(alice.decide_all().size() == client.flag_count(), "a user context to decide every flag");
    expect(alice.decide_for_keys({"free_shipping", "no_such_flag"}).size() == 2, "a user context's decide_for_keys");

    // A chosen set of flags; a key the datafile lacks gives a disabled decision, not an error.
    std::puts("\nChosen flags for user-2:");
    const auto chosen = client.decide_for_keys("user-2", {"free_shipping", "no_such_flag"}, users[1].attributes,
                                               experiment::decide_option::disable_decision_event);
    for (const auto &d : chosen) print_decision("user-2", d);
    expect(chosen.size() == 2 && chosen[1].flag_key == "no_such_flag" && !chosen[1].enabled &&
               !chosen[1].variation_key,
           "decide_for_keys to give a disabled decision for an unknown key");

    // 6. A classic A/B experiment. "homepage_banner_test" targets mobile app 3.x users. activate()
    //    returns the variation key (nullopt when the user is not in it) and records an impression.
    std::puts("\nExperiment homepage_banner_test:");
    const experiment::Attributes mobile{{"platform", "ios"}, {"app_version", "3.2.0"}};
    const auto variation_key = client.activate("homepage_banner_test", "user-4", mobile);
    std::printf("  user-4 %-18s -> %s\n", "activate", variation_key.value_or("(not in experiment)").c_str());

    // The same decision Kameleoon-style, by experiment id. "Not targeted" and "not allocated" are normal
    // outcomes, thrown as NotTargetedError / NotAllocatedError (both NotInExperimentError).
    for (const char *user_id : {"user-4", "user-1"}) {
        bool got_variation = false;
        try {
            const std::string variation_id = client.trigger_experiment(user_id, "3003", mobile);
            got_variation = true;
            std::printf("  %-6s %-18s -> variation id %s\n", user_id, "trigger_experiment", variation_id.c_str());
        } catch (const experiment::NotTargetedError &) {
            std::printf("  %-6s %-18s -> not targeted (default experience)\n", user_id, "trigger_experiment");
        } catch (const experiment::NotAllocatedError &) {
            std::printf("  %-6s %-18s -> not allocated (default experience)\n", user_id, "trigger_experiment");
        }
        // Both calls decide the same thing for user-4: a variation from one means one from the other.
        if (std::string(user_id) == "user-4")
            expect(got_variation == variation_key.has_value(), "activate and trigger_experiment to agree");
    }
    try {
        client.trigger_experiment("user-4", "999999", mobile);
        throw Failure("an unknown experiment id to throw");
    } catch (const experiment::UnknownExperimentError &e) {
        std::printf("  user-4 trigger_experiment(999999) -> %s\n", e.status_name());
    }

    // Forced variations win over bucketing (nullopt removes them).
    client.set_forced_variation("checkout_redesign_ab", "user-7", "one_page_checkout");
    const auto forced = client.get_variation("checkout_redesign_ab", "user-7", {{"plan", "premium"}});
    std::printf("  user-7 forced into checkout_redesign_ab -> %s\n", forced.value_or("(none)").c_str());
    expect(client.get_forced_variation("checkout_redesign_ab", "user-7") == std::optional<std::string>("one_page_checkout"),
           "the forced variation to be stored");
    client.set_forced_variation("checkout_redesign_ab", "user-7", std::nullopt);
    expect(!client.get_forced_variation("checkout_redesign_ab", "user-7"), "the forced variation to be removed");

    // 7. Record a conversion. Tags are a JSON object; "revenue" is an integer number of cents.
    std::puts("\nTrack purchase:");
    const int events_before_track = event_count;
    client.track("purchase", "user-4", mobile, R"({"revenue": 4200, "category": "shoes", "value": 3.5})");
    expect(event_count == events_before_track + 1, "track to dispatch one conversion event");

    // 8. Stored user properties: set once, used by every later call for that user. "dark_mode" is on only
    //    for beta testers on app 2.4 or newer, so setting these two properties turns it on.
    std::puts("\nUser properties:");
    const unsigned quiet = experiment::decide_option::disable_decision_event;
    const auto before = client.decide("user-42", "dark_mode", {}, quiet);
    print_decision("user-42", before);
    client.set_user_property("user-42", "beta_tester", true);
    client.set_user_property("user-42", "app_version", "2.5.1");
    const auto after = client.decide("user-42", "dark_mode", {}, quiet);
    print_decision("user-42", after);
    std::printf("  stored: %s\n", client.user_properties_json("user-42").c_str());
    expect(!before.enabled && after.enabled, "dark_mode to turn on for a beta tester on app 2.5.1");

    // 9. A flag key with a typo does not crash the request: the reference's error decision, with its reason.
    //    Programmer errors are exceptions derived from experiment::Error, carrying the library's code.
    std::puts("\nError handling:");
    const auto typo = client.decide("user-1", "no_such_flag");
    std::printf("  decide(no_such_flag) -> enabled %d: %s\n", typo.enabled, typo.reasons.at(0).c_str());
    expect(!typo.enabled && typo.reasons.at(0) == "No flag was found for key \"no_such_flag\".",
           "the reference's error decision for an unknown flag");
    try {
        experiment::Client bad{R"({"no_such_option": 1})"};
        throw Failure("an unknown option to throw");
    } catch (const experiment::InvalidOptionError &e) {
        std::printf("  Client({no_such_option}) -> %s: %s\n", e.status_name(), e.what());
    }

    std::printf("\nConfig: %s\n", client.config_json().c_str());

    // 10. Clean up: close() stops the client (later calls throw ClosedError); the destructor frees it.
    client.close();
    try {
        client.decide("user-1", "free_shipping");
        throw Failure("decide after close() to throw ClosedError");
    } catch (const experiment::ClosedError &) {
    }
    std::printf("\n%d events dispatched. Done.\n", event_count.load());
    expect(event_count > 0, "impression and conversion events to reach the dispatcher");
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    const std::string path = argc > 1 ? argv[1] : "examples/datafiles/demo.json";
    try {
        return run(path);
    } catch (const experiment::Error &e) {
        std::fprintf(stderr, "quickstart: unexpected %s: %s\n", e.status_name(), e.what());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "quickstart: %s\n", e.what());
    }
    return 1;
}
