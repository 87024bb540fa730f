// A small JSON reader (RFC 8259): enough for sidecars and params.json, strict about syntax.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace eagle::cuda::detail {

struct Json {
    enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
    bool boolean = false;
    double number = 0;
    bool integral = false;  // written without '.', 'e' or 'E'
    std::int64_t integer = 0;
    std::string string;  // a string's value, or a number's text
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> members;  // in order; a repeated key: the last wins

    const Json* get(const std::string& key) const;  // nullptr if absent or not an object
    bool is(Type t) const { return type == t; }
};

struct JsonError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Parse `text` (UTF-8) into one value; throws JsonError("... at line L column C").
Json parse_json(const std::string& text);
// The first byte that is not valid UTF-8, or -1.
long invalid_utf8_at(const std::string& text);

}  // namespace eagle::cuda::detail
