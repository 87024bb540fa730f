// LoadedVector (an artifact on a device), WhileLoop and RunLoop (until_done with no Python).
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "internal.hpp"

namespace eagle::cuda {

namespace {

std::size_t itemsize(const std::string& dtype) {
    if (dtype == "float64" || dtype == "int64" || dtype == "uint64") return 8;
    if (dtype == "float32" || dtype == "int32" || dtype == "uint32") return 4;
    if (dtype == "bool") return 1;
    throw ArgumentError("unknown dtype '" + dtype + "'");
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t k = 0; k < shape.size(); ++k) s += std::to_string(shape[k]) + (shape.size() == 1 ? "," : k + 1 < shape.size() ? ", " : "");
    return s + ")";
}

// The PTX ISA a driver's JIT reads at most (the PTX ISA release notes' table): 12.4 reads 8.4,
// 12.5 and 12.6 read 8.5, 12.8 reads 8.7, 12.9 reads 8.8, 13.x reads 9.x.
int readable_isa(int driver) {
    const int major = driver / 1000, minor = driver % 1000 / 10;
    if (major >= 13) return 90 + minor;
    static const int twelve[] = {80, 81, 82, 83, 84, 85, 85, 85, 87, 88};
    return twelve[std::min(minor, 9)];
}

int isa_number(const std::string& isa) {
    const std::size_t dot = isa.find('.');
    if (dot == std::string::npos) return -1;
    return std::atoi(isa.substr(0, dot).c_str()) * 10 + std::atoi(isa.substr(dot + 1).c_str());
}

std::string ptx_version_line(const std::string& data) {
    const std::string head = data.substr(0, 4096);
    std::size_t at = 0;
    while (at < head.size()) {
        std::size_t end = head.find('\n', at);
        if (end == std::string::npos) end = head.size();
        std::string line = head.substr(at, end - at);
        const std::size_t first = line.find_first_not_of(" \t");
        if (first != std::string::npos && line.compare(first, 8, ".version") == 0) {
            std::string rest = line.substr(first + 8);
            const std::size_t a = rest.find_first_not_of(" \t");
            if (a == std::string::npos) return "";
            const std::size_t b = rest.find_first_of(" \t\r", a);
            return rest.substr(a, b == std::string::npos ? std::string::npos : b - a);
        }
        at = end + 1;
    }
    return "";
}

const std::size_t kControlFields = 15;  // eagle's CONTROL_FIELDS today

std::size_t field_index(const Artifact& a, const char* name) {
    const auto& f = a.control_fields();
    const auto it = std::find(f.begin(), f.end(), name);
    if (it == f.end()) throw ArtifactError(a.path() + ": the control block has no field '" + name + "'");
    return static_cast<std::size_t>(it - f.begin());
}

}  // namespace

LoadedVector::LoadedVector(const std::string& path, const Device& device)
    : artifact_(Artifact::read(path)),
      device_(device),
      module_([&] {
          if (artifact_.target() == "ptx") {
              const std::string isa = ptx_version_line(artifact_.data());
              if (isa.empty() || isa != artifact_.ptx_isa())
                  throw ArtifactError(path + " declares PTX ISA " + (isa.empty() ? "None" : isa) +
                                      " but its sidecar says " + artifact_.ptx_isa() + "; regenerate the pair");
              const int driver = driver_version();
              const int readable = readable_isa(driver);
              if (isa_number(isa) > readable)
                  throw ArtifactError(
                      path + " is PTX ISA " + isa + ", but this machine's CUDA driver " + std::to_string(driver / 1000) +
                      "." + std::to_string(driver % 1000 / 10) + " reads PTX ISA " + std::to_string(readable / 10) + "." +
                      std::to_string(readable % 10) + " at most. PTX is portable to newer GPUs, not to older "
                      "toolchains. Rebuild the artifact with --ptx-isa, ship a cubin, or upgrade the driver");
          }
          return Module::load(device, artifact_.data().data(), artifact_.data().size());
      }()),
      entry_(module_.function(artifact_.entry())),
      decide_(module_.function(artifact_.decide())) {
    std::vector<std::int64_t> control(std::max(artifact_.control_fields().size(), kControlFields), 0);
    control[field_index(artifact_, "nsteps")] = 1;  // one step per launch; no lists: thread i, sample i
    control_ = std::make_shared<DeviceBuffer>(device, control.size() * 8);
    control_->upload(control.data(), control.size() * 8);
}

