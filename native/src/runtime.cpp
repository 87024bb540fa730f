// Streams, events, modules, launches, memory, graphs and captures over the driver table.
#include <atomic>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "internal.hpp"

namespace eagle::cuda {

using namespace detail;

// ----------------------------------------------------------------------------- streams
struct StreamState {
    CUstream handle = nullptr;
    int device = 0;
    bool owned = false;
    std::uint64_t context = 0;
    ~StreamState() {
        if (owned && handle) {
            ContextScope scope(context);
            release_error(driver().pfn_cuStreamDestroy(handle), "cuStreamDestroy");
        }
    }
};

// A capture's entry in the current-stream stack of the thread that began it: `gone` is set when
// the StreamCapturer is let go on another thread (which may not touch this thread's stack);
// the beginning thread drops such entries the next time it looks at its stack.
struct CaptureTicket {
    std::thread::id thread = std::this_thread::get_id();
    std::atomic<bool> gone{false};
};

namespace {
struct Current {
    Stream stream;
    std::shared_ptr<CaptureTicket> ticket;  // a capture's entry, else null
    bool gone() const { return ticket && ticket->gone.load(); }
};
thread_local std::map<int, std::vector<Current>> current_stacks;

// This thread's stack for `device`, without the entries of captures let go on other threads
// at its top (those below a live entry are skipped by current() and dropped when they surface).
std::vector<Current>& current_stack(int device) {
    auto& stack = current_stacks[device];
    while (!stack.empty() && stack.back().gone()) stack.pop_back();
    return stack;
}
std::mutex defaults_lock;
std::map<int, Stream>& default_streams() {
    static auto* table = new std::map<int, Stream>();  // never destroyed: used at exit
    return *table;
}
}  // namespace

Stream Stream::create(int device, bool non_blocking) {
    activate(device);
    auto state = std::make_shared<StreamState>();
    check(driver().pfn_cuStreamCreate(&state->handle, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT),
          "cuStreamCreate");
    state->device = device;
    state->owned = true;
    state->context = context_of(device);
    return Stream(state);
}

Stream Stream::wrap(std::uint64_t handle, int device) {
    auto state = std::make_shared<StreamState>();
    state->handle = reinterpret_cast<CUstream>(handle);
    state->device = device;
    state->context = context_of(device);
    return Stream(state);
}

Stream Stream::current(int device) {
    const auto& stack = current_stack(device);
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
        if (!it->gone()) return it->stream;
    std::lock_guard<std::mutex> hold(defaults_lock);
    auto& table = default_streams();
    auto found = table.find(device);
    if (found == table.end()) found = table.emplace(device, Stream::create(device, false)).first;
    return found->second;
}

std::uint64_t Stream::handle() const { return reinterpret_cast<std::uint64_t>(state_->handle); }
int Stream::device() const { return state_->device; }

void Stream::synchronize() const {
    activate(state_->device);
    check(driver().pfn_cuStreamSynchronize(state_->handle), "cuStreamSynchronize");
}

bool Stream::query() const {
    activate(state_->device);
    CUresult r = driver().pfn_cuStreamQuery(state_->handle);
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(r, "cuStreamQuery");
    return true;
}

void Stream::wait(const Event& event) const {
    activate(state_->device);
    check(driver().pfn_cuStreamWaitEvent(state_->handle, reinterpret_cast<CUevent>(event.handle()), 0),
          "cuStreamWaitEvent");
}

CaptureStatus Stream::capture_status() const {
    activate(state_->device);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    check(driver().pfn_cuStreamIsCapturing(state_->handle, &status), "cuStreamIsCapturing");
    return static_cast<CaptureStatus>(status);
}

void push_current_stream(const Stream& stream) { current_stack(stream.device()).push_back({stream, nullptr}); }

void pop_current_stream(int device) {
    auto& stack = current_stack(device);
    if (stack.empty()) throw Error("pop_current_stream: no stream was pushed on this thread");
    stack.pop_back();
}

StreamScope::StreamScope(const Stream& stream) : device_(stream.device()) { push_current_stream(stream); }
StreamScope::~StreamScope() {
    auto& stack = current_stack(device_);
    if (!stack.empty()) stack.pop_back();
}

struct Event::State {
    CUevent handle = nullptr;
    std::uint64_t context = 0;
    ~State() {
        if (handle) {
            ContextScope scope(context);
            release_error(driver().pfn_cuEventDestroy(handle), "cuEventDestroy");
        }
    }
};

Event Event::create(int device) {
    activate(device);
    auto state = std::make_shared<State>();
    check(driver().pfn_cuEventCreate(&state->handle, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    state->context = context_of(device);
    return Event(state);
}

std::uint64_t Event::handle() const { return reinterpret_cast<std::uint64_t>(state_->handle); }

void Event::record(const Stream& stream) const {
    activate(stream.device());
    check(driver().pfn_cuEventRecord(state_->handle, reinterpret_cast<CUstream>(stream.handle())), "cuEventRecord");
}

// ----------------------------------------------------------------------------- modules
struct ModuleState {
    CUmodule handle = nullptr;
    int device = 0;
    std::uint64_t context = 0;
    ~ModuleState() {
        if (handle) {
            ContextScope scope(context);
            release_error(driver().pfn_cuModuleUnload(handle), "cuModuleUnload");
        }
    }
};

Module Module::load(const Device& device, const void* image, std::size_t size) {
    device.activate();
    const Driver& d = driver();
    std::string copy;
    const char* bytes = static_cast<const char*>(image);
    const bool text = size > 0 && bytes[0] != 0x7f;  // not an ELF cubin: PTX, NUL-terminated
    if (text && bytes[size - 1] != '\0') {
        copy.assign(bytes, size);
        image = copy.c_str();
    }
    // Module loads may not happen inside another thread's capture in global mode: relax this
    // thread's mode for the call (PyTorch does the same).
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    d.pfn_cuThreadExchangeStreamCaptureMode(&mode);
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof log - 1))};
    auto state = std::make_shared<ModuleState>();
    CUresult r = d.pfn_cuModuleLoadDataEx(&state->handle, image, 2, options, values);
    d.pfn_cuThreadExchangeStreamCaptureMode(&mode);
    if (r != CUDA_SUCCESS) state->handle = nullptr;
    check(r, "cuModuleLoadDataEx", log);
    state->device = device.ordinal();
    state->context = device.context();
    return Module(state);
}

