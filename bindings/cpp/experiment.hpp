/*
 * experiment.hpp — a header-only C++17 wrapper over libexperiment's C API (experiment.h).
 *
 *     #include "experiment.hpp"
 *
 *     experiment::Client client{R"({"sdk_key": "demo"})"};
 *     client.start(datafile_text);
 *     experiment::Decision d = client.decide("user-123", "checkout_flow", {{"country", "NL"}, {"age", 31}});
 *     if (d.enabled) { ... d.variation_key.value_or("-") ... }
 *
 * Build: c++ -std=c++17 -Iinclude -Ibindings/cpp app.cpp -lexperiment   (or: pkg-config --cflags --libs experiment)
 *
 * Conventions
 *  - Strings go in as std::string_view and come out as std::string. The evaluation calls (decide,
 *    decide_all, decide_for_keys, get_variation, activate, track) pass user ids, keys and attribute strings
 *    with their lengths (the C API's *_n functions), so any bytes work there, NUL included. Other calls copy
 *    inputs to NUL-terminated buffers (short ones on the stack); a view holding a NUL byte is rejected there
 *    with Error(EXP_ERR_INVALID_ARGUMENT) rather than silently truncated.
 *  - Everything returned is an owning C++ value: decisions, variation keys and JSON texts are copied out
 *    of the library and its buffers released (exp_decision_release / exp_free) before the call returns,
 *    also when copying throws.
 *  - Failures throw experiment::Error (a std::runtime_error) carrying the exp_status code; what() is the
 *    library's exp_last_error() message, read right after the failing call. Common codes have their own
 *    subclasses (NotReadyError, UnknownFlagError, NotTargetedError, ...) so they can be caught by type.
 *    std::bad_alloc may escape as usual.
 *  - Evaluation calls never throw for data conditions, as the reference SDK and every feature-flag SDK:
 *    an unknown flag, experiment or event, a client without a datafile, a user id or key past the
 *    library's limits. decide gives the reference's error decision (enabled false, no variation, the reason
 *    in `reasons`, e.g. "No flag was found for key \"x\"."), decide_all / decide_for_keys an empty vector
 *    before a datafile, get_variation / activate nullopt, track sends nothing; the library's message stays
 *    in exp_last_error(). They still throw for programmer errors: a closed or moved-from client, unknown
 *    option bits, a malformed Value::big_integer.
 *  - Client owns one exp_client and is move-only; the destructor calls exp_client_free(). A moved-from
 *    Client holds no handle: calls on it throw Error(EXP_ERR_INVALID_ARGUMENT).
 *  - Attributes owns copies of its keys and string values, so temporaries may be passed.
 *
 * Thread-safety
 *  - As the C API: one Client may be used from any number of threads at once (decide, track, start with a
 *    new datafile, set_event_dispatcher, ...). Destroying or moving a Client must not race with other calls
 *    on it. Attributes, Value and Decision are ordinary values: concurrent const use is safe.
 *  - The event dispatcher runs synchronously on the thread whose call produced the event, so it must be
 *    thread-safe if the Client is shared. Exceptions thrown by it never reach the C library: they are
 *    caught and reported to the library as a failed dispatch. Every dispatcher ever installed on a Client
 *    is kept alive until the Client is destroyed, because another thread may still be inside it; so are
 *    loggers, listeners and profile stores (set_logger, add_listener, set_profile_store), whose exceptions
 *    are swallowed likewise.
 *
 * Coverage: every exp_* function of experiment.h has a C++ form here (Experiment for exp_experiment
 * handles); tests/cpp/check_wrapper.py fails, naming the function, when one is added to the header without.
 */
#ifndef EXPERIMENT_HPP
#define EXPERIMENT_HPP

#include "experiment.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace experiment {

/* The library's version ("MAJOR.MINOR.PATCH") as linked at run time. */
inline std::string version() { return exp_version(); }

/* ---------------------------------------------------------------------------------------------- */
/* Errors                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

/* Any failure reported by the library. code() is the exp_status; what() the library's message. */
class Error : public std::runtime_error {
public:
    Error(exp_status code, const std::string &message) : std::runtime_error(message), code_(code) {}

    exp_status code() const noexcept { return code_; }
    /* The status as a short static name, e.g. "EXP_ERR_UNKNOWN_FLAG". */
    const char *status_name() const noexcept { return exp_status_str(code_); }

private:
    exp_status code_;
};

/* EXP_ERR_INVALID_ARGUMENT, EXP_ERR_INVALID_UTF8, EXP_ERR_TOO_LARGE */
class InvalidArgumentError : public Error {
public:
    using Error::Error;
};
/* EXP_ERR_INVALID_JSON, EXP_ERR_TOO_DEEP, EXP_ERR_INVALID_EVENT_TAGS */
class InvalidJsonError : public Error {
public:
    using Error::Error;
};
/* EXP_ERR_INVALID_OPTION */
class InvalidOptionError : public Error {
public:
    using Error::Error;
};
/* EXP_ERR_INVALID_DATAFILE, EXP_ERR_UNSUPPORTED_VERSION */
class InvalidDatafileError : public Error {
public:
    using Error::Error;
};
/* EXP_ERR_NOT_READY: the client has no datafile yet */
class NotReadyError : public Error {
public:
    using Error::Error;
};
/* EXP_ERR_CLOSED: the client was closed */
class ClosedError : public Error {
public:
    using Error::Error;
};

/* A key the current datafile does not have; one subclass per kind of key. */
class UnknownKeyError : public Error {
public:
    using Error::Error;
};
class UnknownFlagError : public UnknownKeyError {        /* EXP_ERR_UNKNOWN_FLAG */
public:
    using UnknownKeyError::UnknownKeyError;
};
class UnknownExperimentError : public UnknownKeyError {  /* EXP_ERR_UNKNOWN_EXPERIMENT */
public:
    using UnknownKeyError::UnknownKeyError;
};
class UnknownEventError : public UnknownKeyError {       /* EXP_ERR_UNKNOWN_EVENT */
public:
    using UnknownKeyError::UnknownKeyError;
};
class UnknownVariationError : public UnknownKeyError {   /* EXP_ERR_UNKNOWN_VARIATION */
public:
    using UnknownKeyError::UnknownKeyError;
};

/* trigger_experiment's two "no variation for this user" outcomes; both derive from NotInExperimentError. */
class NotInExperimentError : public Error {
public:
    using Error::Error;
};
class NotTargetedError : public NotInExperimentError {   /* EXP_ERR_NOT_TARGETED */
public:
    using NotInExperimentError::NotInExperimentError;
};
class NotAllocatedError : public NotInExperimentError {  /* EXP_ERR_NOT_ALLOCATED */
public:
    using NotInExperimentError::NotInExperimentError;
};

namespace detail {

/* Throws the exception type matching `code` with `message`. */
[[noreturn]] inline void throw_error(exp_status code, const std::string &message) {
    switch (code) {
    case EXP_ERR_INVALID_ARGUMENT:
    case EXP_ERR_INVALID_UTF8:
    case EXP_ERR_TOO_LARGE: throw InvalidArgumentError(code, message);
    case EXP_ERR_INVALID_JSON:
    case EXP_ERR_TOO_DEEP:
    case EXP_ERR_INVALID_EVENT_TAGS: throw InvalidJsonError(code, message);
    case EXP_ERR_INVALID_OPTION: throw InvalidOptionError(code, message);
    case EXP_ERR_INVALID_DATAFILE:
    case EXP_ERR_UNSUPPORTED_VERSION: throw InvalidDatafileError(code, message);
    case EXP_ERR_NOT_READY: throw NotReadyError(code, message);
    case EXP_ERR_CLOSED: throw ClosedError(code, message);
    case EXP_ERR_UNKNOWN_FLAG: throw UnknownFlagError(code, message);
    case EXP_ERR_UNKNOWN_EXPERIMENT: throw UnknownExperimentError(code, message);
    case EXP_ERR_UNKNOWN_EVENT: throw UnknownEventError(code, message);
    case EXP_ERR_UNKNOWN_VARIATION: throw UnknownVariationError(code, message);
    case EXP_ERR_NOT_TARGETED: throw NotTargetedError(code, message);
    case EXP_ERR_NOT_ALLOCATED: throw NotAllocatedError(code, message);
    default: throw Error(code, message);
    }
}

/* Call right after a C call: on failure reads exp_last_error() (before anything else can touch it). */
inline void check(exp_status status) {
    if (status == EXP_OK) return;
    const char *message = exp_last_error();
    throw_error(status, message && *message ? std::string(message) : std::string(exp_status_str(status)));
}

/* A NUL-terminated copy of a string_view, on the stack when short. Rejects embedded NULs. */
class CString {
public:
    CString(std::string_view text, const char *what) {
        if (text.size() > 0 && std::memchr(text.data(), '\0', text.size()) != nullptr)
            throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT,
                                       std::string(what) + ": contains a NUL byte");
        if (text.size() < sizeof small_) {
            if (!text.empty()) std::memcpy(small_, text.data(), text.size());
            small_[text.size()] = '\0';
            pointer_ = small_;
        } else {
            large_.assign(text.data(), text.size());
            pointer_ = large_.c_str();
        }
    }
    CString(const CString &) = delete;
    CString &operator=(const CString &) = delete;

    const char *c_str() const noexcept { return pointer_; }

private:
    char small_[96];
    std::string large_;
    const char *pointer_ = nullptr;
};

/* An optional string: NULL when absent. */
class OptionalCString {
public:
    OptionalCString(std::optional<std::string_view> text, const char *what) {
        if (text) value_.emplace(*text, what);
    }
    const char *c_str() const noexcept { return value_ ? value_->c_str() : nullptr; }

private:
    std::optional<CString> value_;
};

/* Owns a char* the library returned; releases it with exp_free. */
struct FreeDeleter {
    void operator()(char *pointer) const noexcept { exp_free(pointer); }
};
using LibraryString = std::unique_ptr<char, FreeDeleter>;

inline std::optional<std::string> take_optional(char *&raw) {
    LibraryString owned(raw);
    raw = nullptr;
    if (!owned) return std::nullopt;
    return std::string(owned.get());
}

/* A returned string whose length the library gave (it may contain NUL bytes). */
inline std::optional<std::string> take_optional(char *&raw, size_t length) {
    LibraryString owned(raw);
    raw = nullptr;
    if (!owned) return std::nullopt;
    return std::string(owned.get(), length);
}