std::int64_t LoadedVector::samples(const Bindings& bindings) const {
    std::int64_t n = -1;
    for (const auto& p : artifact_.params()) {
        auto it = bindings.find(p.name);
        if (!p.per_sample() || it == bindings.end() || !it->second.is_array || it->second.array.shape.empty()) continue;
        const std::int64_t last = it->second.array.shape.back();
        if (n >= 0 && last != n)
            throw ArgumentError(artifact_.kernel() + ": '" + p.name + "' has " + std::to_string(last) +
                                " samples but an earlier array has " + std::to_string(n));
        n = last;
    }
    if (n < 0) throw ArgumentError(artifact_.kernel() + ": no per-sample array is bound, so the sample count is unknown");
    return n;
}

KernelArgs LoadedVector::pack(const Bindings& bindings, std::uint64_t control, std::uint64_t flags_fallback,
                              std::int64_t* n_out) const {
    const Artifact& a = artifact_;
    const std::string who = a.kernel() + ": ";
    for (const auto& [name, binding] : bindings) {
        (void)binding;
        if (!a.param(name)) {
            std::string known;
            for (const auto& p : a.params()) known += (known.empty() ? "" : ", ") + p.name;
            throw ArgumentError(who + "unknown parameter '" + name + "'; the kernel takes " + known);
        }
    }
    const std::int64_t n = samples(bindings);
    std::uint64_t flags = flags_fallback;
    for (const auto& p : a.params()) {
        auto it = bindings.find(p.name);
        if (p.role == "Series" || p.role == "Table")
            throw ArgumentError(who + "'" + p.name + "' is a " + p.role + "; the native layer does not bind " +
                                p.role + " parameters yet");
        if (it == bindings.end()) {
            if (p.role == "Terminated" && flags_fallback) continue;
            throw ArgumentError(who + "missing binding for '" + p.name + "' (" + p.role + ")");
        }
        const Binding& b = it->second;
        if (p.role == "Param") {
            if (b.is_array)
                throw ArgumentError(who + "'" + p.name + "' is a Param: bind its value, not an array");
            const std::size_t count = b.values.empty() ? b.ints.size() : b.values.size();
            if (count != static_cast<std::size_t>(p.width))
                throw ArgumentError(who + "'" + p.name + "' takes " + std::to_string(p.width) + " value(s), got " +
                                    std::to_string(count));
            continue;
        }
        if (!b.is_array) throw ArgumentError(who + "'" + p.name + "' is per-sample (" + p.role + "): bind an array");
        if (b.array.dtype != p.dtype)
            throw ArgumentError(who + "'" + p.name + "' must be " + p.dtype + ", got " + b.array.dtype);
        std::int64_t leading = 1;
        for (std::size_t k = 0; k + 1 < b.array.shape.size(); ++k) leading *= b.array.shape[k];
        const bool vector = p.width > 1;
        if (leading != p.width || (vector && b.array.shape.size() < 2) || (!vector && b.array.shape.size() != 1))
            throw ArgumentError(who + "'" + p.name + "' must have shape " +
                                (vector ? "(" + std::to_string(p.width) + ", n)" : std::string("(n,)")) + ", got " +
                                shape_text(b.array.shape));
        if (!b.array.ptr) throw ArgumentError(who + "'" + p.name + "' has a null device pointer");
        if (p.role == "Terminated") flags = b.array.ptr;
    }
    if (!flags) throw ArgumentError(who + "bind the Terminated flags (a bool array of n samples)");
    std::vector<ArgType> types;
    std::vector<Value> values;
    for (const auto& arg : a.arguments()) {
        types.push_back(arg_type_of_ctype(arg.ctype));
        if (arg.kind == "count") { values.emplace_back(static_cast<long long>(n)); continue; }
        if (arg.kind == "control") { values.push_back(Value::pointer(control)); continue; }
        if (arg.kind == "terminated") { values.push_back(Value::pointer(flags)); continue; }
        const ParamInfo* p = a.param(arg.parameter);
        if (!p) throw ArtifactError(a.path() + ": argument '" + arg.name + "' names no parameter");
        const Binding& b = bindings.at(p->name);
        const std::size_t k = arg.component < 0 ? 0 : static_cast<std::size_t>(arg.component);
        if (p->role == "Param") {
            if (!b.ints.empty()) values.emplace_back(static_cast<long long>(b.ints[k]));
            else if (p->dtype == "float64" || p->dtype == "float32") values.emplace_back(b.values[k]);
            else values.emplace_back(static_cast<long long>(b.values[k]));
        } else {
            values.push_back(Value::pointer(b.array.ptr + k * static_cast<std::uint64_t>(n) * itemsize(p->dtype)));
        }
    }
    if (n_out) *n_out = n;
    return KernelArgs(types, values);
}

