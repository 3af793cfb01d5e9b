/*
 * sigma.cpp — the Sigma-style calls through the C++ wrapper: user properties, typed flag values and a
 * user's flags, experiments and holdouts.
 *
 *     c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -Ibindings/cpp examples/cpp/sigma.cpp \
 *         -L.build/release -lexperiment -Wl,-rpath,$PWD/.build/release -o sigma-cpp
 *     ./sigma-cpp examples/datafiles/demo.json
 */
#include "experiment.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
    const std::string path = argc > 1 ? argv[1] : "examples/datafiles/demo.json";
    std::ifstream file(path, std::ios::binary);
    if (!file) { std::cerr << "cannot read " << path << "\n"; return 1; }
    std::ostringstream text;
    text << file.rdbuf();
    try {
        experiment::Client client{R"({"default_decide_options": ["DISABLE_DECISION_EVENT"]})"};
        client.start(text.str());
        client.set_user_properties("anon-1", R"({"email": "ann@demo-shop.example", "app_version": "3.1.0"})");
        client.edit_user_properties("anon-1", R"({"custom.isAuthorized": true})");
        const experiment::Attributes premium{{"plan", "premium"}};
        std::cout << "flags:       " << client.user_flags_json("anon-1", premium) << "\n"
                  << "experiments: \"" << client.user_experiments("anon-1", premium) << "\"\n"
                  << "holdouts:    \"" << client.user_holdouts("anon-1", premium) << "\"\n";
        std::optional<bool> on = client.flag_bool("anon-1", "checkout_redesign");
        std::optional<std::int64_t> steps = client.flag_int("anon-1", "checkout_redesign", "steps");
        std::optional<double> contrast = client.flag_double("anon-1", "dark_mode", "contrast");
        std::cout << "checkout_redesign enabled: " << (on ? (*on ? "true" : "false") : "(no value)") << "\n"
                  << "checkout_redesign.steps: " << (steps ? std::to_string(*steps) : "(no value)") << "\n"
                  << "dark_mode.contrast: " << (contrast ? std::to_string(*contrast) : "(no value)") << "\n"
                  << "checkout_redesign_ab: "
                  << client.experiment_json("anon-1", "checkout_redesign_ab", premium).value_or("not in it") << "\n"
                  << "in q4_global_holdout: " << client.get_holdout("anon-1", "q4_global_holdout") << "\n";
        try {
            client.flag_int("anon-1", "checkout_redesign", "button_color");
            return 1;
        } catch (const experiment::Error &error) {
            if (error.code() != EXP_ERR_TYPE_MISMATCH) return 1;
            std::cout << "type mismatch: " << error.what() << "\n";
        }
    } catch (const experiment::Error &error) {
        std::cerr << "error " << error.code() << ": " << error.what() << "\n";
        return 1;
    }
    return 0;
}