inline std::string take(char *&raw) {
    LibraryString owned(raw);
    raw = nullptr;
    return owned ? std::string(owned.get()) : std::string();
}

template <typename T>
struct is_char : std::false_type {};
template <> struct is_char<char> : std::true_type {};
template <> struct is_char<signed char> : std::true_type {};
template <> struct is_char<unsigned char> : std::true_type {};
template <> struct is_char<wchar_t> : std::true_type {};
template <> struct is_char<char16_t> : std::true_type {};
template <> struct is_char<char32_t> : std::true_type {};

}  // namespace detail

/* ---------------------------------------------------------------------------------------------- */
/* Values and attributes                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* An integer of any size as decimal text ("-?[0-9]+"): see EXP_VALUE_BIG_INT. */
struct BigInteger {
    std::string digits;
    friend bool operator==(const BigInteger &a, const BigInteger &b) { return a.digits == b.digits; }
};

/* A value of a type conditions cannot use (EXP_VALUE_OTHER): "exists" is true, every other match type
 * unknown, and event payloads leave it out, as the reference SDK does with a dict or list value. */
struct Unsupported {
    friend bool operator==(const Unsupported &, const Unsupported &) { return true; }
};

/*
 * A typed attribute or property value: null, bool, integer, double, string, big integer or unsupported.
 *   Value{nullptr}, Value{true}, Value{31}, Value{31u}, Value{0.5}, Value{"NL"}, Value{std::string(...)},
 *   Value::big_integer("123456789012345678901234567890"), Value::unsupported()
 * Every integer type becomes int64_t (unsigned values above INT64_MAX become a BigInteger), float and
 * double become double (NaN and infinities too: conditions treat them as the reference does), and string
 * literals / const char* become strings — never bool. Strings may hold NUL bytes.
 */
class Value {
public:
    using Variant = std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, BigInteger, Unsupported>;

    Value(BigInteger number) : value_(std::move(number)) {}
    Value(Unsupported) noexcept : value_(Unsupported{}) {}
    static Value big_integer(std::string digits) { return Value(BigInteger{std::move(digits)}); }
    static Value unsupported() noexcept { return Value(Unsupported{}); }

    Value() noexcept : value_(nullptr) {}
    Value(std::nullptr_t) noexcept : value_(nullptr) {}
    Value(bool b) noexcept : value_(b) {}

    template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                               !detail::is_char<T>::value,
                                           int> = 0>
    Value(T number) : value_(from_integer(number)) {}

    template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
    Value(T number) noexcept : value_(static_cast<double>(number)) {}

    /* A null pointer gives a null value. */
    Value(const char *text) : value_(nullptr) {
        if (text) value_ = std::string(text);
    }
    Value(std::string_view text) : value_(std::string(text)) {}
    Value(const std::string &text) : value_(text) {}
    Value(std::string &&text) noexcept : value_(std::move(text)) {}

    const Variant &variant() const noexcept { return value_; }
    bool is_null() const noexcept { return std::holds_alternative<std::nullptr_t>(value_); }

    /* A view for the C API; string_value points into this Value and lives as long as it does. */
    exp_value to_c() const noexcept {
        exp_value v{};
        switch (value_.index()) {
        case 0: v.type = EXP_VALUE_NULL; break;
        case 1: v.type = EXP_VALUE_BOOL; v.bool_value = std::get<bool>(value_) ? 1 : 0; break;
        case 2: v.type = EXP_VALUE_INT; v.int_value = std::get<std::int64_t>(value_); break;
        case 3: v.type = EXP_VALUE_DOUBLE; v.double_value = std::get<double>(value_); break;
        case 4: v.type = EXP_VALUE_STRING; v.string_value = std::get<std::string>(value_).c_str(); break;
        case 5: v.type = EXP_VALUE_BIG_INT; v.string_value = std::get<BigInteger>(value_).digits.c_str(); break;
        default: v.type = EXP_VALUE_OTHER; break;
        }
        return v;
    }

    /* The byte length of the text to_c() points string_value at (0 for other types). */
    std::size_t text_length() const noexcept {
        if (const auto *text = std::get_if<std::string>(&value_)) return text->size();
        if (const auto *number = std::get_if<BigInteger>(&value_)) return number->digits.size();
        return 0;
    }

    friend bool operator==(const Value &a, const Value &b) { return a.value_ == b.value_; }
    friend bool operator!=(const Value &a, const Value &b) { return !(a == b); }

private:
    template <typename T>
    static Variant from_integer(T number) {
        if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
            if (number > static_cast<T>(std::numeric_limits<std::int64_t>::max()))
                return BigInteger{std::to_string(number)};
        }
        return static_cast<std::int64_t>(number);
    }

    Variant value_;
};

/* One attribute: a key and a Value. Used for the brace syntax of Attributes. */
struct Attribute {
    Attribute(std::string_view key_, Value value_) : key(key_), value(std::move(value_)) {}
    std::string key;
    Value value;
};

/*
 * Per-call user attributes, owning copies of their keys and strings:
 *
 *     experiment::Attributes attrs{{"country", "NL"}, {"age", 31}, {"beta", true}, {"ratio", 0.5}};
 *     attrs.set("plan", "premium");
 *
 * Keys are unique: set() (and a repeated key in the list) replaces the earlier value. The exp_attribute
 * array the C API reads is kept ready, so passing Attributes to a call allocates nothing.
 */
class Attributes {
public:
    Attributes() = default;
    Attributes(std::initializer_list<Attribute> list) {
        entries_.reserve(list.size());
        for (const Attribute &a : list) put(a.key, a.value);
        rebuild();
    }
    Attributes(const Attributes &other) : entries_(other.entries_) { rebuild(); }
    Attributes &operator=(const Attributes &other) {
        if (this != &other) {
            entries_ = other.entries_;
            rebuild();
        }
        return *this;
    }
    /* Moving a vector keeps its elements in place, so the C view stays valid. */
    Attributes(Attributes &&) noexcept = default;
    Attributes &operator=(Attributes &&) noexcept = default;

    /* Adds `key` or replaces its value. Returns *this for chaining. */
    Attributes &set(std::string_view key, Value value) {
        put(key, std::move(value));
        rebuild();
        return *this;
    }

    /* Removes `key`; returns whether it was present. */
    bool erase(std::string_view key) {
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            if (it->key == key) {
                entries_.erase(it);
                rebuild();
                return true;
            }
        }
        return false;
    }

    /* The value of `key`, or nullptr when absent. */
    const Value *find(std::string_view key) const noexcept {
        for (const Attribute &a : entries_)
            if (a.key == key) return &a.value;
        return nullptr;
    }

    std::size_t size() const noexcept { return entries_.size(); }
    bool empty() const noexcept { return entries_.empty(); }
    const std::vector<Attribute> &entries() const noexcept { return entries_; }

    /* The C view: size() exp_attribute entries, valid until this object is modified or destroyed. A key or
       string with a NUL byte would be cut short there: calls taking this view throw for them (has_nul()). */
    const exp_attribute *data() const noexcept { return view_.empty() ? nullptr : view_.data(); }
    /* The length-delimited C view (exp_attribute_n), which the evaluation calls use: NUL bytes are fine. */
    const exp_attribute_n *data_n() const noexcept { return view_n_.empty() ? nullptr : view_n_.data(); }
    /* Whether a key or string value holds a NUL byte. */
    bool has_nul() const noexcept { return has_nul_; }

private:
    void put(std::string_view key, Value value) {
        for (Attribute &a : entries_) {
            if (a.key == key) {
                a.value = std::move(value);
                return;
            }
        }
        entries_.emplace_back(key, std::move(value));
    }

    void rebuild() {
        view_.clear();
        view_n_.clear();
        view_.reserve(entries_.size());
        view_n_.reserve(entries_.size());
        has_nul_ = false;
        for (const Attribute &a : entries_) {
            exp_value value = a.value.to_c();
            std::size_t length = a.value.text_length();
            view_.push_back(exp_attribute{a.key.c_str(), value});
            view_n_.push_back(exp_attribute_n{a.key.data(), a.key.size(), value, length});
            if (a.key.find('\0') != std::string::npos ||
                (length && std::memchr(value.string_value, '\0', length) != nullptr))
                has_nul_ = true;
        }
    }

    std::vector<Attribute> entries_;
    std::vector<exp_attribute> view_;
    std::vector<exp_attribute_n> view_n_;
    bool has_nul_ = false;
};

/* ---------------------------------------------------------------------------------------------- */
/* Decisions and events                                                                            */
/* ---------------------------------------------------------------------------------------------- */

/* Decide options, OR-ed into the `options` argument of decide / decide_all / decide_for_keys. */
namespace decide_option {
inline constexpr unsigned none = 0;
inline constexpr unsigned disable_decision_event = EXP_DECIDE_DISABLE_DECISION_EVENT;
inline constexpr unsigned enabled_flags_only = EXP_DECIDE_ENABLED_FLAGS_ONLY;
inline constexpr unsigned ignore_user_profile_service = EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE;
inline constexpr unsigned include_reasons = EXP_DECIDE_INCLUDE_REASONS;
inline constexpr unsigned exclude_variables = EXP_DECIDE_EXCLUDE_VARIABLES;
inline constexpr unsigned ignore_cmab_cache = EXP_DECIDE_IGNORE_CMAB_CACHE;
inline constexpr unsigned reset_cmab_cache = EXP_DECIDE_RESET_CMAB_CACHE;
inline constexpr unsigned invalidate_user_cmab_cache = EXP_DECIDE_INVALIDATE_USER_CMAB_CACHE;
}  // namespace decide_option

/* One flag decided for one user: an owning copy of an exp_decision. */
struct Decision {
    std::string flag_key;
    std::optional<std::string> variation_key;  /* nullopt when the user got no variation */
    std::optional<std::string> rule_key;       /* the deciding experiment or delivery rule, if any */
    bool enabled = false;
    std::string variables_json = "{}";         /* the flag's variables as a JSON object */
    std::vector<std::string> reasons;          /* filled with decide_option::include_reasons */
};

/* One outgoing event, as handed to the dispatcher. The views are valid only during the callback. */
struct Event {
    std::string_view url;
    std::string_view http_verb;
    std::string_view body;  /* JSON payload */
};

/* Returns true when the event was accepted; false (or throwing) counts as a failed dispatch. */
using EventDispatcher = std::function<bool(const Event &)>;

