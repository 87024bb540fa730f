#include "json.hpp"

#include <cerrno>
#include <cstdlib>

namespace eagle::cuda::detail {

const Json* Json::get(const std::string& key) const {
    if (type != Type::Object) return nullptr;
    for (auto it = members.rbegin(); it != members.rend(); ++it)
        if (it->first == key) return &it->second;
    return nullptr;
}

long invalid_utf8_at(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = s[i];
        int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (extra < 0 || (extra == 1 && c < 0xc2) || (extra == 3 && c > 0xf4)) return long(i);
        if (i + extra >= s.size() && extra > 0) return long(i);
        for (int k = 1; k <= extra; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return long(i);
        if (extra == 2) {
            const unsigned char d = s[i + 1];
            if ((c == 0xe0 && d < 0xa0) || (c == 0xed && d >= 0xa0)) return long(i);
        }
        if (extra == 3) {
            const unsigned char d = s[i + 1];
            if ((c == 0xf0 && d < 0x90) || (c == 0xf4 && d >= 0x90)) return long(i);
        }
        i += extra + 1;
    }
    return -1;
}

namespace {
struct Parser {
    const std::string& s;
    std::size_t i = 0;
    int depth = 0;

    [[noreturn]] void fail(const std::string& what) const {
        std::size_t line = 1, column = 1;
        for (std::size_t k = 0; k < i && k < s.size(); ++k) {
            if (s[k] == '\n') { ++line; column = 1; } else { ++column; }
        }
        throw JsonError(what + ": line " + std::to_string(line) + " column " + std::to_string(column) +
                        " (char " + std::to_string(i) + ")");
    }
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }
    bool literal(const char* word) {
        std::size_t k = 0;
        while (word[k] && i + k < s.size() && s[i + k] == word[k]) ++k;
        if (word[k]) return false;
        i += k;
        return true;
    }
    static void utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) out += char(cp);
        else if (cp < 0x800) { out += char(0xc0 | cp >> 6); out += char(0x80 | (cp & 0x3f)); }
        else if (cp < 0x10000) { out += char(0xe0 | cp >> 12); out += char(0x80 | ((cp >> 6) & 0x3f)); out += char(0x80 | (cp & 0x3f)); }
        else { out += char(0xf0 | cp >> 18); out += char(0x80 | ((cp >> 12) & 0x3f)); out += char(0x80 | ((cp >> 6) & 0x3f)); out += char(0x80 | (cp & 0x3f)); }
    }
    std::uint32_t hex4() {
        if (i + 4 > s.size()) fail("Invalid \\uXXXX escape");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = s[i++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= c - '0';
            else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
            else { i -= k + 1; fail("Invalid \\uXXXX escape"); }
        }
        return v;
    }
    std::string str() {
        ++i;  // the opening quote
        std::string out;
        while (true) {
            if (i >= s.size()) fail("Unterminated string starting at");
            const char c = s[i];
            if (c == '"') { ++i; return out; }
            if (static_cast<unsigned char>(c) < 0x20) fail("Invalid control character at");
            if (c != '\\') { out += c; ++i; continue; }
            if (++i >= s.size()) fail("Unterminated string starting at");
            const char e = s[i++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    std::uint32_t cp = hex4();
                    if (cp >= 0xd800 && cp < 0xdc00 && i + 1 < s.size() && s[i] == '\\' && s[i + 1] == 'u') {
                        const std::size_t back = i;
                        i += 2;
                        const std::uint32_t low = hex4();
                        if (low >= 0xdc00 && low < 0xe000) cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                        else i = back;
                    }
                    utf8(out, cp);
                    break;
                }
                default: --i; fail("Invalid \\escape");
            }
        }
    }
    Json number() {
        const std::size_t start = i;
        Json v;
        v.type = Json::Type::Number;
        if (s[i] == '-') ++i;
        if (i < s.size() && s[i] == '0') ++i;
        else if (i < s.size() && s[i] >= '1' && s[i] <= '9') { while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i; }
        else { i = start; fail("Expecting value"); }
        bool integral = true;
        if (i < s.size() && s[i] == '.' && i + 1 < s.size() && isdigit(static_cast<unsigned char>(s[i + 1]))) {
            integral = false;
            ++i;
            while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
        if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
            std::size_t k = i + 1;
            if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
            if (k < s.size() && isdigit(static_cast<unsigned char>(s[k]))) {
                integral = false;
                i = k;
                while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
            }
        }
        v.string = s.substr(start, i - start);
        v.number = std::strtod(v.string.c_str(), nullptr);
        v.integral = integral;
        if (integral) {
            errno = 0;
            v.integer = std::strtoll(v.string.c_str(), nullptr, 10);
            if (errno == ERANGE) v.integral = false;  // kept as a number only
        }
        return v;
    }
    Json value() {
        ws();
        if (i >= s.size()) fail("Expecting value");
        if (++depth > 500) fail("Nested too deeply");
        Json v;
        const char c = s[i];
        if (c == '{') {
            v.type = Json::Type::Object;
            ++i;
            ws();
            if (i < s.size() && s[i] == '}') { ++i; --depth; return v; }
            while (true) {
                ws();
                if (i >= s.size() || s[i] != '"') fail("Expecting property name enclosed in double quotes");
                std::string key = str();
                ws();
                if (i >= s.size() || s[i] != ':') fail("Expecting ':' delimiter");
                ++i;
                v.members.emplace_back(std::move(key), value());
                ws();
                if (i < s.size() && s[i] == ',') { ++i; continue; }
                if (i < s.size() && s[i] == '}') { ++i; break; }
                fail("Expecting ',' delimiter");
            }
        } else if (c == '[') {
            v.type = Json::Type::Array;
            ++i;
            ws();
            if (i < s.size() && s[i] == ']') { ++i; --depth; return v; }
            while (true) {
                v.items.push_back(value());
                ws();
                if (i < s.size() && s[i] == ',') { ++i; continue; }
                if (i < s.size() && s[i] == ']') { ++i; break; }
                fail("Expecting ',' delimiter");
            }
        } else if (c == '"') {
            v.type = Json::Type::String;
            v.string = str();
        } else if (literal("true")) {
            v.type = Json::Type::Bool;
            v.boolean = true;
        } else if (literal("false")) {
            v.type = Json::Type::Bool;
        } else if (literal("null")) {
            v.type = Json::Type::Null;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            v = number();
        } else {
            fail("Expecting value");
        }
        --depth;
        return v;
    }
};
}  // namespace

Json parse_json(const std::string& text) {
    Parser p{text};
    Json v = p.value();
    p.ws();
    if (p.i != text.size()) p.fail("Extra data");
    return v;
}

}  // namespace eagle::cuda::detail
