/*
 * test_optimizely_config.cpp — the C++ wrapper's optimizely_config_json(): the library's OptimizelyConfig
 * document (exp_client_optimizely_config_json) for the demo datafile, NotReadyError before a datafile, and an
 * Error with EXP_ERR_NOT_FOUND for a client that does not keep its datafile's text.
 * Built with -Wall -Wextra -Werror -pedantic (make test-cpp).
 *
 *     ./optimizely-config-cpp examples/datafiles/demo.json [STATE_DIR]
 */
#include <fstream>
#include <iostream>
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

static bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

int main(int argc, char **argv) {
    if (argc < 2) {
        std::cerr << "usage: optimizely-config-cpp DATAFILE [STATE_DIR]\n";
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string state_dir = argc > 2 ? R"(, "state_dir": ")"s + argv[2] + "\"" : ""s;
    const std::string options = R"({"sdk_key": "config", "profile_store": "none")"s + state_dir;

    experiment::Client client{options + R"(, "keep_datafile": true})"};
    bool not_ready = false;
    try {
        client.optimizely_config_json();
    } catch (const experiment::NotReadyError &) {
        not_ready = true;
    }
    EXPECT(not_ready);

    client.start(text.str());
    const std::string config = client.optimizely_config_json();
    EXPECT(contains(config, R"("features_map":{"checkout_redesign":)"));
    EXPECT(contains(config, R"("experiments_map":{"checkout_redesign_ab":)"));
    EXPECT(contains(config, R"("button_color":{"id":"9001","key":"button_color","type":"string","value":"blue"})"));
    EXPECT(contains(config, R"("audiences":"\"High-value adult carts\" OR \"Premium plan (legacy audience)\"")"));
    EXPECT(contains(config, R"("delivery_rules":[)"));
    EXPECT(client.optimizely_config_json() == config);  // computed once per datafile, then the same text

    experiment::Client forgetful{options + "}"};
    forgetful.start(text.str());
    bool not_found = false;
    try {
        forgetful.optimizely_config_json();
    } catch (const experiment::Error &error) {
        not_found = error.code() == EXP_ERR_NOT_FOUND;
    }
    EXPECT(not_found);

    if (failures) return 1;
    std::cout << "optimizely config: ok\n";
    return 0;
}