namespace detail {

/* A string of a filled decision whole, NUL bytes included (exp_decision_text_n); nullopt when NULL. */
inline std::optional<std::string> decision_text(const exp_decision &d, exp_decision_field field,
                                                std::size_t index = 0) {
    const char *text = nullptr;
    std::size_t length = 0;
    if (exp_decision_text_n(&d, field, index, &text, &length) != EXP_OK || !text) return std::nullopt;
    return std::string(text, length);
}

inline Decision copy_decision(const exp_decision &d) {
    Decision out;
    out.flag_key = decision_text(d, EXP_DECISION_FLAG_KEY).value_or("");
    out.variation_key = decision_text(d, EXP_DECISION_VARIATION_KEY);
    out.rule_key = decision_text(d, EXP_DECISION_RULE_KEY);
    out.enabled = d.enabled != 0;
    out.variables_json = decision_text(d, EXP_DECISION_VARIABLES_JSON).value_or("{}");
    if (d.reasons) {
        out.reasons.reserve(d.reason_count);
        for (std::size_t i = 0; i < d.reason_count; ++i)
            if (auto reason = decision_text(d, EXP_DECISION_REASON, i)) out.reasons.push_back(std::move(*reason));
    }
    return out;
}

/* The statuses the evaluation calls answer without throwing (the data conditions of the reference SDK). */
inline bool is_data_error(exp_status status) noexcept {
    switch (status) {
    case EXP_ERR_NOT_READY: case EXP_ERR_UNKNOWN_FLAG: case EXP_ERR_UNKNOWN_EXPERIMENT: case EXP_ERR_UNKNOWN_EVENT:
    case EXP_ERR_TOO_LARGE: case EXP_ERR_INVALID_UTF8: case EXP_ERR_INVALID_EVENT_TAGS: case EXP_ERR_INVALID_JSON:
    case EXP_ERR_TOO_DEEP:
        return true;
    default:
        return false;
    }
}

/* An error decision for a data condition the library filled no decision for (a key or user id past the
   limits, invalid UTF-8): the key, disabled, the library's message as the reason. */
inline Decision error_decision(std::string_view flag_key, exp_status status) {
    Decision decision;
    decision.flag_key = std::string(flag_key);
    const char *message = exp_last_error();
    decision.reasons.emplace_back(message && *message ? message : exp_status_str(status));
    return decision;
}

/* Releases the first `filled` decisions of a buffer on scope exit (also when copying out throws). */
struct DecisionBuffer {
    explicit DecisionBuffer(std::size_t capacity) : items(capacity) {}
    DecisionBuffer(const DecisionBuffer &) = delete;
    DecisionBuffer &operator=(const DecisionBuffer &) = delete;
    ~DecisionBuffer() { release(); }
    void release() noexcept {
        if (filled == 1)
            exp_decision_release(&items[0]);
        else if (filled)
            exp_decisions_release(items.data(), filled);
        filled = 0;
    }
    std::vector<Decision> copy_out() const {
        std::vector<Decision> out;
        out.reserve(filled);
        for (std::size_t i = 0; i < filled; ++i) out.push_back(copy_decision(items[i]));
        return out;
    }
    std::vector<exp_decision> items;
    std::size_t filled = 0;
};

inline int dispatch_trampoline(const exp_event *event, void *user_data) noexcept {
    try {
        const auto *dispatcher = static_cast<const EventDispatcher *>(user_data);
        if (!event || !dispatcher || !*dispatcher) return 1;
        Event e;
        e.url = event->url ? std::string_view(event->url) : std::string_view();
        e.http_verb = event->http_verb ? std::string_view(event->http_verb) : std::string_view();
        e.body = event->body ? std::string_view(event->body, event->body_length) : std::string_view();
        return (*dispatcher)(e) ? 0 : 1;
    } catch (...) {
        return 1;  // never let an exception unwind into the C library
    }
}

}  // namespace detail

/* Validates a datafile without a client; throws the error a client would give. */
inline void validate_datafile(std::string_view datafile) {
    detail::check(exp_validate_datafile(datafile.data() ? datafile.data() : "", datafile.size()));
}

/* Parses decide option names, e.g. R"(["INCLUDE_REASONS"])", into a decide_option bit set. */
inline unsigned parse_decide_options(std::string_view names_json) {
    detail::CString names(names_json, "decide options");
    unsigned options = 0;
    detail::check(exp_decide_options_parse(names.c_str(), &options));
    return options;
}

/* ---------------------------------------------------------------------------------------------- */
/* One experiment for one user (Sigma getExperiment)                                               */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Owns an exp_experiment handle (exp_get_experiment): the user's variation in one experiment and its typed
 * parameters. Immutable: const use from any thread is safe. Move-only; the destructor frees the handle.
 * Obtained from Client::get_experiment.
 */
