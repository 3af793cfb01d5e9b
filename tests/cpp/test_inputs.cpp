/*
 * test_inputs.cpp — the C++ wrapper's evaluation calls take what the reference SDK takes and answer data
 * conditions as it does (issue 15): values of every kind (big integers, unsupported values, NaN), NUL bytes
 * in user ids, keys and strings, and no exception for an unknown flag / experiment / event or a client
 * without a datafile. Programmer errors still throw. Built with -Wall -Wextra -Werror -pedantic (make test-cpp).
 *
 *     ./inputs-cpp examples/datafiles/demo.json [STATE_DIR]   (default: the library's, under XDG_STATE_HOME)
 */
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

#include "experiment.hpp"

using namespace std::string_literals;

static int failures = 0;

#define EXPECT(condition)                                                                          \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            std::cerr << __FILE__ << ":" << __LINE__ << ": expected " #condition "\n";             \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)

template <typename Call>
static bool throws_closed(Call call) {
    try {
        call();
    } catch (const experiment::ClosedError &) {
        return true;
    } catch (...) {
    }
    return false;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::cerr << "usage: inputs-cpp DATAFILE [STATE_DIR]\n";
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string state_dir = argc > 2 ? R"(, "state_dir": ")"s + argv[2] + "\"" : ""s;
    const std::string options = R"({"sdk_key": "inputs", "profile_store": "none")"s + state_dir +
                                R"(, "default_decide_options": ["DISABLE_DECISION_EVENT"]})";

    experiment::Client idle{options};
    experiment::Client client{options};
    int events = 0;
    client.set_event_dispatcher([&events](const experiment::Event &) { return ++events > 0; });  // stays local
    client.start(text.str());

    // Values of every kind go in; none throws.
    experiment::Attributes attributes{{"country", "N\0L"s},
                                      {"big", experiment::Value::big_integer("123456789012345678901234567890")},
                                      {"huge", std::numeric_limits<unsigned long long>::max()},
                                      {"odd", experiment::Value::unsupported()},
                                      {"ratio", std::nan("")},
                                      {"k\0ey"s, "v"}};
    EXPECT(attributes.has_nul());
    EXPECT(std::holds_alternative<experiment::BigInteger>(attributes.find("huge")->variant()));
    const std::string user = "u\0ser"s;
    experiment::Decision decided = client.decide(user, "free_shipping", attributes);
    EXPECT(decided.flag_key == "free_shipping");
    EXPECT(client.decide_all(user, attributes).size() == 4);
    EXPECT(client.decide_for_keys(user, std::vector<std::string_view>{"free_shipping"}, attributes).size() == 1);
    (void)client.get_variation("checkout_redesign_ab", user, attributes);
    EXPECT(client.track("purchase", user, attributes));
    EXPECT(client.flush() && events == 1);

    // Unknown keys: the reference's answers.
    experiment::Decision unknown = client.decide("u1", "no_such_flag");
    EXPECT(!unknown.enabled && !unknown.variation_key && !unknown.rule_key && unknown.variables_json == "{}");
    EXPECT(unknown.reasons.size() == 1 && unknown.reasons[0] == "No flag was found for key \"no_such_flag\".");
    experiment::Decision nul_key = client.decide("u1", "free_shipping\0x"s);
    EXPECT(nul_key.flag_key == "free_shipping\0x"s && !nul_key.enabled && nul_key.reasons.size() == 1);
    EXPECT(!client.get_variation("no_such_experiment", "u1"));
    EXPECT(!client.activate("no_such_experiment", "u1"));
    EXPECT(!client.track("no_such_event", "u1"));
    EXPECT(!client.track("purchase", "u1", {}, std::string_view("[1, 2]")));
    std::vector<experiment::Decision> mixed =
        client.decide_for_keys("u1", std::vector<std::string_view>{"free_shipping", "no_such_flag"});
    EXPECT(mixed.size() == 2 && mixed[1].flag_key == "no_such_flag" && !mixed[1].enabled && mixed[1].reasons.empty());

    // Past the library's limits: an answer, not an exception.
    experiment::Decision long_user = client.decide(std::string(5000, 'u'), "free_shipping");
    EXPECT(!long_user.enabled && long_user.reasons.size() == 1);

    // No datafile yet.
    experiment::Decision not_ready = idle.decide("u1", "free_shipping", attributes);
    EXPECT(not_ready.flag_key == "free_shipping" && !not_ready.enabled);
    EXPECT(not_ready.reasons.size() == 1 && not_ready.reasons[0] == "Optimizely SDK not configured properly yet.");
    EXPECT(idle.decide_all("u1").empty());
    EXPECT(idle.decide_for_keys("u1", std::vector<std::string_view>{"free_shipping"}).empty());
    EXPECT(!idle.get_variation("checkout_redesign_ab", "u1"));
    EXPECT(!idle.track("purchase", "u1"));

    // Programmer errors still throw: calls without a length-delimited form refuse NUL bytes, a closed client.
    bool refused = false;
    try {
        (void)client.user_flags_json("u1", attributes);
    } catch (const experiment::InvalidArgumentError &) {
        refused = true;
    }
    EXPECT(refused);
    bool malformed = false;
    try {
        (void)client.decide("u1", "free_shipping", {{"n", experiment::Value::big_integer("12x")}});
    } catch (const experiment::InvalidArgumentError &) {
        malformed = true;
    }
    EXPECT(malformed);
    client.close();
    EXPECT(throws_closed([&] { (void)client.decide("u1", "free_shipping"); }));
    EXPECT(throws_closed([&] { (void)client.track("purchase", "u1"); }));

    if (failures) {
        std::cerr << "inputs-cpp: " << failures << " expectation(s) failed\n";
        return 1;
    }
    std::cout << "inputs-cpp: evaluations take every value and answer data conditions without exceptions\n";
    return 0;
}
