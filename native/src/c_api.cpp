// The C facade: each body is one try/catch turning the C++ error into a kind and a record.
#include "eagle/cuda/c_api.h"

#include <cstring>

#include "eagle/cuda/eagle_cuda.hpp"

using namespace eagle::cuda;

namespace {

// Every facade object derives from Object so eagle_release can delete any of them.
struct Object {
    virtual ~Object() = default;
};

struct ErrorRecord {
    eagle_error view{};
    std::string name, call, message;
};
thread_local ErrorRecord last;

int fail(int kind, const std::string& message, int cu = 0, std::string name = "", std::string call = "") {
    last.name = std::move(name);
    last.call = std::move(call);
    last.message = message;
    last.view = {kind, cu, last.name.c_str(), last.call.c_str(), last.message.c_str()};
    return kind;
}

template <typename F>
int guard(F&& body) {
    try {
        body();
        return EAGLE_OK;
    } catch (const CudaError& e) {
        return fail(EAGLE_CUDA_ERROR, e.what(), e.code(), e.name(), e.call());
    } catch (const Unavailable& e) {
        return fail(EAGLE_UNAVAILABLE, e.what());
    } catch (const CaptureError& e) {
        return fail(EAGLE_CAPTURE_ERROR, e.what());
    } catch (const ArtifactError& e) {
        return fail(EAGLE_ARTIFACT_ERROR, e.what());
    } catch (const ArgumentError& e) {
        return fail(EAGLE_ARGUMENT_ERROR, e.what());
    } catch (const std::exception& e) {
        return fail(EAGLE_OTHER_ERROR, e.what());
    } catch (...) {
        return fail(EAGLE_OTHER_ERROR, "unknown C++ exception");
    }
}

}  // namespace

struct eagle_stream : Object { Stream s; explicit eagle_stream(Stream x) : s(std::move(x)) {} };
struct eagle_event : Object { Event e; explicit eagle_event(Event x) : e(std::move(x)) {} };
struct eagle_capture : Object { std::unique_ptr<StreamCapturer> c; };
struct eagle_graph : Object { Graph g; explicit eagle_graph(Graph x) : g(std::move(x)) {} };
struct eagle_exec : Object { GraphExec e; explicit eagle_exec(GraphExec x) : e(std::move(x)) {} };
struct eagle_module : Object { Module m; explicit eagle_module(Module x) : m(std::move(x)) {} };
struct eagle_launcher : Object { Launcher l; explicit eagle_launcher(Launcher x) : l(std::move(x)) {} };
struct eagle_buffer : Object { DeviceBuffer b; };
struct eagle_loaded : Object { std::unique_ptr<LoadedVector> v; };
struct eagle_loop : Object { std::unique_ptr<RunLoop> l; };
struct eagle_hostmapped : Object { std::unique_ptr<HostMapped> h; };

int eagle_cuda_abi_version(void) { return kAbiVersion; }
const char* eagle_cuda_version(void) { return kVersion; }
const eagle_error* eagle_last_error(void) { return &last.view; }