class Experiment {
public:
    explicit Experiment(exp_experiment *handle) noexcept : handle_(handle) {}
    ~Experiment() { exp_experiment_free(handle_); }
    Experiment(const Experiment &) = delete;
    Experiment &operator=(const Experiment &) = delete;
    Experiment(Experiment &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    Experiment &operator=(Experiment &&other) noexcept {
        if (this != &other) {
            exp_experiment_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }

    const exp_experiment *native_handle() const noexcept { return handle_; }

    std::string id() const { return text(exp_experiment_id(handle_)); }
    std::string key() const { return text(exp_experiment_key(handle_)); }
    std::string variation_id() const { return text(exp_experiment_variation_id(handle_)); }
    std::string variation_key() const { return text(exp_experiment_variation_key(handle_)); }
    /* The variation's position in the experiment. */
    int group_index() const noexcept { return exp_experiment_group_index(handle_); }
    /* Every parameter as a JSON object ("{}" for an experiment no flag uses). */
    std::string parameters_json() const { return text(exp_experiment_parameters_json(handle_)); }

    /* Typed parameters: nullopt when the parameter has no value; throws Error(EXP_ERR_TYPE_MISMATCH) for
     * another type and Error(EXP_ERR_NOT_FOUND) for a name the experiment's flag does not have. */
    std::optional<bool> param_bool(std::string_view name) const {
        int value = 0;
        return param(exp_experiment_param_bool, name, &value) ? std::optional<bool>(value != 0) : std::nullopt;
    }
    std::optional<std::int64_t> param_int(std::string_view name) const {
        std::int64_t value = 0;
        return param(exp_experiment_param_int, name, &value) ? std::optional<std::int64_t>(value) : std::nullopt;
    }
    std::optional<double> param_double(std::string_view name) const {
        double value = 0;
        return param(exp_experiment_param_double, name, &value) ? std::optional<double>(value) : std::nullopt;
    }
    std::optional<std::string> param_string(std::string_view name) const {
        return param_text(exp_experiment_param_string, name);
    }
    /* A json parameter's JSON text. */
    std::optional<std::string> param_json(std::string_view name) const {
        return param_text(exp_experiment_param_json, name);
    }

    /* Sigma getFeatureFlagValue: the value flag `flag_key` gets from this variation when this experiment
     * decides it (see exp_experiment_flag_bool): without a variable key whether the variation enables the
     * flag, else the variable's value (its default when the variation disables the flag). nullopt when there
     * is no value; throws Error(EXP_ERR_UNKNOWN_FLAG), Error(EXP_ERR_NOT_FOUND) when the flag does not use
     * this experiment or lacks the variable, Error(EXP_ERR_TYPE_MISMATCH). */
    std::optional<bool> flag_bool(std::string_view flag_key,
                                  std::optional<std::string_view> variable_key = std::nullopt) const {
        int value = 0;
        return flag(exp_experiment_flag_bool, flag_key, variable_key, &value) ? std::optional<bool>(value != 0)
                                                                              : std::nullopt;
    }
    std::optional<std::int64_t> flag_int(std::string_view flag_key, std::string_view variable_key) const {
        std::int64_t value = 0;
        return flag(exp_experiment_flag_int, flag_key, variable_key, &value) ? std::optional<std::int64_t>(value)
                                                                             : std::nullopt;
    }
    std::optional<double> flag_double(std::string_view flag_key, std::string_view variable_key) const {
        double value = 0;
        return flag(exp_experiment_flag_double, flag_key, variable_key, &value) ? std::optional<double>(value)
                                                                                : std::nullopt;
    }
    std::optional<std::string> flag_string(std::string_view flag_key, std::string_view variable_key) const {
        return flag_text(exp_experiment_flag_string, flag_key, variable_key);
    }
    /* A json variable's JSON text. */
    std::optional<std::string> flag_json(std::string_view flag_key, std::string_view variable_key) const {
        return flag_text(exp_experiment_flag_json, flag_key, variable_key);
    }

private:
    static std::string text(const char *value) { return value ? std::string(value) : std::string(); }

    template <typename Out, typename Function>
    bool param(Function function, std::string_view name, Out *out) const {
        detail::CString parameter(name, "parameter name");
        int found = 0;
        detail::check(function(handle_, parameter.c_str(), out, &found));
        return found != 0;
    }

    template <typename Function>
    std::optional<std::string> param_text(Function function, std::string_view name) const {
        char *raw = nullptr;
        bool found = param(function, name, &raw);
        std::optional<std::string> value = detail::take_optional(raw);
        return found ? value : std::nullopt;
    }

    template <typename Out, typename Function>
    bool flag(Function function, std::string_view flag_key, std::optional<std::string_view> variable_key,
              Out *out) const {
        detail::CString key(flag_key, "flag key");
        detail::OptionalCString variable(variable_key, "variable key");
        int found = 0;
        detail::check(function(handle_, key.c_str(), variable.c_str(), out, &found));
        return found != 0;
    }

    template <typename Function>
    std::optional<std::string> flag_text(Function function, std::string_view flag_key,
                                         std::string_view variable_key) const {
        char *raw = nullptr;
        bool found = flag(function, flag_key, variable_key, &raw);
        std::optional<std::string> value = detail::take_optional(raw);
        return found ? value : std::nullopt;
    }

    exp_experiment *handle_;
};

/* ---------------------------------------------------------------------------------------------- */
/* Client                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

class UserContext;

class Client {
public:
    /* Creates a client from a JSON object of options ("" for defaults). Not ready until start(). */
    explicit Client(std::string_view options_json = {}) : state_(std::make_unique<State>()) {
        detail::CString options(options_json, "options");
        detail::check(exp_client_create(options.c_str(), &client_));
    }

    ~Client() { exp_client_free(client_); }  // then state_ (the dispatchers) goes, after the last callback

    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    Client(Client &&other) noexcept
        : client_(std::exchange(other.client_, nullptr)), state_(std::move(other.state_)) {}

    Client &operator=(Client &&other) noexcept {
        if (this != &other) {
            exp_client_free(client_);
            client_ = std::exchange(other.client_, nullptr);
            state_ = std::move(other.state_);
        }
        return *this;
    }

    /* The underlying handle, still owned by this Client (for C calls the wrapper does not cover). */
    exp_client *native_handle() const noexcept { return client_; }

    /* A user context (see UserContext below): client.create_user_context("alice", {{"country", "NL"}}). */
    UserContext create_user_context(std::string_view user_id, const Attributes &attributes = {});

    /* exp_client_start_sync: the cached datafile for the sdk_key, else `bundled`; then `update`
       (EXP_SYNC_UPDATE_*). Returns true when the cached datafile was used. */
    bool start_sync(std::string_view bundled, int update = EXP_SYNC_UPDATE_NOW) {
        int from_cache = 0;
        detail::check(exp_client_start_sync(client_, bundled.data(), bundled.size(), update, &from_cache));
        return from_cache != 0;
    }

    /* The user's stored sticky-bucketing profile as JSON (nullopt: none); delete it (true: there was one). */
    std::optional<std::string> user_profile_json(std::string_view user_id) {
        char *json = nullptr;
        detail::check(exp_profile_get(client_, user_id.data() ? user_id.data() : "", user_id.size(), &json));
        return detail::take_optional(json);
    }
    bool delete_user_profile(std::string_view user_id) {
        int deleted = 0;
        detail::check(exp_profile_delete(client_, user_id.data() ? user_id.data() : "", user_id.size(), &deleted));
        return deleted != 0;
    }
    explicit operator bool() const noexcept { return client_ != nullptr; }

    /* Starts (or re-starts) with a datafile. A datafile that fails leaves the current config in place. */
    void start(std::string_view datafile) {
        detail::check(exp_client_start(client_, datafile.data() ? datafile.data() : "", datafile.size()));
    }

    bool ready() const {
        int is_ready = 0;
        detail::check(exp_client_is_ready(client_, &is_ready));
        return is_ready != 0;
    }

    /* Facts about the current datafile as a JSON object (revision, flags, experiments, events, ...). */
    std::string config_json() const {
        char *json = nullptr;
        detail::check(exp_client_config_json(client_, &json));
        return detail::take(json);
    }

    /* optimizely-sdk's OptimizelyConfig of the datafile in use as one JSON document
       (exp_client_optimizely_config_json: experiments_map, features_map, attributes, audiences, events, ...;
       needs the option "keep_datafile": true, else an Error with code EXP_ERR_NOT_FOUND; NotReadyError
       before the first datafile). */
    std::string optimizely_config_json() const {
        char *json = nullptr;
        detail::check(exp_client_optimizely_config_json(client_, &json));
        return detail::take(json);
    }

    /* The datafile in use, byte for byte as given or fetched (exp_client_datafile_json; needs the option
       "keep_datafile": true, else an Error with code EXP_ERR_NOT_FOUND; NotReadyError before the first
       datafile). */
    std::string datafile_json() const {
        char *json = nullptr;
        size_t length = 0;
        detail::check(exp_client_datafile_json(client_, &json, &length));
        detail::LibraryString owned(json);
        return owned ? std::string(owned.get(), length) : std::string();
    }

    /* Closes the client: later calls throw ClosedError. Idempotent. Waits up to close_timeout_ms for this
       client's queued events; false when some were not delivered (they stay on disk for the next client). */
    bool close() {
        exp_status status = exp_client_close(client_);
        if (status == EXP_ERR_TIMEOUT) return false;
        detail::check(status);
        return true;
    }

    std::size_t flag_count() const {
        std::size_t count = 0;
        detail::check(exp_flag_count(client_, &count));
        return count;
    }

    /* ---- decisions ---- */

    /* Decides one flag. Never throws for data conditions: an unknown flag or a client without a datafile
       gives the reference SDK's error decision (enabled false, no variation, its reason in `reasons`). */
    Decision decide(std::string_view user_id, std::string_view flag_key, const Attributes &attributes = {},
                    unsigned options = 0) {
        detail::DecisionBuffer buffer(1);
        exp_status status = exp_decide_n(client_, user_id.data(), user_id.size(), flag_key.data(), flag_key.size(),
                                         attributes.data_n(), attributes.size(), options, buffer.items.data());
        if (status == EXP_OK || (buffer.items[0].flag_key && detail::is_data_error(status))) {
            buffer.filled = 1;
            Decision decision = detail::copy_decision(buffer.items[0]);
            decision.flag_key = std::string(flag_key);  // the C copy stops at a NUL byte
            return decision;
        }
        if (detail::is_data_error(status)) return detail::error_decision(flag_key, status);
        detail::check(status);
        return {};
    }

    /* Every flag of the datafile, in datafile order (enabled ones only with enabled_flags_only); empty
       before the client has a datafile, as the reference SDK. */
    std::vector<Decision> decide_all(std::string_view user_id, const Attributes &attributes = {},
                                     unsigned options = 0) {
        std::size_t capacity = 0;
        exp_status counted = exp_flag_count(client_, &capacity);
        if (detail::is_data_error(counted)) return {};
        detail::check(counted);
        for (;;) {
            detail::DecisionBuffer buffer(capacity > 0 ? capacity : 1);
            std::size_t count = 0;
            exp_status status = exp_decide_all_n(client_, user_id.data(), user_id.size(), attributes.data_n(),
                                                 attributes.size(), options, buffer.items.data(), capacity, &count);
            if (status == EXP_ERR_BUFFER_TOO_SMALL && count > capacity) {  // datafile grew meanwhile
                capacity = count;
                continue;
            }
            if (detail::is_data_error(status)) return {};
            detail::check(status);
            buffer.filled = count;
            return buffer.copy_out();
        }
    }

    /* The named flags, in the order given; keys the datafile lacks give disabled decisions (no reasons), and
       a client without a datafile gives an empty vector, as the reference SDK. Keys may hold NUL bytes. */
    std::vector<Decision> decide_for_keys(std::string_view user_id, const std::vector<std::string_view> &flag_keys,
                                          const Attributes &attributes = {}, unsigned options = 0) {
        std::vector<const char *> pointers;
        std::vector<std::size_t> lengths;
        pointers.reserve(flag_keys.size() + 1);
        lengths.reserve(flag_keys.size() + 1);
        for (std::string_view k : flag_keys) {
            pointers.push_back(k.data());
            lengths.push_back(k.size());
        }
        pointers.push_back(nullptr);  // keeps data() non-NULL even with no keys
        lengths.push_back(0);
        detail::DecisionBuffer buffer(flag_keys.empty() ? 1 : flag_keys.size());
        std::size_t count = 0;
        exp_status status = exp_decide_for_keys_n(client_, user_id.data(), user_id.size(), pointers.data(),
                                                  lengths.data(), flag_keys.size(), attributes.data_n(),
                                                  attributes.size(), options, buffer.items.data(), flag_keys.size(),
                                                  &count);
        if (detail::is_data_error(status)) return {};
        detail::check(status);
        buffer.filled = count;
        return buffer.copy_out();
    }

    /* The same for any range of strings (std::vector<std::string>, std::array<const char *, N>, ...). */
    template <typename Range, typename = decltype(std::begin(std::declval<const Range &>()))>
    std::vector<Decision> decide_for_keys(std::string_view user_id, const Range &flag_keys,
                                          const Attributes &attributes = {}, unsigned options = 0) {
        std::vector<std::string_view> views;
        for (const auto &k : flag_keys) views.emplace_back(k);
        return decide_for_keys(user_id, views, attributes, options);
    }

    /* ---- experiments ---- */

    /* decide as the JSON object exp_decide_json writes; attributes as a JSON object (nullopt: none). */
    std::string decide_json(std::string_view user_id, std::string_view flag_key,
                            std::optional<std::string_view> attributes_json = std::nullopt, unsigned options = 0) {
        detail::CString user(user_id, "user id"), flag(flag_key, "flag key");
        detail::OptionalCString attributes(attributes_json, "attributes");
        char *json = nullptr;
        detail::check(exp_decide_json(client_, user.c_str(), flag.c_str(), attributes.c_str(), options, &json));
        return detail::take(json);
    }

    /* decide_for_keys as JSON; `flag_keys_json` is a JSON array of flag keys. */
    std::string decide_for_keys_json(std::string_view user_id, std::string_view flag_keys_json,
                                     std::optional<std::string_view> attributes_json = std::nullopt,
                                     unsigned options = 0) {
        detail::CString user(user_id, "user id"), keys(flag_keys_json, "flag keys");
        detail::OptionalCString attributes(attributes_json, "attributes");
        char *json = nullptr;
        detail::check(exp_decide_for_keys_json(client_, user.c_str(), keys.c_str(), attributes.c_str(), options,
                                               &json));
        return detail::take(json);
    }

    /* The variation key in experiment `experiment_key`, or nullopt (also for an unknown experiment or a
       client without a datafile, as the reference SDK: exp_last_error() says why); sends no event. */
    std::optional<std::string> get_variation(std::string_view experiment_key, std::string_view user_id,
                                             const Attributes &attributes = {}) {
        return variation_key(exp_get_variation_len, experiment_key, user_id, attributes);
    }

    /* As get_variation, and records an impression when the user gets a variation. */
    std::optional<std::string> activate(std::string_view experiment_key, std::string_view user_id,
                                        const Attributes &attributes = {}) {
        return variation_key(exp_activate_len, experiment_key, user_id, attributes);
    }

    /*
     * Kameleoon-style: the variation id for experiment id `experiment_id`, recording an impression.
     * Throws NotTargetedError / NotAllocatedError (both NotInExperimentError) when the user gets no
     * variation, UnknownExperimentError for an unknown id, NotReadyError before start().
     */
    std::string trigger_experiment(std::string_view user_id, std::string_view experiment_id,
                                   const Attributes &attributes = {}) {
        detail::CString user(user_id, "user id"), experiment(experiment_id, "experiment id");
        char *variation = nullptr;
        detail::check(exp_trigger_experiment(client_, user.c_str(), experiment.c_str(), plain(attributes),
                                             attributes.size(), &variation));
        return detail::take(variation);
    }

    /* ---- forced variations and decisions ---- */

    /* Forces the user into `variation_key` of the experiment; nullopt removes the forcing. */
    void set_forced_variation(std::string_view experiment_key, std::string_view user_id,
                              std::optional<std::string_view> variation_key) {
        // Length-delimited: keys and user ids with NUL bytes are kept whole; a null variation removes the forcing.
        const char *variation = variation_key ? (variation_key->data() ? variation_key->data() : "") : nullptr;
        detail::check(exp_set_forced_variation_n(
            client_, experiment_key.data() ? experiment_key.data() : "", experiment_key.size(),
            user_id.data() ? user_id.data() : "", user_id.size(), variation, variation_key ? variation_key->size() : 0));
    }

    std::optional<std::string> get_forced_variation(std::string_view experiment_key, std::string_view user_id) {
        detail::CString experiment(experiment_key, "experiment key"), user(user_id, "user id");
        char *variation = nullptr;
        size_t length = 0;
        detail::check(exp_get_forced_variation_len(client_, experiment.c_str(), user.c_str(), &variation, &length));
        return detail::take_optional(variation, length);
    }

    /* Forces flag `flag_key` (rule `rule_key`, or the whole flag when nullopt) to `variation_key` for the
     * user; a nullopt variation removes that forced decision. */
    void set_forced_decision(std::string_view user_id, std::string_view flag_key,
                             std::optional<std::string_view> rule_key, std::optional<std::string_view> variation_key) {
        detail::CString user(user_id, "user id"), flag(flag_key, "flag key");
        detail::OptionalCString rule(rule_key, "rule key"), variation(variation_key, "variation key");
        detail::check(exp_set_forced_decision(client_, user.c_str(), flag.c_str(), rule.c_str(), variation.c_str()));
    }

    void remove_forced_decisions(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        detail::check(exp_remove_forced_decisions(client_, user.c_str()));
    }

    /* ---- sticky bucketing (user profiles) and Sigma forced memberships ---- */

    /* Installs the host's profile store (see exp_client_set_profile_store); both nullptr removes it. */
    void set_profile_store(exp_profile_lookup_fn lookup, exp_profile_save_fn save, void *user_data) {
        detail::check(exp_client_set_profile_store(client_, lookup, save, user_data));
    }

    /* The profile store's counters as JSON: store, lookups, cache_hits, saves, errors, cached, override_errors. */
    std::string profile_stats_json() {
        char *json = nullptr;
        detail::check(exp_client_profile_stats(client_, &json));
        return detail::take_optional(json).value_or("{}");
    }

    /* The user is in the experiment (id): in the variation at group_index, or the bucketed one (-1). */
    void force_include(std::string_view user_id, std::string_view experiment_id, int group_index = -1) {
        detail::CString user(user_id, "user id"), experiment(experiment_id, "experiment id");
        detail::check(exp_force_include(client_, user.c_str(), experiment.c_str(), group_index));
    }

    void force_exclude(std::string_view user_id, std::string_view experiment_id) {
        detail::CString user(user_id, "user id"), experiment(experiment_id, "experiment id");
        detail::check(exp_force_exclude(client_, user.c_str(), experiment.c_str()));
    }

    void force_exclude_all(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        detail::check(exp_force_exclude_all(client_, user.c_str()));
    }

    /* Removes the user's membership of one experiment, or every one (and exclude-all) when nullopt. */
    void force_clear(std::string_view user_id, std::optional<std::string_view> experiment_id = std::nullopt) {
        detail::CString user(user_id, "user id");
        detail::OptionalCString experiment(experiment_id, "experiment id");
        detail::check(exp_force_clear(client_, user.c_str(), experiment.c_str()));
    }

    /* The same with the experiment named by key (Sigma includeForce / excludeForce(experimentName:)); needs a
     * datafile (Error with EXP_ERR_NOT_READY), Error with EXP_ERR_UNKNOWN_EXPERIMENT for an unknown key. */
    void force_include_key(std::string_view user_id, std::string_view experiment_key, int group_index = -1) {
        detail::CString user(user_id, "user id"), experiment(experiment_key, "experiment key");
        detail::check(exp_force_include_key(client_, user.c_str(), experiment.c_str(), group_index));
    }

    void force_exclude_key(std::string_view user_id, std::string_view experiment_key) {
        detail::CString user(user_id, "user id"), experiment(experiment_key, "experiment key");
        detail::check(exp_force_exclude_key(client_, user.c_str(), experiment.c_str()));
    }

    void force_clear_key(std::string_view user_id, std::string_view experiment_key) {
        detail::CString user(user_id, "user id"), experiment(experiment_key, "experiment key");
        detail::check(exp_force_clear_key(client_, user.c_str(), experiment.c_str()));
    }

    /* ---- user properties ---- */

    /* Stores a property used as an attribute by every later call for the user (per-call attributes win). */
    void set_user_property(std::string_view user_id, std::string_view key, const Value &value) {
        detail::CString user(user_id, "user id"), name(key, "property key");
        if (const auto *s = std::get_if<std::string>(&value.variant()); s && s->find('\0') != std::string::npos)
            throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT, "property value contains a NUL byte");
        exp_value v = value.to_c();
        detail::check(exp_set_user_property(client_, user.c_str(), name.c_str(), &v));
    }

