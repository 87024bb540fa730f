// The stand-in libcuda: the driver entry points eagle::cuda uses, with the driver's documented
// rules checked, host memory as device memory, graphs and WHILE nodes executed on the host and
// kernels run from host builds of eagle's generated CUDA (`python -m eagle compile ...
// --host-build`). Loaded instead of the driver through EAGLE_LIBCUDA.
//
// Each rule cites the CUDA Driver API reference (docs.nvidia.com/cuda/cuda-driver-api/, CUDA 13.0)
// section it follows as [API: section, function]. Rules that are this stand-in's own (not the
// driver's) say so.
//
// Configuration (environment, read once, at first use):
//   FAKECUDA_DRIVER_VERSION  the version it reports (default 13000; below 12030 it hands out no
//                            conditional-node entry points, as such a driver has none)
//   FAKECUDA_DEVICES         the device count (default 1)
//   FAKECUDA_HOST_MODULES    ':'-separated .so files or folders of *.host.so: host builds, found
//                            by the SHA-256 of the PTX they were built beside
// Control functions (C): fakecuda_log, fakecuda_reset, fakecuda_fail, fakecuda_counter,
// fakecuda_set_host_modules.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sha256.hpp"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ------------------------------------------------------------------------------- state
struct Module;
struct Graph;

struct Context { int device; };

struct Function {
    Module* module;
    std::string name;
    std::vector<int> sizes;  // each parameter's bytes; unknown (-1 count) for an opaque module
    bool known = false;
    void (*host)(void**, long long) = nullptr;
};

struct Module {
    Context* ctx;
    void* lib = nullptr;  // the host build, or null for an opaque PTX module
    std::map<std::string, Function*> functions;
};

struct Capture;

struct Stream {
    unsigned flags = 0;
    Context* ctx = nullptr;
    Capture* capture = nullptr;
    std::vector<struct Node*> deps;  // the capture's frontier on this stream
};

struct Capture {
    unsigned long long id;
    Graph* graph;
    bool owns_graph;
    CUstreamCaptureMode mode;
    std::thread::id thread;
    Stream* origin;
    bool invalidated = false;
    std::set<Stream*> streams;
};

struct Event {
    Capture* capture = nullptr;
    std::vector<Node*> deps;
};

struct Node {
    enum Kind { Kernel, Child, Empty, Memcpy, Memset, While } kind;
    std::vector<Node*> deps;
    Function* fn = nullptr;
    unsigned long long threads = 0;
    std::vector<std::vector<unsigned char>> params;  // copied when the node is made
    Graph* graph = nullptr;                         // a child's copy or a WHILE body (owned)
    CUgraphConditionalHandle handle = 0;
    CUgraph body_out[1] = {nullptr};  // a WHILE node's phGraph_out
    CUdeviceptr dst = 0, src = 0;
    std::size_t bytes = 0;
    unsigned char value = 0;
};

struct Graph {
    std::vector<Node*> nodes;
    Graph* parent = nullptr;  // a WHILE body's graph
    bool is_child = false;
};

struct Exec {
    Graph* graph;   // the snapshot it runs
    Graph* source;  // the graph it was made from: the owner of its conditional handles
};

struct Condition {
    Graph* owner;
    unsigned def;
    unsigned flags;
    unsigned value;
};

struct State {
    std::recursive_mutex lock;
    int version = 13000;
    int devices = 1;
    std::vector<Context*> primary;
    std::map<CUdeviceptr, std::size_t> memory;  // device (and host-mapped) blocks
    std::set<void*> host_mapped;
    std::set<Stream*> streams;
    std::set<Event*> events;
    std::set<Module*> modules;
    std::set<Graph*> graphs;
    std::set<Exec*> execs;
    std::map<CUgraphConditionalHandle, Condition> conditions;
    std::set<Capture*> captures;
    unsigned long long next_id = 1;
    std::vector<std::string> log;
    std::string log_text;
    std::map<std::string, long long> counters;
    std::string fail_name;
    long long fail_nth = 0;
    CUresult fail_code = CUDA_SUCCESS;
    std::map<std::string, void*> host_libs;  // path -> dlopen handle
    std::string host_modules;  // FAKECUDA_HOST_MODULES at first use, or fakecuda_set_host_modules'
};

State& S() {
    static State* s = [] {
        auto* st = new State();
        if (const char* v = std::getenv("FAKECUDA_DRIVER_VERSION")) st->version = std::atoi(v);
        if (const char* v = std::getenv("FAKECUDA_DEVICES")) st->devices = std::atoi(v);
        if (const char* v = std::getenv("FAKECUDA_HOST_MODULES")) st->host_modules = v;
        for (int k = 0; k < st->devices; ++k) st->primary.push_back(new Context{k});
        return st;
    }();
    return *s;
}

thread_local std::vector<Context*> ctx_stack;
thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
bool initialized = false;