Function Module::function(const std::string& name) const {
    activate(state_->device);
    CUfunction f = nullptr;
    check(driver().pfn_cuModuleGetFunction(&f, state_->handle, name.c_str()), "cuModuleGetFunction",
          "no kernel named " + name);
    return Function(*this, reinterpret_cast<std::uint64_t>(f), name);
}

std::uint64_t Module::handle() const { return reinterpret_cast<std::uint64_t>(state_->handle); }
int Module::device() const { return state_->device; }
std::shared_ptr<const void> Module::keepalive() const { return state_; }

int Function::attribute(int attribute) const {
    activate(module_.device());
    int value = 0;
    check(driver().pfn_cuFuncGetAttribute(&value, static_cast<CUfunction_attribute>(attribute),
                                           reinterpret_cast<CUfunction>(handle_)),
          "cuFuncGetAttribute");
    return value;
}

int Function::max_blocks_per_sm(unsigned block) const {
    activate(module_.device());
    int blocks = 0;
    check(driver().pfn_cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<CUfunction>(handle_),
                                                                   static_cast<int>(block), 0),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    return blocks;
}

// --------------------------------------------------------------------------- arguments
ArgType arg_type_of_ctype(const std::string& ctype) {
    if (ctype.find('*') != std::string::npos) return ArgType::Ptr;
    if (ctype == "double") return ArgType::F64;
    if (ctype == "float") return ArgType::F32;
    if (ctype == "long long") return ArgType::I64;
    if (ctype == "int") return ArgType::I32;
    if (ctype == "unsigned int") return ArgType::U32;
    if (ctype == "unsigned long long" || ctype == "u64" || ctype == "eagle_u64") return ArgType::U64;
    if (ctype == "bool") return ArgType::Bool;
    throw ArgumentError("unknown kernel argument type '" + ctype + "'");
}

std::size_t arg_size(ArgType type) {
    switch (type) {
        case ArgType::F32: case ArgType::I32: case ArgType::U32: return 4;
        case ArgType::Bool: return 1;
        default: return 8;
    }
}