    /* Stores a property given as JSON text (a string, number, boolean or null). */
    void set_user_property_json(std::string_view user_id, std::string_view key, std::string_view value_json) {
        detail::CString user(user_id, "user id"), name(key, "property key"), value(value_json, "property value");
        detail::check(exp_set_user_property_json(client_, user.c_str(), name.c_str(), value.c_str()));
    }

    void remove_user_property(std::string_view user_id, std::string_view key) {
        detail::CString user(user_id, "user id"), name(key, "property key");
        detail::check(exp_remove_user_property(client_, user.c_str(), name.c_str()));
    }

    void clear_user_properties(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        detail::check(exp_clear_user_properties(client_, user.c_str()));
    }

    /* The user's stored properties as a JSON object. */
    std::string user_properties_json(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        char *json = nullptr;
        detail::check(exp_get_user_properties_json(client_, user.c_str(), &json));
        return detail::take(json);
    }

    /* ---- Sigma: user properties, typed flag values, the user's flags / experiments / holdouts ---- */

    /* Sigma setUserProperties (replace all) / editUserProperties (merge; null removes a key): a JSON object
     * of standard keys and "custom.<name>" (see exp_set_user_properties). */
    void set_user_properties(std::string_view user_id, std::string_view properties_json) {
        detail::CString user(user_id, "user id"), json(properties_json, "properties json");
        detail::check(exp_set_user_properties(client_, user.c_str(), json.c_str()));
    }
    void edit_user_properties(std::string_view user_id, std::string_view properties_json) {
        detail::CString user(user_id, "user id"), json(properties_json, "properties json");
        detail::check(exp_edit_user_properties(client_, user.c_str(), json.c_str()));
    }

    /* Sigma checkFlag: nullopt when the user has no value (not an error); Error(EXP_ERR_TYPE_MISMATCH) when
     * the value has another type. Without a variable key the flag's value is whether it is enabled. */
    std::optional<bool> flag_bool(std::string_view user_id, std::string_view flag_key,
                                  std::optional<std::string_view> variable_key = std::nullopt,
                                  const Attributes &attributes = {}) {
        int value = 0;
        if (!flag_value(exp_flag_bool, user_id, flag_key, variable_key, attributes, &value)) return std::nullopt;
        return value != 0;
    }
    std::optional<std::int64_t> flag_int(std::string_view user_id, std::string_view flag_key,
                                         std::string_view variable_key, const Attributes &attributes = {}) {
        std::int64_t value = 0;
        if (!flag_value(exp_flag_int, user_id, flag_key, variable_key, attributes, &value)) return std::nullopt;
        return value;
    }
    std::optional<double> flag_double(std::string_view user_id, std::string_view flag_key,
                                      std::string_view variable_key, const Attributes &attributes = {}) {
        double value = 0;
        if (!flag_value(exp_flag_double, user_id, flag_key, variable_key, attributes, &value)) return std::nullopt;
        return value;
    }
    std::optional<std::string> flag_string(std::string_view user_id, std::string_view flag_key,
                                           std::string_view variable_key, const Attributes &attributes = {}) {
        char *value = nullptr;
        bool found = flag_value(exp_flag_string, user_id, flag_key, variable_key, attributes, &value);
        std::optional<std::string> text = detail::take_optional(value);
        return found ? text : std::nullopt;
    }
    /* A json variable's value as JSON text. */
    std::optional<std::string> flag_json(std::string_view user_id, std::string_view flag_key,
                                         std::string_view variable_key, const Attributes &attributes = {}) {
        char *value = nullptr;
        bool found = flag_value(exp_flag_json, user_id, flag_key, variable_key, attributes, &value);
        std::optional<std::string> text = detail::take_optional(value);
        return found ? text : std::nullopt;
    }

    /* {"flag": {"enabled", "variation_key", "variables"}, ...} for every flag the user has a value for. */
    std::string user_flags_json(std::string_view user_id, const Attributes &attributes = {}) {
        return user_report(exp_user_flags_json, user_id, attributes);
    }
    /* "expId.groupIndex|..." and its JSON array form. */
    std::string user_experiments(std::string_view user_id, const Attributes &attributes = {}) {
        return user_report(exp_user_experiments, user_id, attributes);
    }
    std::string user_experiments_json(std::string_view user_id, const Attributes &attributes = {}) {
        return user_report(exp_user_experiments_json, user_id, attributes);
    }
    /* "holdoutId.0|..." and its JSON array form. */
    std::string user_holdouts(std::string_view user_id, const Attributes &attributes = {}) {
        return user_report(exp_user_holdouts, user_id, attributes);
    }
    std::string user_holdouts_json(std::string_view user_id, const Attributes &attributes = {}) {
        return user_report(exp_user_holdouts_json, user_id, attributes);
    }

    bool get_holdout(std::string_view user_id, std::string_view holdout_key, const Attributes &attributes = {}) {
        detail::CString user(user_id, "user id"), key(holdout_key, "holdout key");
        int held = 0;
        detail::check(exp_get_holdout(client_, user.c_str(), key.c_str(), plain(attributes), attributes.size(), &held));
        return held != 0;
    }

    /* Sigma getExperiment as JSON ({"id", "key", "group_index", "variation_id", "variation_key",
     * "parameters"}), nullopt when the user is not in the experiment. */
    std::optional<std::string> experiment_json(std::string_view user_id, std::string_view experiment_key,
                                               const Attributes &attributes = {}) {
        detail::CString user(user_id, "user id"), key(experiment_key, "experiment key");
        char *json = nullptr;
        detail::check(exp_get_experiment_json(client_, user.c_str(), key.c_str(), plain(attributes),
                                              attributes.size(), &json));
        std::string text = detail::take(json);
        if (text == "null") return std::nullopt;
        return text;
    }