const char* result_name(CUresult r) {
    switch (r) {
#define NAME(x) case x: return #x;
        NAME(CUDA_SUCCESS) NAME(CUDA_ERROR_INVALID_VALUE) NAME(CUDA_ERROR_OUT_OF_MEMORY)
        NAME(CUDA_ERROR_NOT_INITIALIZED) NAME(CUDA_ERROR_DEINITIALIZED) NAME(CUDA_ERROR_NO_DEVICE)
        NAME(CUDA_ERROR_INVALID_DEVICE) NAME(CUDA_ERROR_INVALID_IMAGE) NAME(CUDA_ERROR_INVALID_CONTEXT)
        NAME(CUDA_ERROR_NOT_FOUND) NAME(CUDA_ERROR_NOT_READY) NAME(CUDA_ERROR_INVALID_HANDLE)
        NAME(CUDA_ERROR_NOT_SUPPORTED) NAME(CUDA_ERROR_LAUNCH_TIMEOUT) NAME(CUDA_ERROR_LAUNCH_FAILED)
        NAME(CUDA_ERROR_INVALID_PTX) NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        NAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) NAME(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        NAME(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) NAME(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
        NAME(CUDA_ERROR_ILLEGAL_ADDRESS) NAME(CUDA_ERROR_INVALID_SOURCE)
        NAME(CUDA_ERROR_ILLEGAL_STATE) NAME(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED) NAME(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
        NAME(CUDA_ERROR_UNKNOWN)
#undef NAME
        default: return nullptr;
    }
}

// The entry points that release an object (a destroy, a free, an unload): one that fails is
// a double release, a release of a handle never made, or one from a thread with no context.
bool is_release(const char* name) {
    for (const char* word : {"Destroy", "Free", "Unload"})
        if (std::strstr(name, word)) return true;
    return false;
}

// Every entry point: take the lock, count the call, honour an injected failure, log the result.
struct Call {
    const char* name;
    std::unique_lock<std::recursive_mutex> hold;
    std::string detail;
    explicit Call(const char* n) : name(n), hold(S().lock) { ++S().counters[name]; }
    CUresult injected() {
        State& s = S();
        if (s.fail_name == name && --s.fail_nth == 0) {
            s.fail_name.clear();
            return done(s.fail_code, "injected");
        }
        return CUDA_SUCCESS;
    }
    void note(const char* fmt, ...) {
        char buffer[512];
        va_list args;
        va_start(args, fmt);
        std::vsnprintf(buffer, sizeof buffer, fmt, args);
        va_end(args);
        detail += buffer;
    }
    CUresult done(CUresult r, const std::string& why = "") {
        const char* rn = result_name(r);
        if (r != CUDA_SUCCESS && is_release(name)) ++S().counters["failed releases"];
        std::string line = std::string(name) + "(" + detail + ") -> " + (rn ? rn : std::to_string(r));
        if (!why.empty()) line += ": " + why;
        S().log.push_back(line);
        return r;
    }
};

#define ENTER(name)                                   \
    Call call(name);                                  \
    if (CUresult r_ = call.injected(); r_) return r_;

// [API: Initialization, cuInit] every call but cuInit/cuDriverGetVersion/cuGetProcAddress/
// cuGetErrorName/String returns CUDA_ERROR_NOT_INITIALIZED before cuInit.
#define NEED_INIT()                                               \
    if (!initialized) return call.done(CUDA_ERROR_NOT_INITIALIZED);

// [API: Context Management] calls that work in the current context fail with
// CUDA_ERROR_INVALID_CONTEXT on a thread that has none.
#define NEED_CTX()                                                           \
    NEED_INIT();                                                             \
    if (ctx_stack.empty() || !ctx_stack.back())                              \
        return call.done(CUDA_ERROR_INVALID_CONTEXT, "no current context on this thread");

Stream* stream_of(CUstream h) {
    // [API: Stream Management] 0 and CU_STREAM_LEGACY are the legacy default stream,
    // CU_STREAM_PER_THREAD the per-thread one; neither can capture here (eagle never does).
    if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return nullptr;
    auto* s = reinterpret_cast<Stream*>(h);
    return S().streams.count(s) ? s : reinterpret_cast<Stream*>(-1);
}
const auto BAD_STREAM = reinterpret_cast<Stream*>(-1);

// [API: Stream Management, cuThreadExchangeStreamCaptureMode] a "potentially unsafe" call
// (allocation, synchronous copy, synchronization, module load) is prohibited when the calling
// thread's mode is not RELAXED and it has a capture of its own begun in a non-RELAXED mode, or
// (in GLOBAL mode) another thread has a capture begun in GLOBAL mode; the call fails and the
// capture is invalidated.
CUresult unsafe_call(Call& call) {
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    for (Capture* c : S().captures) {
        if (c->mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
        const bool mine = c->thread == std::this_thread::get_id();
        if (mine || (thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            c->invalidated = true;
            return call.done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "a potentially unsafe call during a capture");
        }
    }
    return CUDA_SUCCESS;
}

// [API: Stream Management, cuStreamBeginCapture; CUDA Programming Guide, "Prohibited and
// Unhandled Operations"] work on the legacy stream while a blocking stream of the context
// captures would synchronize with it implicitly: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, and that
// capture is invalidated.
CUresult legacy_use(Call& call) {
    for (Capture* c : S().captures)
        for (Stream* s : c->streams)
            if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
                c->invalidated = true;
                return call.done(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "the legacy stream while a blocking stream captures");
            }
    return CUDA_SUCCESS;
}

bool in_memory(CUdeviceptr p, std::size_t bytes) {
    auto& m = S().memory;
    auto it = m.upper_bound(p);
    if (it == m.begin()) return false;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second;
}

// ------------------------------------------------------------------------- host modules
std::string host_lib_hash(void* lib) {
    auto* h = static_cast<const char*>(dlsym(lib, "eagle_host_module_image_sha256"));
    return h ? h : "";
}

void* open_host(const std::string& path, std::string& why) {
    auto& libs = S().host_libs;
    auto it = libs.find(path);
    if (it != libs.end()) return it->second;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* e = dlerror();
        why = e ? e : "dlopen failed";
        return nullptr;
    }
    libs[path] = lib;
    return lib;
}

void* find_host_build(const std::string& digest) {
    std::string list = S().host_modules, why;  // never getenv here: see fakecuda_set_host_modules
    std::size_t at = 0;
    while (at <= list.size()) {
        std::size_t end = list.find(':', at);
        if (end == std::string::npos) end = list.size();
        const std::string entry = list.substr(at, end - at);
        at = end + 1;
        if (entry.empty()) continue;
        std::vector<std::string> files;
        if (DIR* dir = opendir(entry.c_str())) {
            while (dirent* d = readdir(dir)) {
                const std::string name = d->d_name;
                if (name.size() > 8 && name.compare(name.size() - 8, 8, ".host.so") == 0) files.push_back(entry + "/" + name);
            }
            closedir(dir);
        } else {
            files.push_back(entry);
        }
        for (const auto& f : files)
            if (void* lib = open_host(f, why); lib && host_lib_hash(lib) == digest) return lib;
    }
    return nullptr;
}

// The host build's kernels: "name size,size,...\n" per kernel.
void read_kernels(Module* m) {
    auto* table = static_cast<const char*>(dlsym(m->lib, "eagle_host_module_kernels"));
    if (!table) return;
    std::string text = table;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(at, end - at);
        at = end + 1;
        const std::size_t space = line.find(' ');
        auto* f = new Function{m, line.substr(0, space), {}, true, nullptr};
        if (space != std::string::npos) {
            std::string sizes = line.substr(space + 1);
            std::size_t k = 0;
            while (k < sizes.size()) {
                std::size_t comma = sizes.find(',', k);
                if (comma == std::string::npos) comma = sizes.size();
                f->sizes.push_back(std::atoi(sizes.substr(k, comma - k).c_str()));
                k = comma + 1;
            }
        }
        f->host = reinterpret_cast<void (*)(void**, long long)>(dlsym(m->lib, ("host_launch_" + f->name).c_str()));
        m->functions[f->name] = f;
    }
}

// An opaque PTX module: its .entry names and parameter sizes, so launches are checked and logged.
void read_ptx_entries(Module* m, const std::string& ptx) {
    std::size_t at = 0;
    while ((at = ptx.find(".entry", at)) != std::string::npos) {
        at += 6;
        std::size_t name_start = ptx.find_first_not_of(" \t", at);
        std::size_t open = ptx.find('(', name_start);
        if (open == std::string::npos) break;
        std::string name = ptx.substr(name_start, open - name_start);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\n')) name.pop_back();
        std::size_t close = ptx.find(')', open);
        auto* f = new Function{m, name, {}, true, nullptr};
        std::size_t p = open;
        while ((p = ptx.find(".param", p)) != std::string::npos && p < close) {
            p += 6;
            const std::size_t dot = ptx.find('.', p);
            const std::string type = ptx.substr(dot + 1, 3);
            const int bits = std::atoi(type.c_str() + 1);
            f->sizes.push_back(type[0] == 'p' || bits == 0 ? 8 : bits / 8);
        }
        m->functions[name] = f;
        at = close;
    }
}

void set_condition(unsigned long long handle, unsigned int value) {
    auto it = S().conditions.find(handle);
    if (it != S().conditions.end()) it->second.value = value;
}

// The stand-in's own host versions of repeat_while's condition kernels (eagle/cuda/loop.py's
// CONDITION_SOURCE, which the native layer loads as PTX): a module whose entries are these
// runs them with no host build.
template <typename T>
void set_condition_kernel(void** p, long long threads) {
    for (long long g = 0; g < threads; ++g) {
        const auto handle = *static_cast<unsigned long long*>(p[0]);
        const T* condition = *static_cast<const T**>(p[1]);
        long long* iterations = *static_cast<long long**>(p[2]);
        const long long limit = *static_cast<long long*>(p[3]);
        const int counts = *static_cast<int*>(p[4]);
        if (counts) *iterations += 1;
        const bool again = condition[0] != 0 && (limit < 0 || *iterations < limit);
        set_condition(handle, again ? 1u : 0u);
    }
}

