// Artifact::read: the checks eagle.cuda.artifact.read_artifact makes, in the same order and
// with the same messages (JSON only; nothing is executed).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "eagle/cuda/eagle_cuda.hpp"
#include "json.hpp"
#include "sha256.hpp"

namespace eagle::cuda {

using detail::Json;

std::string sha256_hex(const void* data, std::size_t size) { return detail::sha256(data, size); }

namespace {

const char* kFormat = "eagle-artifact/1";
const char* kRequired[] = {"format", "kernel", "target", "entry", "decide", "block_size", "options",
                           "parameters", "arguments", "control_fields", "sha256", "launch"};
const char* kRoles[] = {"Scalar", "Param", "Mutable", "Terminated", "Out", "Series", "Table"};
const char* kDtypes[] = {"bool", "int32", "int64", "uint32", "uint64", "float32", "float64"};
const char* kTableFields[] = {"size0", "size1", "size2"};

bool read_file(const std::string& path, std::string& out, std::string& why) {
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        why = std::strerror(errno ? errno : ENOENT);
        return false;
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) {
        why = std::strerror(errno ? errno : EIO);
        return false;
    }
    out = buffer.str();
    return true;
}

std::string suffix_of(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    const std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
    const std::size_t dot = name.find_last_of('.');
    return dot == std::string::npos || dot == 0 ? "" : name.substr(dot);
}

std::string with_json_suffix(const std::string& path) {
    const std::string suffix = suffix_of(path);
    return path.substr(0, path.size() - suffix.size()) + ".json";
}

std::string base_name(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    return path.substr(slash == std::string::npos ? 0 : slash + 1);
}

// Python's repr of a JSON value, for messages that quote one ('ptx', None, 3).
std::string repr(const Json* v) {
    if (!v || v->is(Json::Type::Null)) return "None";
    switch (v->type) {
        case Json::Type::String: return "'" + v->string + "'";
        case Json::Type::Bool: return v->boolean ? "True" : "False";
        case Json::Type::Number: return v->string;
        default: return v->is(Json::Type::Array) ? "[...]" : "{...}";
    }
}

const std::string& need_string(const Json& object, const char* key) {
    const Json* v = object.get(key);
    if (!v) throw std::out_of_range(std::string("'") + key + "'");
    if (!v->is(Json::Type::String)) throw std::invalid_argument(std::string(key) + " must be a string");
    return v->string;
}

int need_int(const Json* v, const char* key) {
    if (!v) throw std::out_of_range(std::string("'") + key + "'");
    if (v->is(Json::Type::Number) && v->integral) return static_cast<int>(v->integer);
    if (v->is(Json::Type::Number)) return static_cast<int>(v->number);  // int(3.0) in Python
    if (v->is(Json::Type::Bool)) return v->boolean ? 1 : 0;
    if (v->is(Json::Type::String)) {
        char* end = nullptr;
        const long x = std::strtol(v->string.c_str(), &end, 10);
        if (!v->string.empty() && *end == '\0') return static_cast<int>(x);
        throw std::invalid_argument("invalid literal for int() with base 10: '" + v->string + "'");
    }
    throw std::invalid_argument(std::string(key) + " must be a number");
}

bool one_of(const std::string& s, const char* const* list, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k)
        if (s == list[k]) return true;
    return false;
}

ParamInfo parse_param(const Json& p) {
    if (!p.is(Json::Type::Object)) throw std::invalid_argument("a parameter must be an object");
    ParamInfo out;
    out.name = need_string(p, "name");
    out.role = need_string(p, "role");
    if (!one_of(out.role, kRoles, 7)) throw std::invalid_argument("'" + out.role + "' is not a valid Role");
    out.width = need_int(p.get("width"), "width");
    out.dtype = need_string(p, "dtype");
    if (!one_of(out.dtype, kDtypes, 7)) throw std::invalid_argument("'" + out.dtype + "' is not a valid DType");
    const Json* columns = p.get("columns");
    out.columns = columns ? need_int(columns, "columns") : 0;
    if (out.role == "Table") {
        const Json* ndim = p.get("ndim");
        if (!ndim) throw std::out_of_range("'ndim'");
        if (!ndim->is(Json::Type::Number) || !ndim->integral || ndim->integer < 1 || ndim->integer > 3)
            throw std::invalid_argument("table '" + out.name + "' has ndim " + repr(ndim) + ", not 1 to 3");
        out.ndim = static_cast<int>(ndim->integer);
    }
    return out;
}

// The argument names the parameters imply (hawk.ir.slots): n, control, flags, then per slot.
std::vector<std::string> derived_arguments(const std::vector<ParamInfo>& params) {
    std::vector<std::string> names = {"n", "control", "flags"};
    for (const auto& p : params) {
        if (p.role == "Terminated") continue;
        if (p.width > 1)
            for (int k = 0; k < p.width; ++k) names.push_back("p_" + p.name + "_" + std::to_string(k));
        else
            names.push_back("p_" + p.name);
        if (p.role == "Series") {
            names.push_back("rows_" + p.name);
            names.push_back("row_stride_" + p.name);
        }
        if (p.role == "Table")
            for (int k = 0; k < p.ndim; ++k) names.push_back(std::string(kTableFields[k]) + "_" + p.name);
    }
    return names;
}

}  // namespace