KernelArgs::KernelArgs(std::vector<ArgType> types, const std::vector<Value>& values)
    : types_(std::move(types)), slots_(types_.size(), 0) {
    if (values.size() != types_.size())
        throw ArgumentError("the kernel takes " + std::to_string(types_.size()) + " arguments, " +
                            std::to_string(values.size()) + " given");
    rebuild();
    for (std::size_t k = 0; k < values.size(); ++k) set(k, values[k]);
}

KernelArgs::KernelArgs(const KernelArgs& other) : types_(other.types_), slots_(other.slots_) { rebuild(); }

KernelArgs& KernelArgs::operator=(const KernelArgs& other) {
    types_ = other.types_;
    slots_ = other.slots_;
    rebuild();
    return *this;
}

void KernelArgs::rebuild() {
    pointers_.assign(slots_.size() + 1, nullptr);  // the last one: the null terminator
    for (std::size_t k = 0; k < slots_.size(); ++k) pointers_[k] = &slots_[k];
}

void KernelArgs::set(std::size_t index, Value v) {
    if (index >= types_.size()) throw ArgumentError("argument index out of range");
    std::uint64_t& slot = slots_[index];
    slot = 0;
    const double f = v.kind == Value::Kind::Float ? v.f : v.kind == Value::Kind::Int ? double(v.i) : double(v.u);
    const std::int64_t i = v.kind == Value::Kind::Float ? std::int64_t(v.f) : v.kind == Value::Kind::Int ? v.i : std::int64_t(v.u);
    switch (types_[index]) {
        case ArgType::F64: std::memcpy(&slot, &f, 8); break;
        case ArgType::F32: { const float x = float(f); std::memcpy(&slot, &x, 4); break; }
        case ArgType::I64: case ArgType::U64: case ArgType::Ptr: std::memcpy(&slot, &i, 8); break;
        case ArgType::I32: case ArgType::U32: { const std::int32_t x = std::int32_t(i); std::memcpy(&slot, &x, 4); break; }
        case ArgType::Bool: { const bool x = i != 0; std::memcpy(&slot, &x, 1); break; }
    }
}

Launcher::Launcher(Function function, std::vector<ArgType> types, unsigned block)
    : function_(std::move(function)), types_(std::move(types)), block_(block) {}

void Launcher::launch(unsigned grid, const std::vector<Value>& values, const Stream* stream) const {
    KernelArgs args(types_, values);
    launch_packed(grid, args, stream);
}

void Launcher::launch_packed(unsigned grid, KernelArgs& args, const Stream* stream) const {
    const int device = function_.module().device();
    const Stream s = stream ? *stream : Stream::current(device);
    activate(device);
    auto handle = reinterpret_cast<CUstream>(s.handle());
    check(driver().pfn_cuLaunchKernel(reinterpret_cast<CUfunction>(function_.handle()), grid, 1, 1, block_, 1, 1, 0,
                                      handle, args.pointers(), nullptr),
          "cuLaunchKernel", function_.name());
    keep_with_capture(handle, function_.module().keepalive());
}

// ------------------------------------------------------------------------------ memory
DeviceBuffer::DeviceBuffer(const Device& device, std::size_t bytes) : size_(bytes), device_(device.ordinal()) {
    device.activate();
    CUdeviceptr p = 0;
    check(driver().pfn_cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), size_(other.size_), device_(other.device_) {
    other.ptr_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        release();
        ptr_ = other.ptr_;
        size_ = other.size_;
        device_ = other.device_;
        other.ptr_ = 0;
    }
    return *this;
}

void DeviceBuffer::release() noexcept {
    if (!ptr_) return;
    try {
        ContextScope scope(context_of(device_));
        release_error(driver().pfn_cuMemFree(ptr_), "cuMemFree");
    } catch (...) {
    }
    ptr_ = 0;
}