int eagle_unavailable_reason(char* out, size_t size) {
    return guard([&] {
        const std::string r = unavailable_reason();
        if (size) { std::strncpy(out, r.c_str(), size - 1); out[size - 1] = 0; }
    });
}
int eagle_driver_version(int* out) { return guard([&] { *out = driver_version(); }); }
int eagle_device_count(int* out) { return guard([&] { *out = Device::count(); }); }
int eagle_device_info(int ordinal, char* name, size_t size, int* sm, int* multiprocessors, int* while_nodes) {
    return guard([&] {
        DeviceInfo i = Device::get(ordinal).info();
        if (size) { std::strncpy(name, i.name.c_str(), size - 1); name[size - 1] = 0; }
        *sm = std::atoi(i.arch.c_str() + 3);
        *multiprocessors = i.multiprocessors;
        *while_nodes = i.supports_while_nodes;
    });
}
int eagle_device_synchronize(int ordinal) { return guard([&] { Device::get(ordinal).synchronize(); }); }
int eagle_stream_create(int ordinal, int non_blocking, eagle_stream** out) {
    return guard([&] { *out = new eagle_stream(Stream::create(ordinal, non_blocking != 0)); });
}
int eagle_stream_wrap(uint64_t handle, int ordinal, eagle_stream** out) {
    return guard([&] { *out = new eagle_stream(Stream::wrap(handle, ordinal)); });
}
int eagle_stream_current(int ordinal, eagle_stream** out) {
    return guard([&] { *out = new eagle_stream(Stream::current(ordinal)); });
}
uint64_t eagle_stream_handle(eagle_stream* stream) { return stream->s.handle(); }
int eagle_stream_synchronize(eagle_stream* stream) { return guard([&] { stream->s.synchronize(); }); }
int eagle_stream_push_current(eagle_stream* stream) { return guard([&] { push_current_stream(stream->s); }); }
int eagle_stream_pop_current(int ordinal) { return guard([&] { pop_current_stream(ordinal); }); }
int eagle_stream_wait(eagle_stream* stream, eagle_event* event) { return guard([&] { stream->s.wait(event->e); }); }
int eagle_stream_capture_status(eagle_stream* stream, int* out) {
    return guard([&] { *out = static_cast<int>(stream->s.capture_status()); });
}
int eagle_event_create(int ordinal, eagle_event** out) {
    return guard([&] { *out = new eagle_event(Event::create(ordinal)); });
}
int eagle_event_record(eagle_event* event, eagle_stream* stream) {
    return guard([&] { event->e.record(stream->s); });
}
int eagle_capture_begin(eagle_stream* stream, int mode, eagle_capture** out) {
    return guard([&] {
        auto c = std::make_unique<eagle_capture>();
        c->c = std::make_unique<StreamCapturer>(stream->s, static_cast<CaptureMode>(mode));
        *out = c.release();
    });
}
int eagle_capture_status(eagle_capture* capture, int* status, size_t* nodes) {
    return guard([&] {
        *status = static_cast<int>(capture->c->status());
        *nodes = *status == 1 ? capture->c->node_count() : 0;
    });
}
int eagle_capture_end(eagle_capture* capture, eagle_graph** out) {
    return guard([&] { *out = new eagle_graph(capture->c->end()); });
}
int eagle_graph_node_count(eagle_graph* graph, size_t* out) { return guard([&] { *out = graph->g.node_count(); }); }
int eagle_graph_instantiate(eagle_graph* graph, eagle_exec** out) {
    return guard([&] { *out = new eagle_exec(graph->g.instantiate()); });
}
int eagle_exec_upload(eagle_exec* exec, eagle_stream* stream) { return guard([&] { exec->e.upload(stream->s); }); }
int eagle_exec_launch(eagle_exec* exec, eagle_stream* stream, uint64_t times) {
    return guard([&] { exec->e.launch(stream->s, times); });
}
int eagle_repeat_while(int ordinal, eagle_graph* body, uint64_t flag, const char* dtype, uint64_t counter,
                       int64_t limit, eagle_exec** out) {
    return guard([&] { *out = new eagle_exec(repeat_while(Device::get(ordinal), body->g, flag, dtype, counter, limit)); });
}
int eagle_module_load(int ordinal, const void* image, size_t size, eagle_module** out) {
    return guard([&] { *out = new eagle_module(Module::load(Device::get(ordinal), image, size)); });
}
namespace {
std::vector<Value> values_of(const eagle_value* values, size_t count) {
    std::vector<Value> v;
    for (size_t k = 0; k < count; ++k)
        v.push_back(values[k].is_float ? Value(values[k].f64) : Value(static_cast<long long>(values[k].i64)));
    return v;
}
}  // namespace