    /* Sigma getExperiment: the user's place in the experiment, nullopt when the user is not in it. */
    std::optional<Experiment> get_experiment(std::string_view user_id, std::string_view experiment_key,
                                             const Attributes &attributes = {}) {
        detail::CString user(user_id, "user id"), key(experiment_key, "experiment key");
        exp_experiment *handle = nullptr;
        detail::check(exp_get_experiment(client_, user.c_str(), key.c_str(), attributes.data(), attributes.size(),
                                         &handle));
        if (!handle) return std::nullopt;
        return std::optional<Experiment>(std::in_place, handle);
    }

    /* ---- conversions and events ---- */

    /* Records conversion `event_key`; tags_json is a JSON object such as {"revenue": 4200}. */
    /* As the reference SDK, an unknown event, a client without a datafile or tags that are not a JSON object
       send nothing and do not throw (exp_last_error() says why); returns whether the event was recorded. */
    bool track(std::string_view event_key, std::string_view user_id, const Attributes &attributes = {},
               std::optional<std::string_view> tags_json = std::nullopt) {
        if (tags_json && tags_json->find('\0') != std::string_view::npos) return false;  // not a JSON object
        detail::OptionalCString tags(tags_json, "event tags");
        exp_status status = exp_track_n(client_, event_key.data(), event_key.size(), user_id.data(), user_id.size(),
                                        attributes.data_n(), attributes.size(), tags.c_str());
        if (detail::is_data_error(status)) return false;
        detail::check(status);
        return true;
    }

    /* ---- event pipeline and Kameleoon user data (see experiment.h) ---- */

    /* Sends every queued event now; false when events remain queued after close_timeout_ms. */
    bool flush() {
        exp_status status = exp_flush(client_);
        if (status == EXP_ERR_TIMEOUT) return false;
        detail::check(status);
        return true;
    }

    /* The event counters as a JSON object (queued, sent, retried, failed, dropped, poisoned, pending, ...). */
    std::string stats_json() const {
        char *json = nullptr;
        detail::check(exp_client_stats(client_, &json));
        return detail::take(json);
    }

    /* Kameleoon trackConversion; revenue NAN (the default) for none. */
    void track_conversion(std::string_view user_id, int64_t goal_id, double revenue = NAN) {
        detail::CString user(user_id, "user id");
        detail::check(exp_track_conversion(client_, user.c_str(), goal_id, revenue));
    }

    /* Receives a delivery's outcome: EXP_OK or the reason (EXP_ERR_DELIVERY_FAILED, EXP_ERR_TIMEOUT,
     * EXP_ERR_CLOSED) and how many events were delivered. See exp_track_conversion_with_callback. */
    using DeliveryCallback = std::function<void(exp_status status, std::size_t sent)>;

    /* Kameleoon trackConversion with a completion handler: `on_complete` is called exactly once, on a
     * library thread once the event's POST ended (or on this thread before the call returns with a host
     * dispatcher). An exception it throws is swallowed (nothing may unwind into C). close() and the
     * destructor return only after every pending callback ran. */
    void track_conversion(std::string_view user_id, int64_t goal_id, double revenue, DeliveryCallback on_complete) {
        detail::CString user(user_id, "user id");
        auto owned = std::make_unique<DeliveryCallback>(std::move(on_complete));
        detail::check(exp_track_conversion_with_callback(client_, user.c_str(), goal_id, revenue,
                                                         &delivery_trampoline, owned.get()));
        owned.release();  // the trampoline owns it now
    }

    /* Kameleoon flush(user, completionHandler): as track_conversion with a callback (no pending data:
     * EXP_OK, 0 sent, on this thread). */
    void flush_user(std::string_view user_id, DeliveryCallback on_complete) {
        detail::CString user(user_id, "user id");
        auto owned = std::make_unique<DeliveryCallback>(std::move(on_complete));
        detail::check(exp_flush_user_with_callback(client_, user.c_str(), &delivery_trampoline, owned.get()));
        owned.release();
    }

    /* flush() without blocking (exp_client_flush_async): `on_complete` gets EXP_OK when none of this client's
     * events is left, EXP_ERR_TIMEOUT when some remain, EXP_ERR_CLOSED, and how many were delivered meanwhile. */
    void flush_async(DeliveryCallback on_complete) {
        auto owned = std::make_unique<DeliveryCallback>(std::move(on_complete));
        detail::check(exp_client_flush_async(client_, &delivery_trampoline, owned.get()));
        owned.release();
    }

    /* Kameleoon addData: one entry or an array, e.g. R"({"type": "interest", "index": 2})". */
    void add_user_data(std::string_view user_id, std::string_view data_json) {
        detail::CString user(user_id, "user id"), data(data_json, "user data");
        detail::check(exp_add_user_data(client_, user.c_str(), data.c_str()));
    }

    /* Kameleoon flush(user): sends the user's pending data now. */
    void flush_user(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        detail::check(exp_flush_user(client_, user.c_str()));
    }