void LoadedVector::launch(const Bindings& bindings, const Stream* stream) {
    std::int64_t n = 0;
    auto args = std::make_shared<KernelArgs>(pack(bindings, control_->ptr(), 0, &n));
    const unsigned block = artifact_.block_size();
    launch_packed(static_cast<unsigned>((n + block - 1) / block), *args, stream);
}

void LoadedVector::launch_packed(unsigned grid, KernelArgs& args, const Stream* stream) {
    Launcher(entry_, args.types(), artifact_.block_size()).launch_packed(grid, args, stream);
}

void LoadedVector::launch_values(unsigned grid, const std::vector<Value>& values, const Stream* stream) {
    std::vector<ArgType> types;
    for (const auto& arg : artifact_.arguments()) types.push_back(arg_type_of_ctype(arg.ctype));
    KernelArgs args(types, values);
    launch_packed(grid, args, stream);
}

WhileLoop::WhileLoop(const Device& device, unsigned default_value, bool assign_default)
    : device_(device), graph_(), node_{0, 0, Graph::view(0)} {
    const std::uint64_t handle = graph_.conditional_handle(device, default_value, assign_default);
    node_ = graph_.add_while(device, handle);
}

namespace {
#include "condition_ptx.inc"

// The condition kernels, loaded once per device (outside any capture).
Module condition_module(const Device& device) {
    static std::mutex lock;
    static std::map<int, Module>* modules = new std::map<int, Module>();
    std::lock_guard<std::mutex> hold(lock);
    auto it = modules->find(device.ordinal());
    if (it == modules->end())
        it = modules->emplace(device.ordinal(), Module::load(device, kConditionPtx, sizeof kConditionPtx)).first;
    return it->second;
}

const char* condition_kernel(const std::string& dtype) {
    static const std::map<std::string, const char*> names = {
        {"bool", "eagle_set_condition_b1"}, {"int8", "eagle_set_condition_i1"},
        {"uint8", "eagle_set_condition_u1"}, {"int32", "eagle_set_condition_i4"},
        {"uint32", "eagle_set_condition_u4"}, {"int64", "eagle_set_condition_i8"},
        {"uint64", "eagle_set_condition_u8"}};
    auto it = names.find(dtype);
    if (it == names.end())
        throw ArgumentError("repeat_while: the flag must be a bool or integer of 1, 4 or 8 bytes, not " + dtype);
    return it->second;
}
}  // namespace

GraphExec repeat_while(const Device& device, const Graph& body, std::uint64_t flag, const std::string& flag_dtype,
                       std::uint64_t counter, long long limit) {
    const Function condition = condition_module(device).function(condition_kernel(flag_dtype));
    const std::vector<ArgType> types = {ArgType::U64, ArgType::Ptr, ArgType::Ptr, ArgType::I64, ArgType::I32};
    Graph graph;
    const std::uint64_t handle = graph.conditional_handle(device, 0, true);
    auto values = [&](int counts) {
        return std::vector<Value>{Value(static_cast<unsigned long long>(handle)), Value::pointer(flag),
                                  Value::pointer(counter), Value(limit), Value(counts)};
    };
    KernelArgs first(types, values(0)), again(types, values(1));
    const Node start = graph.add_kernel(condition, 1, 1, first);
    WhileNode loop = graph.add_while(device, handle, {start});
    const Node child = loop.body.add_child(body);
    loop.body.add_kernel(condition, 1, 1, again, {child});
    return graph.instantiate();
}

namespace {
// eagle's CONTROL_FIELDS (eagle/cuda/emit.py), the layout of a compiled program's control block.
const std::vector<std::string> kEagleControlFields = {
    "nsteps", "live", "taken", "steps", "launches", "max_steps", "steps_per_launch", "last_live",
    "grow_until", "full", "spread", "progress", "count", "lists", "list_in"};

std::size_t index_of(const std::vector<std::string>& fields, const char* name) {
    const auto it = std::find(fields.begin(), fields.end(), name);
    if (it == fields.end()) throw ArtifactError(std::string("the control block has no field '") + name + "'");
    return static_cast<std::size_t>(it - fields.begin());
}
}  // namespace