int eagle_module_max_blocks(eagle_module* module, const char* name, unsigned block, int* out) {
    return guard([&] { *out = module->m.function(name).max_blocks_per_sm(block); });
}
int eagle_loop_create(eagle_module* module, const char* step, const char* decide, int64_t n, unsigned block,
                      int64_t steps_per_launch, int64_t grow_until, int64_t full, int64_t spread, eagle_loop** out) {
    return guard([&] {
        RunOptions options;
        options.steps_per_launch = steps_per_launch;
        options.grow_until = grow_until;
        options.full = full;
        options.spread = spread;
        auto l = std::make_unique<eagle_loop>();
        l->l = std::make_unique<RunLoop>(module->m.function(step), module->m.function(decide), n, block, options);
        l->l->set_start(module->m.function("eagle_start"));
        *out = l.release();
    });
}
uint64_t eagle_loop_control(eagle_loop* loop) { return loop->l->control(); }
int eagle_loop_set_args(eagle_loop* loop, const int* types, const eagle_value* values, size_t count) {
    return guard([&] {
        std::vector<ArgType> t;
        for (size_t k = 0; k < count; ++k) t.push_back(static_cast<ArgType>(types[k]));
        loop->l->set_step_args(KernelArgs(t, values_of(values, count)));
    });
}
int eagle_loop_build(eagle_loop* loop) { return guard([&] { loop->l->build(); }); }
int eagle_loop_run(eagle_loop* loop, int64_t steps, int64_t max_steps, int host, eagle_stream* stream,
                   int64_t* launches, int64_t* taken, int64_t* live, int64_t* steps_per_launch) {
    return guard([&] {
        const Stream* s = stream ? &stream->s : nullptr;
        RunResult r = host ? loop->l->run_host_from(steps, max_steps, s) : loop->l->run_from(steps, max_steps, s);
        *launches = r.launches;
        *taken = r.steps;
        *live = r.live;
        *steps_per_launch = r.steps_per_launch;
    });
}
int eagle_loop_prepare_for_capture(eagle_loop* loop, int64_t steps, int64_t max_steps) {
    return guard([&] { loop->l->prepare_for_capture(steps, max_steps); });
}
int eagle_loop_append_to(eagle_loop* loop, eagle_stream* stream) {
    return guard([&] { loop->l->append_to(stream->s); });
}
int eagle_loop_read_counters(eagle_loop* loop, int64_t* launches, int64_t* steps, int64_t* live) {
    return guard([&] {
        RunResult r = loop->l->read_counters();
        *launches = r.launches;
        *steps = r.steps;
        *live = r.live;
    });
}
int eagle_loop_set_progress(eagle_loop* loop, uint64_t device_ptr) {
    return guard([&] { loop->l->set_progress(device_ptr); });
}
int eagle_hostmapped_alloc(int ordinal, size_t bytes, eagle_hostmapped** out) {
    return guard([&] {
        auto m = std::make_unique<eagle_hostmapped>();
        m->h = std::make_unique<HostMapped>(Device::get(ordinal), bytes);
        *out = m.release();
    });
}
void* eagle_hostmapped_host(eagle_hostmapped* memory) { return memory->h->host(); }
uint64_t eagle_hostmapped_device(eagle_hostmapped* memory) { return memory->h->device_ptr(); }
int eagle_launcher_create(eagle_module* module, const char* name, const int* types, size_t count, unsigned block,
                          eagle_launcher** out) {
    return guard([&] {
        std::vector<ArgType> t;
        for (size_t k = 0; k < count; ++k) t.push_back(static_cast<ArgType>(types[k]));
        *out = new eagle_launcher(Launcher(module->m.function(name), t, block));
    });
}
int eagle_launcher_launch(eagle_launcher* launcher, unsigned grid, const eagle_value* values, size_t count,
                          eagle_stream* stream) {
    return guard([&] {
        std::vector<Value> v;
        for (size_t k = 0; k < count; ++k)
            v.push_back(values[k].is_float ? Value(values[k].f64) : Value(static_cast<long long>(values[k].i64)));
        launcher->l.launch(grid, v, stream ? &stream->s : nullptr);
    });
}
int eagle_buffer_alloc(int ordinal, size_t bytes, eagle_buffer** out) {
    return guard([&] {
        auto b = std::make_unique<eagle_buffer>();
        b->b = DeviceBuffer(Device::get(ordinal), bytes);
        *out = b.release();
    });
}
uint64_t eagle_buffer_ptr(eagle_buffer* buffer) { return buffer->b.ptr(); }
int eagle_buffer_upload(eagle_buffer* buffer, const void* host, size_t bytes) {
    return guard([&] { buffer->b.upload(host, bytes); });
}
int eagle_buffer_download(eagle_buffer* buffer, void* host, size_t bytes) {
    return guard([&] { buffer->b.download(host, bytes); });
}
int eagle_memory_zero(int ordinal, uint64_t ptr, size_t bytes) {
    return guard([&] { zero_device_memory(Device::get(ordinal), ptr, bytes); });
}
int eagle_memory_to_host(int ordinal, void* host, uint64_t ptr, size_t bytes) {
    return guard([&] { copy_to_host(Device::get(ordinal), host, ptr, bytes); });
}
int eagle_artifact_check(const char* path) { return guard([&] { Artifact::read(path); }); }
int eagle_loaded_open(const char* path, int ordinal, eagle_loaded** out) {
    return guard([&] {
        auto l = std::make_unique<eagle_loaded>();
        l->v = std::make_unique<LoadedVector>(path, Device::get(ordinal));
        *out = l.release();
    });
}
uint64_t eagle_loaded_control(eagle_loaded* loaded) { return loaded->v->control(); }
int eagle_loaded_launch_values(eagle_loaded* loaded, unsigned grid, const eagle_value* values, size_t count,
                               eagle_stream* stream) {
    return guard([&] {
        std::vector<Value> v;
        for (size_t k = 0; k < count; ++k)
            v.push_back(values[k].is_float ? Value(values[k].f64) : Value(static_cast<long long>(values[k].i64)));
        loaded->v->launch_values(grid, v, stream ? &stream->s : nullptr);
    });
}
int eagle_loaded_run(eagle_loaded* loaded, const char* const* names, const uint64_t* pointers, const int64_t* shapes,
                     const int* ndims, size_t arrays, const char* const* param_names, const double* params,
                     size_t nparams, int64_t max_steps, int64_t steps_per_launch, int64_t* launches, int64_t* steps,
                     int64_t* live) {
    return guard([&] {
        Bindings b;
        const int64_t* shape = shapes;
        for (size_t k = 0; k < arrays; ++k) {
            const ParamInfo* p = loaded->v->artifact().param(names[k]);
            ArrayView view{pointers[k], p ? p->dtype : "", std::vector<int64_t>(shape, shape + ndims[k])};
            shape += ndims[k];
            b[names[k]] = Binding(view);
        }
        for (size_t k = 0; k < nparams; ++k) b[param_names[k]] = Binding(params[k]);
        RunLoop loop(*loaded->v, b, RunOptions{max_steps, steps_per_launch, true});
        RunResult r = loop.run();
        *launches = r.launches;
        *steps = r.steps;
        *live = r.live;
    });
}
void eagle_release(void* object) {
    try {
        delete static_cast<Object*>(object);
    } catch (...) {
    }
}