    /*
     * Hands every impression and conversion to `dispatcher` (synchronously, on the calling thread) instead
     * of the network. An empty std::function removes the dispatcher (events are then dropped). See the
     * thread-safety notes at the top: the callable is kept alive for the Client's lifetime.
     */
    void set_event_dispatcher(EventDispatcher dispatcher) {
        if (!state_) throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT, "experiment::Client: moved-from client");
        std::lock_guard<std::mutex> lock(state_->mutex);
        if (!dispatcher) {
            detail::check(exp_client_set_event_dispatcher(client_, nullptr, nullptr));
            return;
        }
        auto owned = std::make_unique<EventDispatcher>(std::move(dispatcher));
        state_->dispatchers.reserve(state_->dispatchers.size() + 1);  // so push_back below cannot throw
        detail::check(exp_client_set_event_dispatcher(client_, &detail::dispatch_trampoline, owned.get()));
        state_->dispatchers.push_back(std::move(owned));
    }

    /* -- Logging and notification listeners ------------------------------------------------------ */

    /* Receives each log message (level: an exp_log_level) synchronously on the thread that produced it. */
    using Logger = std::function<void(exp_log_level level, std::string_view message)>;

    /* Sends the client's log messages to `logger`; an empty std::function restores the default (standard
     * error). Exceptions thrown by the logger are swallowed. The callable is kept alive for the Client's
     * lifetime (another thread may still be inside it). */
    void set_logger(Logger logger) {
        State &state = live_state();
        std::lock_guard<std::mutex> lock(state.mutex);
        if (!logger) {
            detail::check(exp_client_set_logger(client_, nullptr, nullptr));
            return;
        }
        auto owned = std::make_unique<Logger>(std::move(logger));
        state.loggers.reserve(state.loggers.size() + 1);
        detail::check(exp_client_set_logger(client_, &log_trampoline, owned.get()));
        state.loggers.push_back(std::move(owned));
    }

    /* The most detailed level passed to the logger (EXP_LOG_ERROR .. EXP_LOG_DEBUG). */
    void set_log_level(exp_log_level level) { detail::check(exp_client_set_log_level(client_, level)); }

    /* Receives one notification: its type and JSON payload (see exp_notification_type). */
    using Listener = std::function<void(exp_notification_type type, std::string_view payload_json)>;

    /* Adds a listener for one notification type; returns its id for remove_listener. Runs synchronously on
     * the thread that caused the notification; exceptions are swallowed. Kept alive for the Client's lifetime. */
    std::int64_t add_listener(exp_notification_type type, Listener listener) {
        State &state = live_state();
        if (!listener) throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT, "add_listener: empty listener");
        std::lock_guard<std::mutex> lock(state.mutex);
        auto owned = std::make_unique<Listener>(std::move(listener));
        state.listeners.reserve(state.listeners.size() + 1);
        std::int64_t id = 0;
        detail::check(exp_add_notification_listener(client_, type, &listener_trampoline, owned.get(), &id));
        state.listeners.push_back(std::move(owned));
        return id;
    }

    /* Removes a listener added with add_listener (Error with EXP_ERR_NOT_FOUND when there is none). */
    void remove_listener(std::int64_t id) { detail::check(exp_remove_notification_listener(client_, id)); }

    /* -- Sticky bucketing with the host's own store --------------------------------------------- */

    /* Looks up a user's profile JSON: nullopt when the user has none; throwing counts as a failed lookup. */
    using ProfileLookup = std::function<std::optional<std::string>(std::string_view user_id)>;
    /* Saves a user's whole profile JSON; false (or throwing) reports a failed save. */
    using ProfileSave = std::function<bool(std::string_view user_id, std::string_view profile_json)>;

    /* Installs the host's profile store (exp_client_set_profile_store), both callables or neither (empty
     * ones remove sticky bucketing). They may run on many threads at once; kept alive for the Client's
     * lifetime. */
    void set_profile_store(ProfileLookup lookup, ProfileSave save) {
        State &state = live_state();
        std::lock_guard<std::mutex> lock(state.mutex);
        if (!lookup && !save) {
            detail::check(exp_client_set_profile_store(client_, nullptr, nullptr, nullptr));
            return;
        }
        if (!lookup || !save)
            throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT, "set_profile_store: give both lookup and save");
        auto owned = std::make_unique<ProfileStore>(ProfileStore{std::move(lookup), std::move(save)});
        state.profile_stores.reserve(state.profile_stores.size() + 1);
        detail::check(exp_client_set_profile_store(client_, &profile_lookup_trampoline, &profile_save_trampoline,
                                                   owned.get()));
        state.profile_stores.push_back(std::move(owned));
    }

    /* -- Real-time segments: identify ---------------------------------------------------------- */

    /* Sends an ODP identify event linking the client's VUID and `user_id` (once per user and client). */
    void identify_user(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        detail::check(exp_identify_user(client_, user.c_str()));
    }

    /* -- Datafile lifecycle --------------------------------------------------------------------- */

    /* Receives the outcome of start_async once, on a library thread: EXP_OK or why the client is not ready. */
    using ReadyCallback = std::function<void(exp_status)>;

    /* Fetches the datafile for the sdk_key option in the background; on failure starts from the cached
     * datafile, else from `fallback` (empty: none). Polling or the cache-TTL mode follow. See
     * exp_client_start_async. The callback is kept alive for the Client's lifetime. */
    void start_async(std::string_view fallback = {}, ReadyCallback on_ready = {}) {
        if (!state_) throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT, "experiment::Client: moved-from client");
        std::lock_guard<std::mutex> lock(state_->mutex);
        auto owned = on_ready ? std::make_unique<ReadyCallback>(std::move(on_ready)) : nullptr;
        detail::check(exp_client_start_async(client_, fallback.empty() ? nullptr : fallback.data(), fallback.size(),
                                             owned ? &ready_trampoline : nullptr, owned.get()));
        if (owned) state_->ready_callbacks.push_back(std::move(owned));
    }

    /* True once ready; false when `timeout` passed first (negative: the library's default, 2000 ms). Throws
     * the async start's failure (e.g. Error with EXP_ERR_FETCH_FAILED) when it gave up with nothing to use. */
    bool wait_ready(std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
        exp_status status = exp_client_wait_ready(client_, static_cast<std::int64_t>(timeout.count()));
        if (status == EXP_ERR_TIMEOUT) return false;
        detail::check(status);
        return true;
    }

    /* Kameleoon runWhenReady: returns at once; `callback` gets exactly once what wait_ready(timeout) would
     * give as a status: EXP_OK as soon as the client is ready (on this thread, before the call returns, when
     * it is ready already), else on a library thread EXP_ERR_TIMEOUT, the async start's failure or
     * EXP_ERR_CLOSED (close() and the destructor return only after it ran). An exception it throws is
     * swallowed. */
    void run_when_ready(std::chrono::milliseconds timeout, ReadyCallback callback) {
        auto owned = std::make_unique<ReadyCallback>(std::move(callback));
        detail::check(exp_client_run_when_ready(client_, static_cast<std::int64_t>(timeout.count()),
                                                &ready_once_trampoline, owned.get()));
        owned.release();  // the trampoline owns it now
    }

    /* Fetches the datafile now (exp_client_refresh); throws on failure, keeping the current datafile. */
    void refresh() { detail::check(exp_client_refresh(client_)); }

    /* The datafile lifecycle's state and counters as JSON (exp_client_datafile_status_json). */
    std::string datafile_status_json() const {
        char *json = nullptr;
        detail::check(exp_client_datafile_status_json(client_, &json));
        return detail::take(json);
    }

    /* The open client created with {"tag": tag}, as a BORROWED handle (never free it; valid until its owner
     * frees it), or nullptr when none. */
    static exp_client *find_native(const std::string &tag) {
        exp_client *found = nullptr;
        exp_status status = exp_client_find(tag.c_str(), &found);
        if (status == EXP_ERR_NOT_FOUND) return nullptr;
        detail::check(status);
        return found;
    }

    /* ---- real-time segments (ODP) ---- */

    /* Fetches the user's qualified segments (cache first) and makes them the user's segments for decisions;
       returns them as a JSON array. Throws Error with code EXP_ERR_INVALID_USER_ID / EXP_ERR_FETCH_FAILED /
       EXP_ERR_ODP_NOT_ENABLED. `options`: EXP_SEGMENT_* bits. Blocks up to odp.fetch_timeout_ms. */
    std::string fetch_qualified_segments(std::string_view user_id, unsigned options = 0) {
        detail::CString user(user_id, "user id");
        char *json = nullptr;
        detail::check(exp_fetch_qualified_segments(client_, user.c_str(), options, &json));
        return detail::take(json);
    }

    /* Completion of fetch_qualified_segments_async: status, segments (JSON array, "" on error), message. */
    using SegmentsCallback = std::function<void(exp_status, const std::string &, const std::string &)>;

    /* As fetch_qualified_segments on the library's ODP thread; `done` runs there exactly once (it must not
       throw; an exception is swallowed). */
    void fetch_qualified_segments_async(std::string_view user_id, SegmentsCallback done, unsigned options = 0) {
        detail::CString user(user_id, "user id");
        auto owned = std::make_unique<SegmentsCallback>(std::move(done));
        detail::check(exp_fetch_qualified_segments_async(client_, user.c_str(), options, &segments_trampoline,
                                                         owned.get()));
        owned.release();  // the trampoline owns it now
    }

    bool is_qualified_for(std::string_view user_id, std::string_view segment) {
        detail::CString user(user_id, "user id"), name(segment, "segment");
        int qualified = 0;
        detail::check(exp_is_qualified_for(client_, user.c_str(), name.c_str(), &qualified));
        return qualified != 0;
    }

    /* The user's segments as a JSON array, or "null" when none were fetched or set. */
    std::string qualified_segments_json(std::string_view user_id) {
        detail::CString user(user_id, "user id");
        char *json = nullptr;
        detail::check(exp_get_qualified_segments_json(client_, user.c_str(), &json));
        return detail::take(json);
    }

    /* Replaces the user's segments (a JSON array of strings; std::nullopt forgets them). */
    void set_qualified_segments_json(std::string_view user_id, std::optional<std::string_view> segments_json) {
        detail::CString user(user_id, "user id");
        detail::OptionalCString json(segments_json, "segments");
        detail::check(exp_set_qualified_segments_json(client_, user.c_str(), json.c_str()));
    }

    /* Queues a custom ODP event; `type` empty means "fullstack". */
    void send_odp_event(std::string_view action, std::string_view identifiers_json,
                        std::optional<std::string_view> data_json = std::nullopt, std::string_view type = {}) {
        detail::CString name(action, "action"), ids(identifiers_json, "identifiers"), kind(type, "type");
        detail::OptionalCString data(data_json, "data");
        detail::check(exp_send_odp_event(client_, kind.c_str(), name.c_str(), ids.c_str(), data.c_str()));
    }

    void flush_odp_events(int64_t timeout_ms = 10000) { detail::check(exp_flush_odp_events(client_, timeout_ms)); }

    /* The visitor id of the client's state directory. */
    std::string vuid() {
        char *vuid = nullptr;
        detail::check(exp_get_vuid(client_, &vuid));
        return detail::take(vuid);
    }

private:
    template <typename Out, typename Function>
    bool flag_value(Function function, std::string_view user_id, std::string_view flag_key,
                    std::optional<std::string_view> variable_key, const Attributes &attributes, Out *out) {
        detail::CString user(user_id, "user id"), flag(flag_key, "flag key");
        detail::OptionalCString variable(variable_key, "variable key");
        int found = 0;
        exp_status status = function(client_, user.c_str(), flag.c_str(), variable.c_str(), plain(attributes),
                                     attributes.size(), out, &found);
        // As the reference's typed getters: no value for an unknown flag or variable, or before a datafile.
        if (detail::is_data_error(status) || status == EXP_ERR_NOT_FOUND || status == EXP_ERR_UNKNOWN_VARIATION)
            return false;
        detail::check(status);
        return found != 0;
    }

    /* The exp_attribute view for the calls without a length-delimited form: NUL bytes would be cut short. */
    static const exp_attribute *plain(const Attributes &attributes) {
        if (attributes.has_nul())
            throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT,
                                       "an attribute key or string holds a NUL byte (only decide, decide_all, "
                                       "decide_for_keys, get_variation, activate and track take those)");
        return attributes.data();
    }

    template <typename Function>
    std::optional<std::string> variation_key(Function function, std::string_view experiment_key,
                                             std::string_view user_id, const Attributes &attributes) {
        char *variation = nullptr;
        size_t length = 0;
        exp_status status = function(client_, experiment_key.data(), experiment_key.size(), user_id.data(),
                                     user_id.size(), attributes.data_n(), attributes.size(), &variation, &length);
        if (detail::is_data_error(status)) return std::nullopt;
        detail::check(status);
        return detail::take_optional(variation, length);
    }

    template <typename Function>
    std::string user_report(Function function, std::string_view user_id, const Attributes &attributes) {
        detail::CString user(user_id, "user id");
        char *text = nullptr;
        detail::check(function(client_, user.c_str(), plain(attributes), attributes.size(), &text));
        return detail::take(text);
    }

    struct ProfileStore {
        ProfileLookup lookup;
        ProfileSave save;
    };

    /* Lives on the heap so the callback addresses given to the library survive moves of the Client. */
    struct State {
        std::mutex mutex;
        std::vector<std::unique_ptr<EventDispatcher>> dispatchers;
        std::vector<std::unique_ptr<ReadyCallback>> ready_callbacks;
        std::vector<std::unique_ptr<Logger>> loggers;
        std::vector<std::unique_ptr<Listener>> listeners;
        std::vector<std::unique_ptr<ProfileStore>> profile_stores;
    };

    State &live_state() {
        if (!state_) throw InvalidArgumentError(EXP_ERR_INVALID_ARGUMENT, "experiment::Client: moved-from client");
        return *state_;
    }

    static void log_trampoline(int level, const char *message, void *user_data) noexcept {
        try {
            (*static_cast<Logger *>(user_data))(static_cast<exp_log_level>(level), message ? message : "");
        } catch (...) {  // nothing may propagate into C
        }
    }

    static void listener_trampoline(int type, const char *payload_json, void *user_data) noexcept {
        try {
            (*static_cast<Listener *>(user_data))(static_cast<exp_notification_type>(type),
                                                  payload_json ? payload_json : "{}");
        } catch (...) {
        }
    }

    static int profile_lookup_trampoline(const char *user_id, exp_profile_reply *reply, void *user_data) noexcept {
        try {
            // The whole user id (it may hold NUL bytes, which `user_id` would cut short).
            const char *whole_id = nullptr;
            std::size_t whole_length = 0;
            std::string id = exp_profile_reply_user_id(reply, &whole_id, &whole_length) == EXP_OK
                                 ? std::string(whole_id, whole_length) : std::string(user_id ? user_id : "");
            std::optional<std::string> profile = static_cast<ProfileStore *>(user_data)->lookup(id);
            if (!profile) return 0;
            return exp_profile_reply_set(reply, profile->data(), profile->size()) == EXP_OK ? 0 : 1;
        } catch (...) {
            return 1;
        }
    }

    static int profile_save_trampoline(const char *user_id, const char *profile_json, void *user_data) noexcept {
        try {
            return static_cast<ProfileStore *>(user_data)->save(user_id ? user_id : "",
                                                                profile_json ? profile_json : "") ? 0 : 1;
        } catch (...) {
            return 1;
        }
    }

    static void ready_trampoline(int status, void *user_data) noexcept {
        try {
            (*static_cast<ReadyCallback *>(user_data))(static_cast<exp_status>(status));
        } catch (...) {  // nothing may propagate into C
        }
    }

    static void ready_once_trampoline(int status, void *user_data) noexcept {
        std::unique_ptr<ReadyCallback> done(static_cast<ReadyCallback *>(user_data));
        try {
            (*done)(static_cast<exp_status>(status));
        } catch (...) {  // nothing may unwind into C
        }
    }

    static void delivery_trampoline(exp_status status, std::size_t sent, void *user_data) noexcept {
        std::unique_ptr<DeliveryCallback> done(static_cast<DeliveryCallback *>(user_data));
        try {
            (*done)(status, sent);
        } catch (...) {  // nothing may unwind into C
        }
    }

    static void segments_trampoline(exp_status status, const char *segments_json, const char *message,
                                    void *user_data) {
        std::unique_ptr<SegmentsCallback> done(static_cast<SegmentsCallback *>(user_data));
        try {
            (*done)(status, segments_json ? segments_json : "", message ? message : "");
        } catch (...) {  // nothing may unwind into C
        }
    }

    exp_client *client_ = nullptr;
    std::unique_ptr<State> state_;
};