RunLoop::RunLoop(LoadedVector& loaded, const Bindings& bindings, RunOptions options)
    : device_(loaded.device()),
      step_(std::make_shared<Function>(loaded.entry())),
      decide_(std::make_shared<Function>(loaded.decide())),
      block_(loaded.artifact().block_size()),
      fields_(loaded.artifact().control_fields()),
      options_(options) {
    n_ = loaded.samples(bindings);
    allocate();
    bool has_flags = false;
    for (const auto& p : loaded.artifact().params())
        if (p.role == "Terminated" && bindings.count(p.name)) has_flags = true;
    if (!has_flags) {
        flags_ = std::make_shared<DeviceBuffer>(device_, static_cast<std::size_t>(n_));
        flags_->zero();
    }
    step_args_ = loaded.pack(bindings, control_.ptr(), flags_ ? flags_->ptr() : 0, nullptr);
}

RunLoop::RunLoop(const Function& step, const Function& decide, std::int64_t n, unsigned block, RunOptions options)
    : device_(Device::get(step.module().device())),
      step_(std::make_shared<Function>(step)),
      decide_(std::make_shared<Function>(decide)),
      block_(block),
      fields_(kEagleControlFields),
      options_(options),
      n_(n) {
    allocate();
}

void RunLoop::allocate() {
    if (options_.steps_per_launch < 1) throw ArgumentError("steps_per_launch must be at least 1");
    if (options_.max_steps < 0) throw ArgumentError("max_steps must be 0 or more");
    if (n_ < 1) throw ArgumentError("a loop needs at least one sample");
    const std::size_t fields = std::max(fields_.size(), kControlFields);
    control_ = DeviceBuffer(device_, fields * 8);
    lists_ = DeviceBuffer(device_, static_cast<std::size_t>(2 * n_ * 8));
}

void RunLoop::build() {
    const unsigned grid = static_cast<unsigned>((n_ + block_ - 1) / block_);
    if (step_args_.size() == 0) throw ArgumentError("RunLoop::build: set the step's arguments first");
    loop_ = std::make_shared<WhileLoop>(device_, 1, true);
    const Node step = loop_->body().add_kernel(*step_, grid, block_, step_args_);
    decide_args_ = KernelArgs({ArgType::Ptr, ArgType::U64, ArgType::I32},
                              {Value::pointer(control_.ptr()), Value(static_cast<unsigned long long>(loop_->handle())), 1});
    loop_->body().add_kernel(*decide_, 1, 1, decide_args_, {step});
    exec_ = std::make_shared<GraphExec>(loop_->instantiate());
}

RunResult RunLoop::run(const Stream* stream) {
    if (live_ == 0 || steps_ >= options_.max_steps) return RunResult{0, 0, live_, options_.steps_per_launch};
    return run_from(steps_, options_.max_steps, stream);
}

std::vector<std::int64_t> RunLoop::start(std::int64_t steps, std::int64_t max_steps) const {
    std::vector<std::int64_t> c(control_.size() / 8, 0);
    auto at = [&](const char* field) -> std::int64_t& { return c[index_of(fields_, field)]; };
    at("nsteps") = std::min(options_.steps_per_launch, max_steps - steps);
    at("steps") = steps;
    at("max_steps") = max_steps;
    at("steps_per_launch") = options_.steps_per_launch;
    at("last_live") = -1;
    at("grow_until") = options_.grow_until;
    at("full") = options_.full;
    at("spread") = options_.spread;
    at("progress") = static_cast<std::int64_t>(progress_);
    if (options_.compact) at("lists") = static_cast<std::int64_t>(lists_.ptr());
    return c;
}

RunResult RunLoop::finish(const std::vector<std::int64_t>& c, std::int64_t steps) {
    auto at = [&](const char* field) { return c[index_of(fields_, field)]; };
    RunResult r;
    r.launches = at("launches");
    r.steps = at("steps") - steps;
    r.live = at("last_live");
    r.steps_per_launch = at("steps_per_launch");
    steps_ = at("steps");
    live_ = r.live;
    return r;
}

RunResult RunLoop::run_from(std::int64_t steps, std::int64_t max_steps, const Stream* stream) {
    if (!exec_) build();
    const Stream s = stream ? *stream : Stream::current(device_.ordinal());
    std::vector<std::int64_t> c = start(steps, max_steps);
    control_.upload_async(c.data(), control_.size(), s);
    exec_->launch(s);
    control_.download_async(c.data(), control_.size(), s);
    s.synchronize();
    return finish(c, steps);
}