void attach_builtins(Module* m) {
    static const std::map<std::string, void (*)(void**, long long)> builtins = {
        {"eagle_set_condition_b1", set_condition_kernel<bool>},
        {"eagle_set_condition_i1", set_condition_kernel<signed char>},
        {"eagle_set_condition_u1", set_condition_kernel<unsigned char>},
        {"eagle_set_condition_i4", set_condition_kernel<int>},
        {"eagle_set_condition_u4", set_condition_kernel<unsigned int>},
        {"eagle_set_condition_i8", set_condition_kernel<long long>},
        {"eagle_set_condition_u8", set_condition_kernel<unsigned long long>}};
    for (auto& [name, f] : m->functions) {
        auto it = builtins.find(name);
        if (it != builtins.end()) f->host = it->second;
    }
}

// [API: Execution Control, cuLaunchKernel] kernelParams holds one pointer per parameter; the
// driver reads exactly the kernel's count. Stand-in rule (eagle's own contract, not the
// driver's): eagle::cuda ends the array with a null pointer, so a wrong count is caught here.
CUresult check_params(Call& call, Function* f, void** params) {
    const std::size_t n = f->sizes.size();
    if (n && !params) return call.done(CUDA_ERROR_INVALID_VALUE, "kernelParams is null");
    for (std::size_t k = 0; k < n; ++k)
        if (!params[k])
            return call.done(CUDA_ERROR_INVALID_VALUE, f->name + " takes " + std::to_string(n) +
                                                           " parameters; argument " + std::to_string(k) + " is missing");
    if (params && params[n])
        return call.done(CUDA_ERROR_INVALID_VALUE, f->name + " takes " + std::to_string(n) +
                                                       " parameters but more were packed");
    return CUDA_SUCCESS;
}

std::vector<std::vector<unsigned char>> copy_params(Function* f, void** params) {
    std::vector<std::vector<unsigned char>> out;
    for (std::size_t k = 0; k < f->sizes.size(); ++k) {
        auto* p = static_cast<unsigned char*>(params[k]);
        out.emplace_back(p, p + f->sizes[k]);
    }
    return out;
}

CUresult run_kernel(Call& call, Function* f, std::vector<std::vector<unsigned char>>& params, unsigned long long threads) {
    if (!f->host)
        return call.done(CUDA_ERROR_NOT_SUPPORTED, "no host build of module with " + f->name +
                                                       ": compile the artifact with --host-build and list it in FAKECUDA_HOST_MODULES");
    std::vector<void*> pointers;
    for (auto& p : params) pointers.push_back(p.data());
    if (f->module && f->module->lib) {
        auto hook = reinterpret_cast<void (**)(unsigned long long, unsigned int)>(
            dlsym(f->module->lib, "eagle_condition_hook"));
        if (hook) *hook = set_condition;
    }
    ++S().counters["kernels run"];
    f->host(pointers.data(), static_cast<long long>(threads));
    return CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------ graphs
Graph* new_graph(Graph* parent = nullptr) {
    auto* g = new Graph();
    g->parent = parent;
    S().graphs.insert(g);
    return g;
}

void destroy_graph(Graph* g) {
    for (Node* n : g->nodes) {
        if (n->graph) destroy_graph(n->graph);
        delete n;
    }
    S().graphs.erase(g);
    delete g;
}

Graph* clone(const Graph* g, Graph* parent) {
    Graph* out = new_graph(parent);
    out->is_child = g->is_child;
    std::map<const Node*, Node*> map;
    for (const Node* n : g->nodes) {
        auto* c = new Node(*n);
        c->deps.clear();
        for (Node* d : n->deps) c->deps.push_back(map.at(d));
        if (n->graph) c->graph = clone(n->graph, out);
        map[n] = c;
        out->nodes.push_back(c);
    }
    return out;
}

const unsigned long long kWhileLimit = 10000000;  // stand-in rule: a WHILE that never ends

CUresult run_graph(Call& call, Graph* g) {
    for (Node* n : g->nodes) {
        switch (n->kind) {
            case Node::Kernel:
                if (CUresult r = run_kernel(call, n->fn, n->params, n->threads)) return r;
                break;
            case Node::Child:
                if (CUresult r = run_graph(call, n->graph)) return r;
                break;
            case Node::Memcpy:
                std::memcpy(reinterpret_cast<void*>(n->dst), reinterpret_cast<const void*>(n->src), n->bytes);
                break;
            case Node::Memset:
                std::memset(reinterpret_cast<void*>(n->dst), n->value, n->bytes);
                break;
            case Node::Empty:
                break;
            case Node::While: {
                // [API: Graph Management, CUDA_CONDITIONAL_NODE_PARAMS] WHILE: the body runs as
                // long as the condition is nonzero, checked before each iteration.
                unsigned long long k = 0;
                while (S().conditions.at(n->handle).value) {
                    if (++k > kWhileLimit) return call.done(CUDA_ERROR_LAUNCH_TIMEOUT, "a WHILE node ran 10^7 iterations");
                    if (CUresult r = run_graph(call, n->graph)) return r;
                }
                S().counters["while iterations"] += k;
                break;
            }
        }
    }
    return CUDA_SUCCESS;
}

// [API: Graph Management, CUDA_CONDITIONAL_NODE_PARAMS] a conditional body may hold kernels,
// empty nodes, child graphs, memsets, memcopies and conditionals; [API: cuGraphAddChildGraphNode,
// CUDA 12.4+ notes] a child graph may not contain conditional nodes (instantiation fails).
CUresult check_graph(Call& call, const Graph* g, bool in_child) {
    for (const Node* n : g->nodes) {
        if (n->kind == Node::While && in_child)
            return call.done(CUDA_ERROR_NOT_SUPPORTED, "a conditional node inside a child graph");
        if (n->graph)
            if (CUresult r = check_graph(call, n->graph, in_child || n->kind == Node::Child)) return r;
    }
    return CUDA_SUCCESS;
}

Node* add_node(Graph* g, Node::Kind kind, const CUgraphNode* deps, std::size_t count) {
    auto* n = new Node{};
    n->kind = kind;
    for (std::size_t k = 0; k < count; ++k) n->deps.push_back(reinterpret_cast<Node*>(deps[k]));
    g->nodes.push_back(n);
    return n;
}

bool valid_deps(Graph* g, const CUgraphNode* deps, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
        bool found = false;
        for (Node* n : g->nodes) found |= reinterpret_cast<CUgraphNode>(n) == deps[k];
        if (!found) return false;
    }
    return count == 0 || deps;
}

// Record one node on a capturing stream: after the stream's frontier, becoming it.
Node* capture_node(Stream* s, Node::Kind kind) {
    auto* n = new Node{};
    n->kind = kind;
    n->deps = s->deps;
    s->capture->graph->nodes.push_back(n);
    s->deps = {n};
    return n;
}