namespace {
void bounds(std::size_t bytes, std::size_t offset, std::size_t size) {
    if (offset + bytes > size)
        throw ArgumentError("a copy of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                            " does not fit a buffer of " + std::to_string(size));
}
}  // namespace

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) const {
    bounds(bytes, offset, size_);
    activate(device_);
    check(driver().pfn_cuMemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
    bounds(bytes, offset, size_);
    activate(device_);
    check(driver().pfn_cuMemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::upload_async(const void* host, std::size_t bytes, const Stream& stream) const {
    bounds(bytes, 0, size_);
    activate(device_);
    check(driver().pfn_cuMemcpyHtoDAsync(ptr_, host, bytes, reinterpret_cast<CUstream>(stream.handle())),
          "cuMemcpyHtoDAsync");
}

void DeviceBuffer::download_async(void* host, std::size_t bytes, const Stream& stream) const {
    bounds(bytes, 0, size_);
    activate(device_);
    check(driver().pfn_cuMemcpyDtoHAsync(host, ptr_, bytes, reinterpret_cast<CUstream>(stream.handle())),
          "cuMemcpyDtoHAsync");
}

void DeviceBuffer::zero() const {
    activate(device_);
    check(driver().pfn_cuMemsetD8(ptr_, 0, size_), "cuMemsetD8");
}

HostMapped::HostMapped(const Device& device, std::size_t bytes) : device_(device.ordinal()) {
    device.activate();
    check(driver().pfn_cuMemHostAlloc(&host_, bytes ? bytes : 1, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    CUdeviceptr p = 0;
    CUresult r = driver().pfn_cuMemHostGetDevicePointer(&p, host_, 0);
    if (r != CUDA_SUCCESS) {
        driver().pfn_cuMemFreeHost(host_);
        check(r, "cuMemHostGetDevicePointer");
    }
    device_ptr_ = p;
}

HostMapped::~HostMapped() {
    if (!host_) return;
    try {
        ContextScope scope(context_of(device_));
        release_error(driver().pfn_cuMemFreeHost(host_), "cuMemFreeHost");
    } catch (...) {
    }
}

void zero_device_memory(const Device& device, std::uint64_t ptr, std::size_t bytes) {
    device.activate();
    check(driver().pfn_cuMemsetD8(ptr, 0, bytes), "cuMemsetD8");
    check(driver().pfn_cuCtxSynchronize(), "cuCtxSynchronize");
}

void copy_to_host(const Device& device, void* host, std::uint64_t ptr, std::size_t bytes) {
    device.activate();
    check(driver().pfn_cuMemcpyDtoH(host, ptr, bytes), "cuMemcpyDtoH");
}

// ------------------------------------------------------------------------------- graphs
struct GraphState {
    CUgraph handle = nullptr;
    int device = 0;
    bool owned = false;
    std::vector<std::shared_ptr<const void>> keep;  // modules its kernels live in
    std::shared_ptr<GraphState> parent;             // a WHILE body's graph
    ~GraphState() {
        if (owned && handle) release_error(driver().pfn_cuGraphDestroy(handle), "cuGraphDestroy");
    }
};

struct GraphExec::State {
    CUgraphExec handle = nullptr;
    int device = 0;
    std::shared_ptr<GraphState> graph;  // keeps the modules (and the graph) alive
    ~State() {
        if (handle) {
            ContextScope scope(context_of(device));
            release_error(driver().pfn_cuGraphExecDestroy(handle), "cuGraphExecDestroy");
        }
    }
};

Graph::Graph() : state_(std::make_shared<GraphState>()) {
    check(driver().pfn_cuGraphCreate(&state_->handle, 0), "cuGraphCreate");
    state_->owned = true;
}

Graph Graph::view(std::uint64_t handle, int device) {
    auto state = std::make_shared<GraphState>();
    state->handle = reinterpret_cast<CUgraph>(handle);
    state->device = device;
    return Graph(state);
}

std::uint64_t Graph::handle() const { return reinterpret_cast<std::uint64_t>(state_->handle); }
int Graph::device() const { return state_->device; }

std::size_t Graph::node_count() const {
    std::size_t count = 0;
    check(driver().pfn_cuGraphGetNodes(state_->handle, nullptr, &count), "cuGraphGetNodes");
    return count;
}

void Graph::keep(std::shared_ptr<const void> object) {
    GraphState* root = state_.get();
    while (root->parent) root = root->parent.get();
    root->keep.push_back(std::move(object));
}

Node Graph::add_kernel(const Function& function, unsigned grid, unsigned block, KernelArgs& args,
                       const std::vector<Node>& dependencies) {
    activate(function.module().device());
    state_->device = function.module().device();
    CUDA_KERNEL_NODE_PARAMS_v2 params;  // the struct PFN_cuGraphAddKernelNode_v12000 takes
    std::memset(&params, 0, sizeof params);
    params.func = reinterpret_cast<CUfunction>(function.handle());
    params.gridDimX = grid;
    params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = block;
    params.blockDimY = params.blockDimZ = 1;
    params.kernelParams = args.pointers();  // the driver copies the values now
    CUgraphNode node = nullptr;
    check(driver().pfn_cuGraphAddKernelNode(&node, state_->handle,
                                            reinterpret_cast<const CUgraphNode*>(dependencies.data()),
                                            dependencies.size(), &params),
          "cuGraphAddKernelNode", function.name());
    keep(function.module().keepalive());
    return reinterpret_cast<Node>(node);
}

Node Graph::add_child(const Graph& child, const std::vector<Node>& dependencies) {
    CUgraphNode node = nullptr;
    check(driver().pfn_cuGraphAddChildGraphNode(&node, state_->handle,
                                                reinterpret_cast<const CUgraphNode*>(dependencies.data()),
                                                dependencies.size(), child.state_->handle),
          "cuGraphAddChildGraphNode");
    for (auto& k : child.state_->keep) keep(k);
    return reinterpret_cast<Node>(node);
}

namespace {
void need_while(const Driver& d) {
    if (!d.pfn_cuGraphConditionalHandleCreate || !d.pfn_cuGraphAddNode || d.version < 12040)
        throw Unavailable("conditional (WHILE) graph nodes need a CUDA 12.4 driver or newer; this one is " +
                          std::to_string(d.version / 1000) + "." + std::to_string(d.version % 1000 / 10));
}
}  // namespace

std::uint64_t Graph::conditional_handle(const Device& device, unsigned default_value, bool assign_default) {
    const Driver& d = driver();
    need_while(d);
    device.activate();
    CUgraphConditionalHandle handle = 0;
    check(d.pfn_cuGraphConditionalHandleCreate(&handle, state_->handle, reinterpret_cast<CUcontext>(device.context()),
                                               default_value, assign_default ? CU_GRAPH_COND_ASSIGN_DEFAULT : 0),
          "cuGraphConditionalHandleCreate");
    return handle;
}

WhileNode Graph::add_while(const Device& device, std::uint64_t handle, const std::vector<Node>& dependencies) {
    const Driver& d = driver();
    need_while(d);
    device.activate();
    CUgraphNodeParams params;
    std::memset(&params, 0, sizeof params);
    params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    params.conditional.handle = handle;
    params.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    params.conditional.size = 1;
    params.conditional.ctx = reinterpret_cast<CUcontext>(device.context());
    CUgraphNode node = nullptr;
    check(d.pfn_cuGraphAddNode(&node, state_->handle, reinterpret_cast<const CUgraphNode*>(dependencies.data()),
                               nullptr, dependencies.size(), &params),
          "cuGraphAddNode", "a WHILE node");
    // The driver owns the body as part of this graph: the view keeps this graph alive and
    // files the modules of the kernels added to it with this graph.
    auto view = std::make_shared<GraphState>();
    view->handle = params.conditional.phGraph_out[0];
    view->device = device.ordinal();
    view->parent = state_;
    Graph out(view);
    return WhileNode{reinterpret_cast<Node>(node), handle, out};
}

void Graph::debug_dot(const std::string& path) const {
    const Driver& d = driver();
    if (!d.pfn_cuGraphDebugDotPrint) throw Unavailable("cuGraphDebugDotPrint is missing from this driver");
    check(d.pfn_cuGraphDebugDotPrint(state_->handle, path.c_str(), 0), "cuGraphDebugDotPrint");
}

GraphExec Graph::instantiate() const {
    activate(state_->device);
    auto state = std::make_shared<GraphExec::State>();
    check(driver().pfn_cuGraphInstantiateWithFlags(&state->handle, state_->handle, 0), "cuGraphInstantiateWithFlags");
    state->device = state_->device;
    state->graph = state_;
    return GraphExec(state);
}

std::uint64_t GraphExec::handle() const { return reinterpret_cast<std::uint64_t>(state_->handle); }

void GraphExec::upload(const Stream& stream) const {
    activate(state_->device);
    check(driver().pfn_cuGraphUpload(state_->handle, reinterpret_cast<CUstream>(stream.handle())), "cuGraphUpload");
}

void GraphExec::launch(const Stream& stream, std::uint64_t times) const {
    activate(state_->device);
    const auto s = reinterpret_cast<CUstream>(stream.handle());
    for (std::uint64_t k = 0; k < times; ++k) check(driver().pfn_cuGraphLaunch(state_->handle, s), "cuGraphLaunch");
}

// ----------------------------------------------------------------------------- capture
namespace {
// Captures by id (a capture may span threads: PyTorch keys them the same way), each with the
// objects its graph must keep alive.
std::mutex captures_lock;
std::unordered_map<std::uint64_t, std::vector<std::shared_ptr<const void>>*>& captures() {
    static auto* table = new std::unordered_map<std::uint64_t, std::vector<std::shared_ptr<const void>>*>();
    return *table;
}

}  // namespace

namespace detail {
CaptureInfo capture_info(CUstream stream) {
    const Driver& d = driver();
    CaptureInfo out;
    if (!d.pfn_cuStreamGetCaptureInfo) {
        check(d.pfn_cuStreamIsCapturing(stream, &out.status), "cuStreamIsCapturing");
        return out;
    }
    const CUgraphNode* deps = nullptr;
    const CUgraphEdgeData* edges = nullptr;
    std::size_t count = 0;
    check(d.pfn_cuStreamGetCaptureInfo(stream, &out.status, &out.id, &out.graph, &deps, &edges, &count),
          "cuStreamGetCaptureInfo");
    for (std::size_t k = 0; k < count; ++k) out.dependencies.push_back(reinterpret_cast<Node>(deps[k]));
    return out;
}

void keep_with_capture(CUstream stream, std::shared_ptr<const void> object) {
    if (!driver().pfn_cuStreamGetCaptureInfo) return;
    CaptureInfo info = capture_info(stream);
    if (info.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return;
    std::lock_guard<std::mutex> hold(captures_lock);
    auto it = captures().find(info.id);
    if (it != captures().end()) it->second->push_back(std::move(object));
}
}  // namespace detail

StreamCapturer::StreamCapturer(const Stream& stream, CaptureMode mode) : stream_(stream) {
    activate(stream.device());
    check(driver().pfn_cuStreamBeginCapture(reinterpret_cast<CUstream>(stream.handle()),
                                            static_cast<CUstreamCaptureMode>(mode)),
          "cuStreamBeginCapture");
    open_ = true;
    id_ = capture_info(reinterpret_cast<CUstream>(stream.handle())).id;
    {
        std::lock_guard<std::mutex> hold(captures_lock);
        captures()[id_] = &keep_;
    }
    ticket_ = std::make_shared<CaptureTicket>();
    current_stack(stream_.device()).push_back({stream_, ticket_});
}

StreamCapturer::StreamCapturer(const Stream& stream, const Graph& graph, const std::vector<Node>& dependencies,
                               CaptureMode mode)
    : stream_(stream) {
    const Driver& d = driver();
    if (!d.pfn_cuStreamBeginCaptureToGraph)
        throw Unavailable("capturing into an existing graph needs a CUDA 12.3 driver or newer");
    activate(stream.device());
    check(d.pfn_cuStreamBeginCaptureToGraph(reinterpret_cast<CUstream>(stream.handle()),
                                            reinterpret_cast<CUgraph>(graph.handle()),
                                            reinterpret_cast<const CUgraphNode*>(dependencies.data()), nullptr,
                                            dependencies.size(), static_cast<CUstreamCaptureMode>(mode)),
          "cuStreamBeginCaptureToGraph");
    open_ = true;
    into_ = true;
    id_ = capture_info(reinterpret_cast<CUstream>(stream.handle())).id;
    {
        std::lock_guard<std::mutex> hold(captures_lock);
        captures()[id_] = &keep_;
    }
    ticket_ = std::make_shared<CaptureTicket>();
    current_stack(stream_.device()).push_back({stream_, ticket_});
}

StreamCapturer::~StreamCapturer() { finish(); }

// The capture's stream stops being current where the capture began: its entry is taken out of
// that thread's stack when this is that thread, else marked gone for that thread to drop.
void StreamCapturer::leave_current() {
    if (ticket_->thread != std::this_thread::get_id()) {
        ticket_->gone = true;
        return;
    }
    auto& stack = current_stacks[stream_.device()];
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
        if (it->ticket == ticket_) {
            stack.erase(std::next(it).base());
            break;
        }
}

void StreamCapturer::finish() noexcept {
    if (!open_) return;
    open_ = false;
    try {
        {
            std::lock_guard<std::mutex> hold(captures_lock);
            captures().erase(id_);
        }
        leave_current();
        CUgraph graph = nullptr;
        ContextScope scope(context_of(stream_.device()));
        CUresult r = driver().pfn_cuStreamEndCapture(reinterpret_cast<CUstream>(stream_.handle()), &graph);
        release_error(r, "cuStreamEndCapture");
        if (r == CUDA_SUCCESS && graph && !into_) release_error(driver().pfn_cuGraphDestroy(graph), "cuGraphDestroy");
    } catch (...) {
    }
}

std::size_t StreamCapturer::node_count() const { return graph().node_count(); }

CaptureStatus StreamCapturer::status() const { return stream_.capture_status(); }

Graph StreamCapturer::graph() const {
    CaptureInfo info = capture_info(reinterpret_cast<CUstream>(stream_.handle()));
    if (info.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) throw CaptureError("the capture is no longer active");
    return Graph::view(reinterpret_cast<std::uint64_t>(info.graph), stream_.device());
}

std::vector<Node> StreamCapturer::dependencies() const {
    return capture_info(reinterpret_cast<CUstream>(stream_.handle())).dependencies;
}

void StreamCapturer::set_dependencies(const std::vector<Node>& nodes) {
    const Driver& d = driver();
    if (!d.pfn_cuStreamUpdateCaptureDependencies)
        throw Unavailable("cuStreamUpdateCaptureDependencies is missing from this driver");
    std::vector<CUgraphNode> list;
    for (Node n : nodes) list.push_back(reinterpret_cast<CUgraphNode>(n));
    check(d.pfn_cuStreamUpdateCaptureDependencies(reinterpret_cast<CUstream>(stream_.handle()), list.data(), nullptr,
                                                  list.size(), CU_STREAM_SET_CAPTURE_DEPENDENCIES),
          "cuStreamUpdateCaptureDependencies");
}

void StreamCapturer::step(const std::function<void()>& fn, const std::string& what, std::size_t nodes) {
    if (!open_) throw CaptureError(what + ": the capture has already ended");
    std::size_t before = 0;
    try {
        before = node_count();
        fn();
    } catch (const std::exception& e) {
        throw CaptureError(what + " failed while being captured: " + e.what());
    }
    if (status() != CaptureStatus::Active)
        throw CaptureError(what + " invalidated the capture (it allocated, copied synchronously or synchronized)");
    const std::size_t added = node_count() - before;
    if (added != nodes)
        throw CaptureError(what + " issued " + std::to_string(added) + " operations while being captured; a step "
                           "must issue exactly " + std::to_string(nodes));
}

Graph StreamCapturer::end() {
    if (!open_) throw CaptureError("the capture has already ended");
    open_ = false;
    {
        std::lock_guard<std::mutex> hold(captures_lock);
        captures().erase(id_);
    }
    leave_current();
    activate(stream_.device());
    CUgraph graph = nullptr;
    CUresult r = driver().pfn_cuStreamEndCapture(reinterpret_cast<CUstream>(stream_.handle()), &graph);
    if (r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        throw CaptureError("the capture was invalidated: a step allocated, copied synchronously or synchronized "
                           "(cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)");
    check(r, "cuStreamEndCapture");
    if (into_) return Graph::view(reinterpret_cast<std::uint64_t>(graph), stream_.device());
    auto state = std::make_shared<GraphState>();
    state->handle = graph;
    state->device = stream_.device();
    state->owned = true;
    state->keep = keep_;
    return Graph(state);
}

}  // namespace eagle::cuda