void RunLoop::prepare_for_capture(std::int64_t steps, std::int64_t max_steps) {
    std::vector<std::int64_t> c = start(steps, max_steps);
    control_.upload(c.data(), control_.size());
}

void RunLoop::append_to(const Stream& stream) {
    if (!start_) throw ArgumentError("RunLoop::append_to: set the program's eagle_start kernel first");
    if (step_args_.size() == 0) throw ArgumentError("RunLoop::append_to: set the step's arguments first");
    device_.activate();
    const auto handle = reinterpret_cast<CUstream>(stream.handle());
    detail::CaptureInfo info = detail::capture_info(handle);
    if (info.status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        throw CaptureError("RunLoop::append_to needs a stream that is capturing");
    Graph graph = Graph::view(reinterpret_cast<std::uint64_t>(info.graph), device_.ordinal());
    auto start_args = std::make_shared<KernelArgs>(std::vector<ArgType>{ArgType::Ptr},
                                                   std::vector<Value>{Value::pointer(control_.ptr())});
    const Node first = graph.add_kernel(*start_, 1, 1, *start_args, info.dependencies);
    const std::uint64_t condition = graph.conditional_handle(device_, 1, true);
    WhileNode loop = graph.add_while(device_, condition, {first});
    const unsigned grid = static_cast<unsigned>((n_ + block_ - 1) / block_);
    auto step_args = std::make_shared<KernelArgs>(step_args_);
    auto decide_args = std::make_shared<KernelArgs>(
        std::vector<ArgType>{ArgType::Ptr, ArgType::U64, ArgType::I32},
        std::vector<Value>{Value::pointer(control_.ptr()), Value(static_cast<unsigned long long>(condition)), 1});
    const Node step = loop.body.add_kernel(*step_, grid, block_, *step_args);
    loop.body.add_kernel(*decide_, 1, 1, *decide_args, {step});
    captured_.insert(captured_.end(), {start_args, step_args, decide_args});
    detail::keep_with_capture(handle, step_->module().keepalive());
    std::vector<CUgraphNode> frontier = {reinterpret_cast<CUgraphNode>(loop.node)};
    detail::check(detail::driver().pfn_cuStreamUpdateCaptureDependencies(handle, frontier.data(), nullptr, 1,
                                                                          CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                  "cuStreamUpdateCaptureDependencies");
}

RunResult RunLoop::read_counters(const Stream* stream) const {
    const Stream s = stream ? *stream : Stream::current(device_.ordinal());
    std::vector<std::int64_t> c(control_.size() / 8, 0);
    control_.download_async(c.data(), control_.size(), s);
    s.synchronize();
    auto at = [&](const char* field) { return c[index_of(fields_, field)]; };
    RunResult r;
    r.launches = at("launches");
    r.steps = at("steps");
    r.live = at("last_live");
    r.steps_per_launch = at("steps_per_launch");
    return r;
}

RunResult RunLoop::run_host_from(std::int64_t steps, std::int64_t max_steps, const Stream* stream) {
    if (step_args_.size() == 0) throw ArgumentError("RunLoop::run_host_from: set the step's arguments first");
    const Stream s = stream ? *stream : Stream::current(device_.ordinal());
    const unsigned grid = static_cast<unsigned>((n_ + block_ - 1) / block_);
    const Launcher step(*step_, step_args_.types(), block_);
    const Launcher decide(*decide_, {ArgType::Ptr, ArgType::U64, ArgType::I32}, 1);
    KernelArgs step_args = step_args_;
    KernelArgs decide_args({ArgType::Ptr, ArgType::U64, ArgType::I32}, {Value::pointer(control_.ptr()), 0, 0});
    std::vector<std::int64_t> c = start(steps, max_steps);
    control_.upload_async(c.data(), control_.size(), s);
    const std::size_t nsteps = index_of(fields_, "nsteps");
    while (true) {  // the host round trip after every launch: the loop a graph replaces
        step.launch_packed(grid, step_args, &s);
        decide.launch_packed(1, decide_args, &s);
        control_.download_async(c.data(), control_.size(), s);
        s.synchronize();
        if (c[nsteps] <= 0) break;
    }
    return finish(c, steps);
}

}  // namespace eagle::cuda