/*
 * One user of a client, as Optimizely's user context: the user id and attributes given once, then decisions,
 * experiments and conversions for that user. Borrows the Client, which must outlive it. Not thread-safe
 * itself (its attributes may change); the Client underneath is.
 *
 *     experiment::User alice(client, "alice", {{"country", "NL"}});
 *     if (alice.decide("free_shipping").enabled) { ... }
 *     alice.track("purchase", R"({"revenue": 4200})");
 */
class User {
public:
    User(Client &client, std::string_view user_id, Attributes attributes = {})
        : client_(&client), user_id_(user_id), attributes_(std::move(attributes)) {}

    const std::string &id() const noexcept { return user_id_; }
    const Attributes &attributes() const noexcept { return attributes_; }
    void set_attributes(Attributes attributes) { attributes_ = std::move(attributes); }

    Decision decide(std::string_view flag_key, unsigned options = 0) {
        return client_->decide(user_id_, flag_key, attributes_, options);
    }
    std::vector<Decision> decide_all(unsigned options = 0) {
        return client_->decide_all(user_id_, attributes_, options);
    }
    std::optional<std::string> get_variation(std::string_view experiment_key) {
        return client_->get_variation(experiment_key, user_id_, attributes_);
    }
    std::string trigger_experiment(std::string_view experiment_id) {
        return client_->trigger_experiment(user_id_, experiment_id, attributes_);
    }
    void track(std::string_view event_key, std::optional<std::string_view> tags_json = std::nullopt) {
        client_->track(event_key, user_id_, attributes_, tags_json);
    }

private:
    Client *client_;
    std::string user_id_;
    Attributes attributes_;
};

/*
 * A user context (Optimizely's OptimizelyUserContext, exp_user in C): one user id with its own attributes,
 * forced decisions and qualified segments. Forced decisions live in the context: other contexts of the same
 * user id never see them. Copying a UserContext makes an independent copy (exp_user_clone). The context keeps
 * the native client alive, but calls fail with ClosedError once the Client is closed or destroyed.
 * Thread-safe, like the C handle.
 *
 *     auto user = client.create_user_context("alice", {{"country", "NL"}});
 *     if (user.decide("free_shipping").enabled) { ... }
 *     user.set_forced_decision("free_shipping", std::nullopt, "on");
 *     user.track_event("purchase", R"({"revenue": 4200})");
 */
class UserContext {
public:
    UserContext(Client &client, std::string_view user_id, const Attributes &attributes = {})
        : client_(client.native_handle()), user_id_(user_id) {
        detail::check(exp_user_create_n(client_, user_id.data() ? user_id.data() : "", user_id.size(),
                                        attributes.data_n(), attributes.size(), &user_));
    }
    ~UserContext() { exp_user_free(user_); }

    UserContext(const UserContext &other) : client_(other.client_), user_id_(other.user_id_) {
        detail::check(exp_user_clone(other.user_, &user_));
    }
    UserContext &operator=(const UserContext &other) {
        if (this != &other) {
            exp_user *copy = nullptr;
            detail::check(exp_user_clone(other.user_, &copy));
            exp_user_free(user_);
            user_ = copy;
            client_ = other.client_;
            user_id_ = other.user_id_;
        }
        return *this;
    }
    UserContext(UserContext &&other) noexcept
        : client_(other.client_), user_(std::exchange(other.user_, nullptr)), user_id_(std::move(other.user_id_)) {}
    UserContext &operator=(UserContext &&other) noexcept {
        if (this != &other) {
            exp_user_free(user_);
            user_ = std::exchange(other.user_, nullptr);
            client_ = other.client_;
            user_id_ = std::move(other.user_id_);
        }
        return *this;
    }

    const std::string &user_id() const noexcept { return user_id_; }
    exp_user *native_handle() const noexcept { return user_; }
    /* The user id as the library holds it (exp_user_id): equal to user_id(). */
    std::string native_user_id() const {
        const char *id = nullptr;
        std::size_t length = 0;
        detail::check(exp_user_id(user_, &id, &length));
        return std::string(id, length);
    }

    /* ---- attributes ---- */

    void set_attribute(std::string_view key, const Value &value) {
        exp_attribute_n attribute{key.data() ? key.data() : "", key.size(), value.to_c(), value.text_length()};
        detail::check(exp_user_set_attribute_n(user_, &attribute));
    }
    void remove_attribute(std::string_view key) {
        detail::check(exp_user_remove_attribute(user_, key.data() ? key.data() : "", key.size()));
    }
    /* The attributes as a JSON object. */
    std::string attributes_json() const {
        char *json = nullptr;
        detail::check(exp_user_attributes_json(user_, &json));
        return detail::take(json);
    }

    /* ---- decisions ---- */

    Decision decide(std::string_view flag_key, unsigned options = 0) {
        exp_decision d{};
        detail::check(exp_user_decide(user_, flag_key.data() ? flag_key.data() : "", flag_key.size(), options, &d));
        try {
            Decision out = detail::copy_decision(d);
            exp_decision_release(&d);
            return out;
        } catch (...) {
            exp_decision_release(&d);
            throw;
        }
    }

    std::vector<Decision> decide_all(unsigned options = 0) {
        std::size_t capacity = 0;
        detail::check(exp_flag_count(client_, &capacity));
        for (;;) {
            detail::DecisionBuffer buffer(capacity > 0 ? capacity : 1);
            std::size_t count = 0;
            exp_status status = exp_user_decide_all(user_, options, buffer.items.data(), capacity, &count);
            if (status == EXP_ERR_BUFFER_TOO_SMALL && count > capacity) {  // datafile grew meanwhile
                capacity = count;
                continue;
            }
            detail::check(status);
            buffer.filled = count;
            return buffer.copy_out();
        }
    }

    std::vector<Decision> decide_for_keys(const std::vector<std::string_view> &flag_keys, unsigned options = 0) {
        std::vector<std::string> keys(flag_keys.begin(), flag_keys.end());  // NUL-terminated copies
        std::vector<const char *> pointers;
        std::vector<std::size_t> lengths;
        for (const std::string &k : keys) {
            pointers.push_back(k.c_str());
            lengths.push_back(k.size());
        }
        pointers.push_back(nullptr);
        lengths.push_back(0);
        detail::DecisionBuffer buffer(keys.empty() ? 1 : keys.size());
        std::size_t count = 0;
        detail::check(exp_user_decide_for_keys(user_, pointers.data(), lengths.data(), keys.size(), options,
                                               buffer.items.data(), keys.size(), &count));
        buffer.filled = count;
        return buffer.copy_out();
    }

    /* ---- conversions ---- */

    void track_event(std::string_view event_key, std::optional<std::string_view> tags_json = std::nullopt) {
        detail::OptionalCString tags(tags_json, "tags");
        detail::check(exp_user_track(user_, event_key.data() ? event_key.data() : "", event_key.size(), tags.c_str()));
    }

    /* ---- forced decisions (rule_key nullopt: the flag as a whole) ---- */

    bool set_forced_decision(std::string_view flag_key, std::optional<std::string_view> rule_key,
                             std::string_view variation_key) {
        detail::check(exp_user_set_forced_decision(user_, text(flag_key), flag_key.size(), rule(rule_key),
                                                   rule_key ? rule_key->size() : 0, text(variation_key),
                                                   variation_key.size()));
        return true;
    }
    std::optional<std::string> get_forced_decision(std::string_view flag_key,
                                                   std::optional<std::string_view> rule_key = std::nullopt) const {
        char *variation = nullptr;
        size_t length = 0;
        detail::check(exp_user_get_forced_decision_len(user_, text(flag_key), flag_key.size(), rule(rule_key),
                                                       rule_key ? rule_key->size() : 0, &variation, &length));
        return detail::take_optional(variation, length);
    }
    bool remove_forced_decision(std::string_view flag_key, std::optional<std::string_view> rule_key = std::nullopt) {
        int removed = 0;
        detail::check(exp_user_remove_forced_decision(user_, text(flag_key), flag_key.size(), rule(rule_key),
                                                      rule_key ? rule_key->size() : 0, &removed));
        return removed != 0;
    }
    bool remove_all_forced_decisions() {
        detail::check(exp_user_remove_all_forced_decisions(user_));
        return true;
    }

    /* ---- qualified segments (JSON arrays; "null" when never fetched or set) ---- */

    std::string fetch_qualified_segments(unsigned options = 0) {
        char *json = nullptr;
        detail::check(exp_user_fetch_qualified_segments(user_, options, &json));
        return detail::take(json);
    }
    bool is_qualified_for(std::string_view segment) const {
        int qualified = 0;
        detail::check(exp_user_is_qualified_for(user_, text(segment), segment.size(), &qualified));
        return qualified != 0;
    }
    std::string qualified_segments_json() const {
        char *json = nullptr;
        detail::check(exp_user_get_qualified_segments_json(user_, &json));
        return detail::take(json);
    }
    void set_qualified_segments_json(std::string_view segments_json) {
        detail::CString json(segments_json, "segments");
        detail::check(exp_user_set_qualified_segments_json(user_, json.c_str()));
    }

private:
    static const char *text(std::string_view s) noexcept { return s.data() ? s.data() : ""; }
    static const char *rule(const std::optional<std::string_view> &s) noexcept {
        return s ? text(*s) : nullptr;
    }

    exp_client *client_;
    exp_user *user_ = nullptr;
    std::string user_id_;
};

inline UserContext Client::create_user_context(std::string_view user_id, const Attributes &attributes) {
    return UserContext(*this, user_id, attributes);
}

}  // namespace experiment

#endif /* EXPERIMENT_HPP */
