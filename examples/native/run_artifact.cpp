// eagle-run-artifact: run a compiled eagle artifact to done, with no Python.
//
//   eagle-run-artifact ARTIFACT --data DIR [--max-steps N] [--steps-per-launch K] [--again]
//
// Reads each array binding from DIR/NAME.npy (per-sample parameters: (n,) or (width, n)) and
// the Param values from DIR/params.json ({"dt": 0.001, "g": [0, 0, -9.81]}), runs the artifact
// to done (or N steps) in one graph launch, WHILE { eagle_step; eagle_decide }, writes every
// Mutable, Out and Terminated array back to DIR/NAME.npy (a missing Out or Terminated array
// starts at zero), and prints the run's done/n, steps and launches. --again: run() once more
// without reset (the spec's "Try this": it launches nothing when every sample is done).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <eagle/cuda/eagle_cuda.hpp>

#include "npy.hpp"

namespace ec = eagle::cuda;

namespace {

// params.json: one flat object of numbers or lists of numbers (what eagle writes for Params).
std::map<std::string, std::vector<std::string>> read_params(const std::string& path) {
    std::map<std::string, std::vector<std::string>> out;
    std::ifstream in(path);
    if (!in) return out;
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string s = buffer.str();
    std::size_t i = s.find('{');
    if (i == std::string::npos) throw std::runtime_error(path + " must hold a JSON object");
    while (true) {
        i = s.find_first_of("\"}", i + 1);
        if (i == std::string::npos || s[i] == '}') break;
        const std::size_t end = s.find('"', i + 1);
        const std::string key = s.substr(i + 1, end - i - 1);
        i = s.find(':', end) + 1;
        while (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') ++i;
        std::vector<std::string> values;
        const bool list = s[i] == '[';
        if (list) ++i;
        while (true) {
            while (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') ++i;
            if (s[i] == ']') { ++i; break; }
            const std::size_t stop = s.find_first_of(",]}", i);
            std::string item = s.substr(i, stop - i);
            while (!item.empty() && (item.back() == ' ' || item.back() == '\n')) item.pop_back();
            values.push_back(item);
            i = stop;
            if (!list || s[i] == ']') { if (list) ++i; break; }
            ++i;  // the comma
        }
        out[key] = values;
        i = s.find_first_of(",}", i);
        if (i == std::string::npos || s[i] == '}') break;
    }
    return out;
}

bool integral(const std::string& text) { return text.find_first_of(".eE") == std::string::npos && text != "true" && text != "false"; }

int usage() {
    std::fprintf(stderr, "usage: eagle-run-artifact ARTIFACT --data DIR [--max-steps N] [--steps-per-launch K] [--again]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string artifact, dir;
    bool again = false;
    ec::RunOptions options;
    options.max_steps = 10000;
    options.steps_per_launch = 16;
    for (int k = 1; k < argc; ++k) {
        const std::string a = argv[k];
        if (a == "--data" && k + 1 < argc) dir = argv[++k];
        else if (a == "--max-steps" && k + 1 < argc) options.max_steps = std::atoll(argv[++k]);
        else if (a == "--steps-per-launch" && k + 1 < argc) options.steps_per_launch = std::atoll(argv[++k]);
        else if (a == "--again") again = true;
        else if (a.rfind("--", 0) == 0 || !artifact.empty()) return usage();
        else artifact = a;
    }
    if (artifact.empty() || dir.empty()) return usage();
    try {
        ec::Device dev = ec::Device::get(0);
        ec::LoadedVector loaded(artifact, dev);
        const auto params = read_params(dir + "/params.json");

        // Arrays first (the sample count comes from them), then the missing outputs at zero.
        std::map<std::string, NpyArray> arrays;
        std::int64_t n = -1;
        for (const auto& p : loaded.artifact().params()) {
            if (!p.per_sample()) continue;
            const std::string file = dir + "/" + p.name + ".npy";
            if (std::ifstream(file).good()) {
                arrays[p.name] = read_npy(file);
                n = arrays[p.name].shape.empty() ? n : arrays[p.name].shape.back();
            } else if (p.role != "Out" && p.role != "Terminated") {
                throw ec::ArgumentError("no " + file + " for " + p.role + " parameter '" + p.name + "'");
            }
        }
        if (n < 0) throw ec::ArgumentError("no per-sample array in " + dir + ": the sample count is unknown");
        for (const auto& p : loaded.artifact().params()) {
            if (!p.per_sample() || arrays.count(p.name)) continue;
            NpyArray zero;
            zero.dtype = p.dtype;
            zero.shape = p.width > 1 ? std::vector<std::int64_t>{p.width, n} : std::vector<std::int64_t>{n};
            zero.data.assign(static_cast<std::size_t>(p.width * n) * (p.dtype == "bool" ? 1 : p.dtype.find("32") != std::string::npos ? 4 : 8), 0);
            arrays[p.name] = zero;
        }

        std::map<std::string, std::unique_ptr<ec::DeviceBuffer>> buffers;
        ec::Bindings bindings;
        for (auto& [name, a] : arrays) {
            buffers[name] = std::make_unique<ec::DeviceBuffer>(dev, a.data.size());
            buffers[name]->upload(a.data.data(), a.data.size());
            bindings[name] = ec::ArrayView{buffers[name]->ptr(), a.dtype, a.shape};
        }
        for (const auto& p : loaded.artifact().params()) {
            if (p.role != "Param") continue;
            auto it = params.find(p.name);
            if (it == params.end()) throw ec::ArgumentError("no value for Param '" + p.name + "' in " + dir + "/params.json");
            const bool ints = p.dtype != "float64" && p.dtype != "float32";
            ec::Binding b;
            for (const auto& v : it->second) {
                if (v == "true" || v == "false") b.ints.push_back(v == "true");
                else if (ints && integral(v)) b.ints.push_back(std::stoll(v));
                else b.values.push_back(std::strtod(v.c_str(), nullptr));
            }
            if (!b.ints.empty() && !b.values.empty()) throw ec::ArgumentError("Param '" + p.name + "' mixes kinds");
            bindings[p.name] = b;
        }

        ec::RunLoop loop(loaded, bindings, options);
        loop.build();
        const ec::RunResult r = loop.run();
        const ec::RunResult second = again ? loop.run() : ec::RunResult{};

        for (const auto& p : loaded.artifact().params()) {
            if (p.role != "Mutable" && p.role != "Out" && p.role != "Terminated") continue;
            NpyArray& a = arrays[p.name];
            buffers[p.name]->download(a.data.data(), a.data.size());
            write_npy(dir + "/" + p.name + ".npy", a);
        }
        long long done = n;
        for (const auto& p : loaded.artifact().params())
            if (p.role == "Terminated") {
                done = 0;
                for (unsigned char c : arrays[p.name].data) done += c != 0;
            }
        std::printf("%s: done %lld/%lld, steps %lld, launches %lld\n", loaded.artifact().kernel().c_str(), done,
                    static_cast<long long>(n), static_cast<long long>(r.steps), static_cast<long long>(r.launches));
        if (again)
            std::printf("run() again without reset: launches %lld, steps %lld\n", static_cast<long long>(second.launches),
                        static_cast<long long>(second.steps));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "eagle-run-artifact: %s\n", e.what());
        return 1;
    }
}