const ParamInfo* Artifact::param(const std::string& name) const {
    for (const auto& p : params_)
        if (p.name == name) return &p;
    return nullptr;
}

Artifact Artifact::read(const std::string& path) {
    const std::string meta_path = with_json_suffix(path);
    Artifact a;
    a.path_ = path;
    std::string why, text;
    if (!read_file(path, a.data_, why)) throw ArtifactError("cannot read the artifact " + path + ": " + why);
    if (!read_file(meta_path, text, why))
        throw ArtifactError(path + " has no readable sidecar " + base_name(meta_path) + " (" + why + ")");
    const long bad = detail::invalid_utf8_at(text);
    if (bad >= 0)
        throw ArtifactError(meta_path + " is not UTF-8 text (invalid start byte at byte " + std::to_string(bad) +
                            "); a sidecar is JSON written by python -m eagle compile");
    Json meta;
    try {
        meta = detail::parse_json(text);
    } catch (const detail::JsonError& e) {
        throw ArtifactError(meta_path + " is not valid JSON: " + e.what());
    }
    if (!meta.is(Json::Type::Object)) throw ArtifactError(meta_path + " must hold a JSON object");
    const Json* format = meta.get("format");
    if (!format || !format->is(Json::Type::String) || format->string != kFormat)
        throw ArtifactError(meta_path + " has format " + repr(format) + "; this eagle reads '" + kFormat + "'");
    std::string missing;
    for (const char* key : kRequired)
        if (!meta.get(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
    if (!missing.empty()) throw ArtifactError(meta_path + " is missing " + missing);
    const Json* target = meta.get("target");
    const bool loadable = target->is(Json::Type::String) && (target->string == "ptx" || target->string == "cubin");
    if (!loadable || suffix_of(path) != "." + target->string)
        throw ArtifactError(meta_path + " describes a " + repr(target) + " artifact but " + path +
                            " is not one (LoadedVector loads .ptx or .cubin)");
    const Json* sha = meta.get("sha256");
    if (!sha->is(Json::Type::String) || sha->string != detail::sha256(a.data_.data(), a.data_.size()))
        throw ArtifactError(path + " does not match the SHA-256 in " + base_name(meta_path) +
                            ": the file was changed after it was written; regenerate it");
    try {
        const Json* params = meta.get("parameters");
        if (!params->is(Json::Type::Array)) throw std::invalid_argument("parameters must be a list");
        for (const auto& p : params->items) a.params_.push_back(parse_param(p));
    } catch (const std::exception& e) {
        throw ArtifactError(meta_path + " has a malformed parameter list (" + e.what() + ")");
    }
    const Json* arguments = meta.get("arguments");
    std::vector<std::string> names;
    if (arguments->is(Json::Type::Array))
        for (const auto& arg : arguments->items) {
            const Json* name = arg.get("name");
            names.push_back(name && name->is(Json::Type::String) ? name->string : std::string("\x01"));
        }
    if (!arguments->is(Json::Type::Array) || names != derived_arguments(a.params_))
        throw ArtifactError(meta_path + ": the argument list does not match the parameters");
    // What a loader needs beyond read_artifact's checks.
    try {
        a.kernel_ = need_string(meta, "kernel");
        a.target_ = target->string;
        a.entry_ = need_string(meta, "entry");
        a.decide_ = need_string(meta, "decide");
        a.block_size_ = static_cast<unsigned>(need_int(meta.get("block_size"), "block_size"));
        const Json* isa = meta.get("ptx_isa");
        a.ptx_isa_ = isa && isa->is(Json::Type::String) ? isa->string : "";
        const Json* options = meta.get("options");
        const Json* accumulate = options->get("accumulate");
        a.accumulate_ = accumulate && accumulate->is(Json::Type::Bool) && accumulate->boolean;
        for (const auto& arg : arguments->items) {
            ArgumentInfo info;
            info.name = need_string(arg, "name");
            info.kind = need_string(arg, "kind");
            info.ctype = need_string(arg, "ctype");
            if (const Json* p = arg.get("parameter"); p && p->is(Json::Type::String)) info.parameter = p->string;
            if (const Json* c = arg.get("component"); c && c->is(Json::Type::Number)) info.component = int(c->integer);
            if (const Json* f = arg.get("field"); f && f->is(Json::Type::String)) info.field = f->string;
            arg_type_of_ctype(info.ctype);  // known
            a.arguments_.push_back(info);
        }
        const Json* fields = meta.get("control_fields");
        if (!fields->is(Json::Type::Array)) throw std::invalid_argument("control_fields must be a list");
        for (const auto& f : fields->items) {
            if (!f.is(Json::Type::String)) throw std::invalid_argument("control_fields must hold names");
            a.control_fields_.push_back(f.string);
        }
    } catch (const ArtifactError&) {
        throw;
    } catch (const std::exception& e) {
        throw ArtifactError(meta_path + " cannot be loaded: " + e.what());
    }
    return a;
}

}  // namespace eagle::cuda