// ---------------------------------------------------------------- the entry points
CUresult f_cuGetErrorName(CUresult error, const char** out) {
    const char* n = result_name(error);
    if (!n) { *out = nullptr; return CUDA_ERROR_INVALID_VALUE; }
    *out = n;
    return CUDA_SUCCESS;
}
CUresult f_cuGetErrorString(CUresult error, const char** out) {
    const char* n = result_name(error);
    if (!n) { *out = nullptr; return CUDA_ERROR_INVALID_VALUE; }
    *out = "stand-in libcuda";
    return CUDA_SUCCESS;
}
CUresult f_cuInit(unsigned int flags) {
    ENTER("cuInit");
    // [API: Initialization, cuInit] Flags must be 0.
    if (flags != 0) return call.done(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    initialized = true;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDriverGetVersion(int* v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = S().version;
    return CUDA_SUCCESS;
}
CUresult f_cuDeviceGetCount(int* count) {
    ENTER("cuDeviceGetCount");
    NEED_INIT();
    *count = S().devices;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDeviceGet(CUdevice* dev, int ordinal) {
    ENTER("cuDeviceGet");
    NEED_INIT();
    if (ordinal < 0 || ordinal >= S().devices) return call.done(CUDA_ERROR_INVALID_DEVICE);
    *dev = ordinal;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDeviceGetAttribute(int* v, CUdevice_attribute attr, CUdevice dev) {
    ENTER("cuDeviceGetAttribute");
    NEED_INIT();
    if (dev < 0 || dev >= S().devices) return call.done(CUDA_ERROR_INVALID_DEVICE);
    switch (attr) {
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
        default: *v = 0;
    }
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDeviceGetName(char* name, int len, CUdevice dev) {
    ENTER("cuDeviceGetName");
    NEED_INIT();
    if (dev < 0 || dev >= S().devices || len <= 0) return call.done(CUDA_ERROR_INVALID_VALUE);
    std::snprintf(name, len, "eagle stand-in GPU %d (fakecuda)", dev);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
    ENTER("cuDeviceTotalMem");
    NEED_INIT();
    if (dev < 0 || dev >= S().devices) return call.done(CUDA_ERROR_INVALID_DEVICE);
    *bytes = std::size_t(80) << 30;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
    ENTER("cuDevicePrimaryCtxRetain");
    NEED_INIT();
    if (dev < 0 || dev >= S().devices) return call.done(CUDA_ERROR_INVALID_DEVICE);
    *ctx = reinterpret_cast<CUcontext>(S().primary[dev]);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuDevicePrimaryCtxRelease(CUdevice dev) {
    ENTER("cuDevicePrimaryCtxRelease");
    NEED_INIT();
    return call.done(dev < 0 || dev >= S().devices ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS);
}
Context* ctx_of(CUcontext c) {
    for (Context* p : S().primary)
        if (reinterpret_cast<CUcontext>(p) == c) return p;
    return nullptr;
}
CUresult f_cuCtxSetCurrent(CUcontext c) {
    ENTER("cuCtxSetCurrent");
    NEED_INIT();
    // [API: Context Management, cuCtxSetCurrent] binds c to the thread, replacing the top of its
    // stack; NULL unbinds the current one.
    if (c && !ctx_of(c)) return call.done(CUDA_ERROR_INVALID_CONTEXT);
    if (!c) { if (!ctx_stack.empty()) ctx_stack.pop_back(); }
    else if (ctx_stack.empty()) ctx_stack.push_back(ctx_of(c));
    else ctx_stack.back() = ctx_of(c);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuCtxGetCurrent(CUcontext* c) {
    ENTER("cuCtxGetCurrent");
    NEED_INIT();
    *c = ctx_stack.empty() ? nullptr : reinterpret_cast<CUcontext>(ctx_stack.back());
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuCtxPushCurrent(CUcontext c) {
    ENTER("cuCtxPushCurrent");
    NEED_INIT();
    if (!ctx_of(c)) return call.done(CUDA_ERROR_INVALID_CONTEXT);
    ctx_stack.push_back(ctx_of(c));
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuCtxPopCurrent(CUcontext* c) {
    ENTER("cuCtxPopCurrent");
    NEED_INIT();
    if (ctx_stack.empty()) return call.done(CUDA_ERROR_INVALID_CONTEXT);
    if (c) *c = reinterpret_cast<CUcontext>(ctx_stack.back());
    ctx_stack.pop_back();
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuCtxSynchronize() {
    ENTER("cuCtxSynchronize");
    NEED_CTX();
    if (CUresult r = unsafe_call(call)) return r;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamCreate(CUstream* out, unsigned int flags) {
    ENTER("cuStreamCreate");
    NEED_CTX();
    if (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) return call.done(CUDA_ERROR_INVALID_VALUE);
    auto* s = new Stream{flags, ctx_stack.back(), nullptr, {}};
    S().streams.insert(s);
    *out = reinterpret_cast<CUstream>(s);
    call.note("flags=%u", flags);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamDestroy(CUstream h) {
    ENTER("cuStreamDestroy");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (!s || s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    // Stand-in rule: destroying a stream that is still capturing is a layer bug.
    if (s->capture) return call.done(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "the stream is capturing");
    S().streams.erase(s);
    delete s;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamSynchronize(CUstream h) {
    ENTER("cuStreamSynchronize");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    // [API: Stream Management, cuStreamBeginCapture] a capturing stream may not be synchronized:
    // the call fails and the capture is invalidated.
    if (s && s->capture) {
        s->capture->invalidated = true;
        return call.done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "synchronize on a capturing stream");
    }
    if (!s) if (CUresult r = legacy_use(call)) return r;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamQuery(CUstream h) {
    ENTER("cuStreamQuery");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    if (s && s->capture) {
        s->capture->invalidated = true;
        return call.done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "query of a capturing stream");
    }
    return call.done(CUDA_SUCCESS);  // work runs at once: always complete
}
CUresult f_cuEventCreate(CUevent* out, unsigned int) {
    ENTER("cuEventCreate");
    NEED_CTX();
    auto* e = new Event();
    S().events.insert(e);
    *out = reinterpret_cast<CUevent>(e);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuEventDestroy(CUevent h) {
    ENTER("cuEventDestroy");
    NEED_INIT();
    auto* e = reinterpret_cast<Event*>(h);
    if (!S().events.erase(e)) return call.done(CUDA_ERROR_INVALID_HANDLE);
    delete e;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuEventRecord(CUevent h, CUstream hs) {
    ENTER("cuEventRecord");
    NEED_CTX();
    call.note("event=%p stream=%p", static_cast<void*>(h), static_cast<void*>(hs));
    auto* e = reinterpret_cast<Event*>(h);
    Stream* s = stream_of(hs);
    if (!S().events.count(e) || s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    // [API: Stream Management, cuStreamBeginCapture] an event recorded in a capture marks the
    // capture's frontier on that stream; a stream that waits on it joins the capture (a fork).
    e->capture = s ? s->capture : nullptr;
    e->deps = s ? s->deps : std::vector<Node*>{};
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamWaitEvent(CUstream hs, CUevent h, unsigned int) {
    ENTER("cuStreamWaitEvent");
    NEED_CTX();
    call.note("stream=%p event=%p", static_cast<void*>(hs), static_cast<void*>(h));
    auto* e = reinterpret_cast<Event*>(h);
    Stream* s = stream_of(hs);
    if (!S().events.count(e) || s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    if (e->capture && S().captures.count(e->capture)) {
        if (!s) return call.done(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "the legacy stream waits on a captured event");
        if (s->capture && s->capture != e->capture)
            return call.done(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "two captures joined");
        if (!s->capture) {
            s->capture = e->capture;
            s->deps = e->deps;
            e->capture->streams.insert(s);
        } else {
            for (Node* d : e->deps)
                if (std::find(s->deps.begin(), s->deps.end(), d) == s->deps.end()) s->deps.push_back(d);
        }
    }
    return call.done(CUDA_SUCCESS);
}
CUresult begin_capture(Call& call, Stream* s, Graph* g, bool owns, const CUgraphNode* deps, std::size_t count,
                       CUstreamCaptureMode mode) {
    // [API: Stream Management, cuStreamBeginCapture] the legacy stream cannot capture; a stream
    // already capturing cannot begin again.
    if (!s) return call.done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "capture on the legacy stream");
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    if (s->capture) return call.done(CUDA_ERROR_ILLEGAL_STATE, "the stream is already capturing");
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return call.done(CUDA_ERROR_INVALID_VALUE, "mode");
    auto* c = new Capture{S().next_id++, g, owns, mode, std::this_thread::get_id(), s, false, {s}};
    S().captures.insert(c);
    s->capture = c;
    s->deps.clear();
    for (std::size_t k = 0; k < count; ++k) s->deps.push_back(reinterpret_cast<Node*>(deps[k]));
    call.note("id=%llu mode=%d", c->id, int(mode));
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) {
    ENTER("cuStreamBeginCapture");
    NEED_CTX();
    Stream* s = stream_of(h);
    return begin_capture(call, s, s && s != BAD_STREAM ? new_graph() : nullptr, true, nullptr, 0, mode);
}
CUresult f_cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges,
                                       size_t count, CUstreamCaptureMode mode) {
    ENTER("cuStreamBeginCaptureToGraph");
    NEED_CTX();
    auto* graph = reinterpret_cast<Graph*>(g);
    if (!S().graphs.count(graph)) return call.done(CUDA_ERROR_INVALID_VALUE, "hGraph");
    // [API: cuStreamBeginCaptureToGraph] edge data other than the default is not supported here.
    if (edges) return call.done(CUDA_ERROR_NOT_SUPPORTED, "edge data");
    if (!valid_deps(graph, deps, count)) return call.done(CUDA_ERROR_INVALID_VALUE, "dependencies");
    return begin_capture(call, stream_of(h), graph, false, deps, count, mode);
}
CUresult f_cuStreamEndCapture(CUstream h, CUgraph* out) {
    ENTER("cuStreamEndCapture");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (!s || s == BAD_STREAM || !s->capture) return call.done(CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing");
    Capture* c = s->capture;
    // [API: cuStreamEndCapture] only the stream that began the capture ends it; in a
    // non-RELAXED mode, from the thread that began it.
    if (c->origin != s) return call.done(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "not the origin stream");
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
        return call.done(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    for (Stream* x : c->streams) { x->capture = nullptr; x->deps.clear(); }
    S().captures.erase(c);
    const bool invalid = c->invalidated;
    Graph* g = c->graph;
    const bool owns = c->owns_graph;
    delete c;
    // [API: cuStreamEndCapture] an invalidated capture returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    // and no graph.
    if (invalid) {
        if (owns) destroy_graph(g);
        *out = nullptr;
        return call.done(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    *out = reinterpret_cast<CUgraph>(g);
    call.note("nodes=%zu", g->nodes.size());
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* status) {
    ENTER("cuStreamIsCapturing");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    *status = !s || !s->capture ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                  const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* count) {
    ENTER("cuStreamGetCaptureInfo");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    Capture* c = s ? s->capture : nullptr;
    if (status) *status = !c ? CU_STREAM_CAPTURE_STATUS_NONE : c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                                             : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id) *id = c ? c->id : 0;
    if (graph) *graph = c ? reinterpret_cast<CUgraph>(c->graph) : nullptr;
    if (deps) *deps = c ? reinterpret_cast<const CUgraphNode*>(s->deps.data()) : nullptr;
    if (edges) *edges = nullptr;
    if (count) *count = c ? s->deps.size() : 0;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuStreamUpdateCaptureDependencies(CUstream h, CUgraphNode* deps, const CUgraphEdgeData* edges,
                                             size_t count, unsigned int flags) {
    ENTER("cuStreamUpdateCaptureDependencies");
    NEED_CTX();
    Stream* s = stream_of(h);
    if (!s || s == BAD_STREAM || !s->capture) return call.done(CUDA_ERROR_ILLEGAL_STATE, "not capturing");
    if (edges) return call.done(CUDA_ERROR_NOT_SUPPORTED, "edge data");
    if (!valid_deps(s->capture->graph, deps, count)) return call.done(CUDA_ERROR_INVALID_VALUE, "dependencies");
    if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) s->deps.clear();
    else if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES) return call.done(CUDA_ERROR_INVALID_VALUE, "flags");
    for (std::size_t k = 0; k < count; ++k) s->deps.push_back(reinterpret_cast<Node*>(deps[k]));
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
    ENTER("cuThreadExchangeStreamCaptureMode");
    std::swap(*mode, thread_mode);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuMemAlloc(CUdeviceptr* out, size_t bytes) {
    ENTER("cuMemAlloc");
    NEED_CTX();
    if (CUresult r = unsafe_call(call)) return r;
    // [API: Memory Management, cuMemAlloc] a size of 0 is CUDA_ERROR_INVALID_VALUE.
    if (bytes == 0) return call.done(CUDA_ERROR_INVALID_VALUE, "0 bytes");
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) return call.done(CUDA_ERROR_OUT_OF_MEMORY);
    std::memset(p, 0xcd, bytes);  // not zeroed, as on a device: a layer relying on it shows
    *out = reinterpret_cast<CUdeviceptr>(p);
    S().memory[*out] = bytes;
    call.note("%zu bytes", bytes);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuMemFree(CUdeviceptr p) {
    ENTER("cuMemFree");
    NEED_CTX();
    if (CUresult r = unsafe_call(call)) return r;
    if (!S().memory.erase(p)) return call.done(CUDA_ERROR_INVALID_VALUE, "not an allocation (a double free?)");
    std::free(reinterpret_cast<void*>(p));
    return call.done(CUDA_SUCCESS);
}
CUresult copy(Call& call, void* dst, const void* src, std::size_t bytes, CUdeviceptr device_side, CUstream h, bool sync,
              bool to_device) {
    Stream* s = stream_of(h);
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    if (sync) {
        if (CUresult r = unsafe_call(call)) return r;
        if (CUresult r = legacy_use(call)) return r;
    }
    if (!in_memory(device_side, bytes)) return call.done(CUDA_ERROR_INVALID_VALUE, "outside any allocation");
    if (s && s->capture) {  // recorded, run at each launch of the graph
        Node* n = capture_node(s, Node::Memcpy);
        n->dst = reinterpret_cast<CUdeviceptr>(dst);
        n->src = reinterpret_cast<CUdeviceptr>(src);
        n->bytes = bytes;
        return call.done(CUDA_SUCCESS, to_device ? "captured (HtoD)" : "captured (DtoH)");
    }
    if (!s) if (CUresult r = legacy_use(call)) return r;
    std::memcpy(dst, src, bytes);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
    ENTER("cuMemcpyHtoD");
    NEED_CTX();
    return copy(call, reinterpret_cast<void*>(dst), src, bytes, dst, nullptr, true, true);
}
CUresult f_cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
    ENTER("cuMemcpyDtoH");
    NEED_CTX();
    return copy(call, dst, reinterpret_cast<const void*>(src), bytes, src, nullptr, true, false);
}
CUresult f_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream h) {
    ENTER("cuMemcpyHtoDAsync");
    NEED_CTX();
    return copy(call, reinterpret_cast<void*>(dst), src, bytes, dst, h, false, true);
}
CUresult f_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream h) {
    ENTER("cuMemcpyDtoHAsync");
    NEED_CTX();
    return copy(call, dst, reinterpret_cast<const void*>(src), bytes, src, h, false, false);
}
CUresult f_cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
    ENTER("cuMemsetD8");
    NEED_CTX();
    if (CUresult r = legacy_use(call)) return r;
    if (!in_memory(dst, count)) return call.done(CUDA_ERROR_INVALID_VALUE, "outside any allocation");
    std::memset(reinterpret_cast<void*>(dst), value, count);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuMemHostAlloc(void** out, size_t bytes, unsigned int) {
    ENTER("cuMemHostAlloc");
    NEED_CTX();
    if (CUresult r = unsafe_call(call)) return r;
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) return call.done(CUDA_ERROR_OUT_OF_MEMORY);
    *out = p;
    S().host_mapped.insert(p);
    S().memory[reinterpret_cast<CUdeviceptr>(p)] = bytes;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuMemFreeHost(void* p) {
    ENTER("cuMemFreeHost");
    NEED_CTX();
    if (!S().host_mapped.erase(p)) return call.done(CUDA_ERROR_INVALID_VALUE);
    S().memory.erase(reinterpret_cast<CUdeviceptr>(p));
    std::free(p);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuMemHostGetDevicePointer(CUdeviceptr* out, void* p, unsigned int flags) {
    ENTER("cuMemHostGetDevicePointer");
    NEED_CTX();
    // [API: Memory Management, cuMemHostGetDevicePointer] Flags must be 0.
    if (flags || !S().host_mapped.count(p)) return call.done(CUDA_ERROR_INVALID_VALUE);
    *out = reinterpret_cast<CUdeviceptr>(p);
    return call.done(CUDA_SUCCESS);
}
CUresult load_module(Call& call, CUmodule* out, const void* image) {
    if (CUresult r = unsafe_call(call)) return r;
    if (!image) return call.done(CUDA_ERROR_INVALID_VALUE);
    auto* m = new Module{ctx_stack.back(), nullptr, {}};
    const char* text = static_cast<const char*>(image);
    const std::string prefix = "EAGLE-HOST-MODULE\n";
    std::string why;
    if (std::strncmp(text, prefix.c_str(), prefix.size()) == 0) {  // a host build named directly
        m->lib = open_host(text + prefix.size(), why);
        if (!m->lib) { delete m; return call.done(CUDA_ERROR_INVALID_IMAGE, why); }
        read_kernels(m);
    } else if (static_cast<unsigned char>(text[0]) == 0x7f) {
        delete m;
        return call.done(CUDA_ERROR_NOT_SUPPORTED, "a cubin (the stand-in runs PTX host builds only)");
    } else {
        const std::string ptx = text;
        // [API: Module Management, cuModuleLoadData] PTX is compiled by the driver's JIT; a
        // string with no .version/.target is not PTX.
        if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) {
            delete m;
            return call.done(CUDA_ERROR_INVALID_PTX, "no .version/.target");
        }
        const std::string digest = eagle::cuda::detail::sha256(ptx.data(), ptx.size());
        m->lib = find_host_build(digest);
        if (m->lib) {
            read_kernels(m);
        } else {
            read_ptx_entries(m, ptx);
            attach_builtins(m);
        }
        call.note("ptx sha256=%.12s host build=%s", digest.c_str(), m->lib ? "yes" : "no");
    }
    S().modules.insert(m);
    *out = reinterpret_cast<CUmodule>(m);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuModuleLoadData(CUmodule* out, const void* image) {
    ENTER("cuModuleLoadData");
    NEED_CTX();
    return load_module(call, out, image);
}
CUresult f_cuModuleLoadDataEx(CUmodule* out, const void* image, unsigned int n, CUjit_option* options, void** values) {
    ENTER("cuModuleLoadDataEx");
    NEED_CTX();
    if (n && (!options || !values)) return call.done(CUDA_ERROR_INVALID_VALUE, "options");
    return load_module(call, out, image);
}
CUresult f_cuModuleUnload(CUmodule h) {
    ENTER("cuModuleUnload");
    NEED_INIT();
    auto* m = reinterpret_cast<Module*>(h);
    if (!S().modules.erase(m)) return call.done(CUDA_ERROR_INVALID_HANDLE);
    for (auto& [name, f] : m->functions) { (void)name; f->module = nullptr; }  // leaked on purpose: nodes may point at them
    delete m;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuModuleGetFunction(CUfunction* out, CUmodule h, const char* name) {
    ENTER("cuModuleGetFunction");
    NEED_CTX();
    auto* m = reinterpret_cast<Module*>(h);
    if (!S().modules.count(m)) return call.done(CUDA_ERROR_INVALID_HANDLE);
    call.note("%s", name);
    auto it = m->functions.find(name);
    if (it == m->functions.end()) return call.done(CUDA_ERROR_NOT_FOUND);
    *out = reinterpret_cast<CUfunction>(it->second);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuFuncGetAttribute(int* v, CUfunction_attribute attr, CUfunction) {
    ENTER("cuFuncGetAttribute");
    NEED_CTX();
    *v = attr == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : attr == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 0;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int block, size_t) {
    ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    NEED_CTX();
    *blocks = block > 0 ? 2048 / block : 0;
    return call.done(CUDA_SUCCESS);
}
bool valid_function(Function* f) {
    for (Module* m : S().modules)
        for (auto& [name, g] : m->functions) { (void)name; if (g == f) return true; }
    return false;
}
CUresult f_cuLaunchKernel(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream hs, void** params, void** extra) {
    ENTER("cuLaunchKernel");
    NEED_CTX();
    auto* f = reinterpret_cast<Function*>(h);
    if (!valid_function(f)) return call.done(CUDA_ERROR_INVALID_HANDLE, "not a loaded function");
    call.note("%s grid=%u block=%u", f->name.c_str(), gx * gy * gz, bx * by * bz);
    // [API: Execution Control, cuLaunchKernel] a zero dimension, a block over the device's limit
    // or both kernelParams and extra given is CUDA_ERROR_INVALID_VALUE.
    if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || (params && extra))
        return call.done(CUDA_ERROR_INVALID_VALUE, "launch shape");
    (void)shared;
    if (CUresult r = check_params(call, f, params)) return r;
    Stream* s = stream_of(hs);
    if (s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_HANDLE);
    ++S().counters["launches"];
    if (s && s->capture) {
        Node* n = capture_node(s, Node::Kernel);
        n->fn = f;
        n->threads = 1ULL * gx * gy * gz * bx * by * bz;
        n->params = copy_params(f, params);
        return call.done(CUDA_SUCCESS, "captured");
    }
    if (!s) if (CUresult r = legacy_use(call)) return r;
    auto copied = copy_params(f, params);
    if (CUresult r = run_kernel(call, f, copied, 1ULL * gx * gy * gz * bx * by * bz)) return r;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphCreate(CUgraph* out, unsigned int flags) {
    ENTER("cuGraphCreate");
    NEED_INIT();
    if (flags) return call.done(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    *out = reinterpret_cast<CUgraph>(new_graph());
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphDestroy(CUgraph h) {
    ENTER("cuGraphDestroy");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g) || g->parent) return call.done(CUDA_ERROR_INVALID_VALUE, "not a graph this process owns");
    destroy_graph(g);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphAddKernelNode(CUgraphNode* out, CUgraph h, const CUgraphNode* deps, size_t count,
                                const CUDA_KERNEL_NODE_PARAMS_v2* p) {
    ENTER("cuGraphAddKernelNode");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g) || !p) return call.done(CUDA_ERROR_INVALID_VALUE);
    if (!valid_deps(g, deps, count)) return call.done(CUDA_ERROR_INVALID_VALUE, "dependencies");
    auto* f = reinterpret_cast<Function*>(p->func);
    if (!valid_function(f)) return call.done(CUDA_ERROR_INVALID_VALUE, "func");
    call.note("%s grid=%u block=%u", f->name.c_str(), p->gridDimX * p->gridDimY * p->gridDimZ,
              p->blockDimX * p->blockDimY * p->blockDimZ);
    if (CUresult r = check_params(call, f, p->kernelParams)) return r;
    Node* n = add_node(g, Node::Kernel, deps, count);
    n->fn = f;
    n->threads = 1ULL * p->gridDimX * p->gridDimY * p->gridDimZ * p->blockDimX * p->blockDimY * p->blockDimZ;
    // [API: Graph Management, cuGraphAddKernelNode] the parameter values are copied when the
    // node is made; the caller's storage may change afterwards.
    n->params = copy_params(f, p->kernelParams);
    *out = reinterpret_cast<CUgraphNode>(n);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph h, const CUgraphNode* deps, size_t count, CUgraph child) {
    ENTER("cuGraphAddChildGraphNode");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    auto* c = reinterpret_cast<Graph*>(child);
    if (!S().graphs.count(g) || !S().graphs.count(c) || !valid_deps(g, deps, count))
        return call.done(CUDA_ERROR_INVALID_VALUE);
    Node* n = add_node(g, Node::Child, deps, count);
    // [API: Graph Management, cuGraphAddChildGraphNode] the child graph is cloned.
    n->graph = clone(c, g);
    n->graph->is_child = true;
    *out = reinterpret_cast<CUgraphNode>(n);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphConditionalHandleCreate(CUgraphConditionalHandle* out, CUgraph h, CUcontext ctx, unsigned def,
                                          unsigned flags) {
    ENTER("cuGraphConditionalHandleCreate");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g) || !ctx_of(ctx)) return call.done(CUDA_ERROR_INVALID_VALUE);
    // [API: Graph Management, cuGraphConditionalHandleCreate] flags: CU_GRAPH_COND_ASSIGN_DEFAULT or 0.
    if (flags & ~unsigned(CU_GRAPH_COND_ASSIGN_DEFAULT)) return call.done(CUDA_ERROR_INVALID_VALUE, "flags");
    const unsigned long long id = S().next_id++;
    S().conditions[id] = Condition{g, def, flags, def};
    *out = id;
    call.note("handle=%llu default=%u flags=%u", id, def, flags);
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphAddNode(CUgraphNode* out, CUgraph h, const CUgraphNode* deps, const CUgraphEdgeData* edges,
                          size_t count, CUgraphNodeParams* p) {
    ENTER("cuGraphAddNode");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g) || !p || !valid_deps(g, deps, count)) return call.done(CUDA_ERROR_INVALID_VALUE);
    if (edges) return call.done(CUDA_ERROR_NOT_SUPPORTED, "edge data");
    // Stand-in scope: the conditional WHILE node only (what eagle adds with this call).
    if (p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL || p->conditional.type != CU_GRAPH_COND_TYPE_WHILE)
        return call.done(CUDA_ERROR_NOT_SUPPORTED, "only WHILE conditional nodes");
    // [API: CUDA_CONDITIONAL_NODE_PARAMS] size must be 1 for WHILE; the handle must exist.
    if (p->conditional.size != 1) return call.done(CUDA_ERROR_INVALID_VALUE, "size must be 1 for WHILE");
    if (!S().conditions.count(p->conditional.handle)) return call.done(CUDA_ERROR_INVALID_VALUE, "unknown handle");
    if (!ctx_of(p->conditional.ctx)) return call.done(CUDA_ERROR_INVALID_CONTEXT, "conditional.ctx");
    Node* n = add_node(g, Node::While, deps, count);
    n->handle = p->conditional.handle;
    n->graph = new_graph(g);
    n->body_out[0] = reinterpret_cast<CUgraph>(n->graph);  // CUDA-owned, valid for the node's lifetime
    p->conditional.phGraph_out = n->body_out;
    *out = reinterpret_cast<CUgraphNode>(n);
    call.note("WHILE handle=%llu", static_cast<unsigned long long>(n->handle));
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphGetNodes(CUgraph h, CUgraphNode* nodes, size_t* count) {
    ENTER("cuGraphGetNodes");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g) || !count) return call.done(CUDA_ERROR_INVALID_VALUE);
    if (nodes)
        for (std::size_t k = 0; k < *count && k < g->nodes.size(); ++k) nodes[k] = reinterpret_cast<CUgraphNode>(g->nodes[k]);
    *count = g->nodes.size();
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph h, unsigned long long flags) {
    ENTER("cuGraphInstantiateWithFlags");
    NEED_CTX();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g)) return call.done(CUDA_ERROR_INVALID_VALUE);
    (void)flags;
    if (CUresult r = check_graph(call, g, false)) return r;
    // [API: Graph Management, cuGraphInstantiate] the executable is a snapshot: later changes
    // to the graph do not reach it.
    auto* e = new Exec{clone(g, nullptr), g};
    S().execs.insert(e);
    *out = reinterpret_cast<CUgraphExec>(e);
    call.note("nodes=%zu", g->nodes.size());
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphUpload(CUgraphExec h, CUstream hs) {
    ENTER("cuGraphUpload");
    NEED_CTX();
    if (!S().execs.count(reinterpret_cast<Exec*>(h)) || stream_of(hs) == BAD_STREAM)
        return call.done(CUDA_ERROR_INVALID_VALUE);
    return call.done(CUDA_SUCCESS);
}
void apply_defaults(Graph* source) {
    for (auto& [id, c] : S().conditions) {
        (void)id;
        if (c.owner == source && (c.flags & CU_GRAPH_COND_ASSIGN_DEFAULT)) c.value = c.def;
    }
}
CUresult f_cuGraphLaunch(CUgraphExec h, CUstream hs) {
    ENTER("cuGraphLaunch");
    NEED_CTX();
    call.note("stream=%p", static_cast<void*>(hs));
    auto* e = reinterpret_cast<Exec*>(h);
    Stream* s = stream_of(hs);
    if (!S().execs.count(e) || s == BAD_STREAM) return call.done(CUDA_ERROR_INVALID_VALUE);
    ++S().counters["graph launches"];
    if (s && s->capture) return call.done(CUDA_ERROR_NOT_SUPPORTED, "a graph launch inside a capture (stand-in scope)");
    if (!s) if (CUresult r = legacy_use(call)) return r;
    // [API: cuGraphConditionalHandleCreate] with CU_GRAPH_COND_ASSIGN_DEFAULT the default value
    // is applied at the beginning of each execution of the graph.
    apply_defaults(e->source);
    if (CUresult r = run_graph(call, e->graph)) return r;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphExecDestroy(CUgraphExec h) {
    ENTER("cuGraphExecDestroy");
    NEED_INIT();
    auto* e = reinterpret_cast<Exec*>(h);
    if (!S().execs.erase(e)) return call.done(CUDA_ERROR_INVALID_VALUE);
    destroy_graph(e->graph);
    delete e;
    return call.done(CUDA_SUCCESS);
}
CUresult f_cuGraphDebugDotPrint(CUgraph h, const char* path, unsigned int) {
    ENTER("cuGraphDebugDotPrint");
    NEED_INIT();
    auto* g = reinterpret_cast<Graph*>(h);
    if (!S().graphs.count(g)) return call.done(CUDA_ERROR_INVALID_VALUE);
    FILE* f = std::fopen(path, "w");
    if (!f) return call.done(CUDA_ERROR_INVALID_VALUE, "cannot write the file");
    std::fprintf(f, "digraph fakecuda {\n");
    for (Node* n : g->nodes) {
        std::fprintf(f, "  n%p [label=\"%s\"];\n", static_cast<void*>(n), n->fn ? n->fn->name.c_str() : "node");
        for (Node* d : n->deps) std::fprintf(f, "  n%p -> n%p;\n", static_cast<void*>(d), static_cast<void*>(n));
    }
    std::fprintf(f, "}\n");
    std::fclose(f);
    return call.done(CUDA_SUCCESS);
}

// --------------------------------------------------------------- cuGetProcAddress
struct Entry { const char* name; int version; void* fn; };

// Each implementation is cast to the PFN typedef of the version it implements, so a signature
// that drifts from the header's does not compile.
#define ENTRY(name, version) Entry{#name, version, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&f_##name))}
const Entry kEntries[] = {
    ENTRY(cuGetErrorName, 6000), ENTRY(cuGetErrorString, 6000), ENTRY(cuInit, 2000),
    ENTRY(cuDriverGetVersion, 2020), ENTRY(cuDeviceGetCount, 2000), ENTRY(cuDeviceGet, 2000),
    ENTRY(cuDeviceGetAttribute, 2000), ENTRY(cuDeviceGetName, 2000), ENTRY(cuDeviceTotalMem, 3020),
    ENTRY(cuDevicePrimaryCtxRetain, 7000), ENTRY(cuDevicePrimaryCtxRelease, 11000),
    ENTRY(cuCtxSetCurrent, 4000), ENTRY(cuCtxGetCurrent, 4000), ENTRY(cuCtxPushCurrent, 4000),
    ENTRY(cuCtxPopCurrent, 4000), ENTRY(cuCtxSynchronize, 2000), ENTRY(cuStreamCreate, 2000),
    ENTRY(cuStreamDestroy, 4000), ENTRY(cuStreamSynchronize, 2000), ENTRY(cuStreamQuery, 2000),
    ENTRY(cuStreamWaitEvent, 3020), ENTRY(cuStreamBeginCapture, 10010),
    ENTRY(cuStreamBeginCaptureToGraph, 12030), ENTRY(cuStreamEndCapture, 10000),
    ENTRY(cuStreamIsCapturing, 10000), ENTRY(cuStreamGetCaptureInfo, 12030),
    ENTRY(cuStreamUpdateCaptureDependencies, 12030), ENTRY(cuThreadExchangeStreamCaptureMode, 10010),
    ENTRY(cuEventCreate, 2000), ENTRY(cuEventRecord, 2000), ENTRY(cuEventDestroy, 4000),
    ENTRY(cuMemAlloc, 3020), ENTRY(cuMemFree, 3020), ENTRY(cuMemcpyHtoD, 3020), ENTRY(cuMemcpyDtoH, 3020),
    ENTRY(cuMemcpyHtoDAsync, 3020), ENTRY(cuMemcpyDtoHAsync, 3020), ENTRY(cuMemsetD8, 3020),
    ENTRY(cuMemHostGetDevicePointer, 3020), ENTRY(cuMemHostAlloc, 2020), ENTRY(cuMemFreeHost, 2000),
    ENTRY(cuModuleLoadData, 2000), ENTRY(cuModuleLoadDataEx, 2010), ENTRY(cuModuleUnload, 2000),
    ENTRY(cuModuleGetFunction, 2000), ENTRY(cuFuncGetAttribute, 2020),
    ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050), ENTRY(cuLaunchKernel, 4000),
    ENTRY(cuGraphCreate, 10000), ENTRY(cuGraphDestroy, 10000), ENTRY(cuGraphAddKernelNode, 12000),
    ENTRY(cuGraphAddChildGraphNode, 10000), ENTRY(cuGraphAddNode, 12030),
    ENTRY(cuGraphConditionalHandleCreate, 12030), ENTRY(cuGraphGetNodes, 10000),
    ENTRY(cuGraphInstantiateWithFlags, 11040), ENTRY(cuGraphUpload, 11010), ENTRY(cuGraphLaunch, 10000),
    ENTRY(cuGraphExecDestroy, 10000), ENTRY(cuGraphDebugDotPrint, 11030),
};

}  // namespace

// [API: Driver Entry Point Access, cuGetProcAddress] the symbol at the requested CUDA version.
// Stand-in rule (stricter than the driver, which returns the newest version not above the
// request): a version other than the one implemented here is refused with
// CUDA_ERROR_INVALID_VALUE and CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, so a layer pinning
// the wrong ABI fails loudly; an unknown name, or one newer than the configured driver, is
// success with a null pointer and CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, as on the driver.
EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult* status) {
    Call call("cuGetProcAddress");
    call.note("%s@%d", symbol ? symbol : "(null)", version);
    if (!symbol || !pfn) return call.done(CUDA_ERROR_INVALID_VALUE);
    (void)flags;
    *pfn = nullptr;
    for (const Entry& e : kEntries) {
        if (std::strcmp(e.name, symbol) != 0) continue;
        if (e.version > S().version) break;
        if (e.version != version) {
            if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            ++S().counters["refused versions"];
            return call.done(CUDA_ERROR_INVALID_VALUE, "implemented at " + std::to_string(e.version));
        }
        *pfn = e.fn;
        if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return call.done(CUDA_SUCCESS);
    }
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return call.done(CUDA_SUCCESS, "not found");
}

EXPORT CUresult cuInit(unsigned int flags) { return f_cuInit(flags); }
EXPORT CUresult cuDriverGetVersion(int* v) { return f_cuDriverGetVersion(v); }

// ------------------------------------------------------------------ control functions
// The call log, one line per call ("cuX(detail) -> RESULT: why"), since the last reset.
EXPORT const char* fakecuda_log() {
    std::lock_guard<std::recursive_mutex> hold(S().lock);
    S().log_text.clear();
    for (const auto& l : S().log) S().log_text += l + "\n";
    return S().log_text.c_str();
}
// A counter: an entry point's call count by its name, or "launches", "graph launches",
// "kernels run", "while iterations", "refused versions", "failed releases" (a destroy, free or
// unload that failed: a double release, say); and what is alive now: "allocations" (device
// blocks), "host blocks", "streams", "events", "modules", "graphs" (every graph, a WHILE body
// and an executable's copy too), "execs", "captures" (open ones).
EXPORT long long fakecuda_counter(const char* name) {
    std::lock_guard<std::recursive_mutex> hold(S().lock);
    State& s = S();
    const std::map<std::string, std::size_t> live = {
        {"allocations", s.memory.size() - s.host_mapped.size()}, {"host blocks", s.host_mapped.size()},
        {"streams", s.streams.size()}, {"events", s.events.size()}, {"modules", s.modules.size()},
        {"graphs", s.graphs.size()}, {"execs", s.execs.size()}, {"captures", s.captures.size()}};
    if (auto it = live.find(name); it != live.end()) return static_cast<long long>(it->second);
    auto it = S().counters.find(name);
    return it == S().counters.end() ? 0 : it->second;
}
// Forget the log and the counters (the objects stay).
EXPORT void fakecuda_reset() {
    std::lock_guard<std::recursive_mutex> hold(S().lock);
    S().log.clear();
    S().counters.clear();
    S().fail_name.clear();
}
// Where host builds are looked for from now on (FAKECUDA_HOST_MODULES' form), instead of the
// variable read at first use: a process that runs many stand-in sessions (the tests' native
// door) points each at its folder without writing the environment, which would race the
// getenv of any other thread (glibc's environment is not thread-safe).
EXPORT void fakecuda_set_host_modules(const char* list) {
    std::lock_guard<std::recursive_mutex> hold(S().lock);
    S().host_modules = list ? list : "";
}
// The `nth` next call of `name` fails with `code` (fault injection).
EXPORT void fakecuda_fail(const char* name, long long nth, int code) {
    std::lock_guard<std::recursive_mutex> hold(S().lock);
    S().fail_name = name;
    S().fail_nth = nth;
    S().fail_code = static_cast<CUresult>(code);
}
