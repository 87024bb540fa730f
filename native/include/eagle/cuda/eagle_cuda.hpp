// eagle::cuda: eagle's graph engine for native consumers (and, through c_api.h, for Python).
//
// The driver is reached at run time (dlopen of libcuda.so.1 or $EAGLE_LIBCUDA), never linked,
// so this header needs no CUDA header: driver handles appear as opaque 64-bit values. Objects
// are values with shared ownership (copies share the handle; the last copy releases what this
// library created; `wrap` makes a borrowed one). Every failed driver call throws CudaError
// naming the CUresult and the entry point; destructors never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(_WIN32)
#define EAGLE_CUDA_API
#else
#define EAGLE_CUDA_API __attribute__((visibility("default")))
#endif

namespace eagle::cuda {

constexpr int kAbiVersion = 1;
constexpr const char* kVersion = "0.1.0";

// ---------------------------------------------------------------------------------- errors
class EAGLE_CUDA_API Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// A driver call failed: what() = "cuX failed: CUDA_ERROR_Y (text)".
class EAGLE_CUDA_API CudaError : public Error {
public:
    CudaError(int code, std::string name, std::string call, std::string detail);
    int code() const { return code_; }
    const std::string& name() const { return name_; }
    const std::string& call() const { return call_; }
    const std::string& detail() const { return detail_; }

private:
    int code_;
    std::string name_, call_, detail_;
};
// No driver, no device, a driver too old, a feature missing.
class EAGLE_CUDA_API Unavailable : public Error {
public:
    using Error::Error;
};
// A capture was invalidated, or a step broke a capture rule.
class EAGLE_CUDA_API CaptureError : public Error {
public:
    using Error::Error;
};
// An artifact or its sidecar is missing, malformed or tampered with.
class EAGLE_CUDA_API ArtifactError : public Error {
public:
    using Error::Error;
};
// A binding of the wrong kind, dtype, width or length.
class EAGLE_CUDA_API ArgumentError : public Error {
public:
    using Error::Error;
};

// "" when a GPU is usable, else why not ("no NVIDIA driver found (...)").
EAGLE_CUDA_API std::string unavailable_reason();
// The driver's version (13000 for CUDA 13.0); throws Unavailable without a driver.
EAGLE_CUDA_API int driver_version();
// Which libcuda was loaded (the path handed to dlopen).
EAGLE_CUDA_API std::string driver_library();

// ---------------------------------------------------------------------------------- device
struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    std::string arch;  // "sm_90"
    int multiprocessors = 0;
    std::size_t memory = 0;
    int driver_version = 0;
    bool supports_while_nodes = false;  // driver >= 12.4 and the conditional entry points
};

// One GPU, used through its primary context (retained once per process, never released).
class EAGLE_CUDA_API Device {
public:
    static int count();
    static Device get(int ordinal = 0);
    int ordinal() const { return ordinal_; }
    std::uint64_t context() const { return context_; }
    void activate() const;  // make the primary context current on this thread
    void synchronize() const;
    DeviceInfo info() const;

private:
    Device(int ordinal, std::uint64_t context) : ordinal_(ordinal), context_(context) {}
    int ordinal_;
    std::uint64_t context_;
};

// ------------------------------------------------------------------------- streams, events
class Event;
struct StreamState;

enum class CaptureStatus { None = 0, Active = 1, Invalidated = 2 };

class EAGLE_CUDA_API Stream {
public:
    static Stream create(int device = 0, bool non_blocking = false);
    static Stream wrap(std::uint64_t handle, int device = 0);  // borrowed, never destroyed
    // This thread's current stream on `device`: the top of its StreamScope stack, else
    // eagle's blocking stream for the device (created on first use).
    static Stream current(int device = 0);
    std::uint64_t handle() const;
    int device() const;
    void synchronize() const;
    bool query() const;  // true when all its work is done
    void wait(const Event& event) const;
    CaptureStatus capture_status() const;
    bool operator==(const Stream& other) const { return handle() == other.handle(); }

private:
    explicit Stream(std::shared_ptr<StreamState> state) : state_(std::move(state)) {}
    std::shared_ptr<StreamState> state_;
    friend class StreamScope;
};

// Makes `stream` this thread's current stream for its device until the scope ends.
class EAGLE_CUDA_API StreamScope {
public:
    explicit StreamScope(const Stream& stream);
    ~StreamScope();
    StreamScope(const StreamScope&) = delete;
    StreamScope& operator=(const StreamScope&) = delete;

private:
    int device_;
};
// The same without a scope object (the C facade's push/pop).
EAGLE_CUDA_API void push_current_stream(const Stream& stream);
EAGLE_CUDA_API void pop_current_stream(int device);

class EAGLE_CUDA_API Event {
public:
    static Event create(int device = 0);
    std::uint64_t handle() const;
    void record(const Stream& stream) const;

private:
    struct State;
    explicit Event(std::shared_ptr<State> state) : state_(std::move(state)) {}
    std::shared_ptr<State> state_;
};

// ---------------------------------------------------------------------- modules, kernels
struct ModuleState;

class Function;

class EAGLE_CUDA_API Module {
public:
    // A cubin, fatbin or PTX image (PTX through the driver's JIT; its error log is kept in
    // the CudaError's detail). PTX must be NUL-terminated or is copied with one.
    static Module load(const Device& device, const void* image, std::size_t size);
    Function function(const std::string& name) const;
    std::uint64_t handle() const;
    int device() const;
    std::shared_ptr<const void> keepalive() const;

private:
    explicit Module(std::shared_ptr<ModuleState> state) : state_(std::move(state)) {}
    std::shared_ptr<ModuleState> state_;
    friend class Function;
};

class EAGLE_CUDA_API Function {
public:
    std::uint64_t handle() const { return handle_; }
    const std::string& name() const { return name_; }
    const Module& module() const { return module_; }
    int attribute(int cu_function_attribute) const;
    int max_blocks_per_sm(unsigned block) const;

private:
    Function(Module module, std::uint64_t handle, std::string name)
        : module_(std::move(module)), handle_(handle), name_(std::move(name)) {}
    Module module_;
    std::uint64_t handle_;
    std::string name_;
    friend class Module;
};

// A kernel argument's C type (the sidecar's ctypes map onto these).
enum class ArgType { F64, F32, I64, I32, U32, U64, Bool, Ptr };
EAGLE_CUDA_API ArgType arg_type_of_ctype(const std::string& ctype);  // "const double* ..." -> Ptr
EAGLE_CUDA_API std::size_t arg_size(ArgType type);

// One argument value; converted to the slot's type when packed.
struct Value {
    enum class Kind { Float, Int, UInt } kind;
    union {
        double f;
        std::int64_t i;
        std::uint64_t u;
    };
    Value(double v) : kind(Kind::Float), f(v) {}
    Value(float v) : kind(Kind::Float), f(v) {}
    Value(int v) : kind(Kind::Int), i(v) {}
    Value(long v) : kind(Kind::Int), i(v) {}
    Value(long long v) : kind(Kind::Int), i(v) {}
    Value(bool v) : kind(Kind::Int), i(v ? 1 : 0) {}
    Value(unsigned v) : kind(Kind::UInt), u(v) {}
    Value(unsigned long v) : kind(Kind::UInt), u(v) {}
    Value(unsigned long long v) : kind(Kind::UInt), u(v) {}
    static Value pointer(std::uint64_t address) { return Value(static_cast<unsigned long long>(address)); }
};

// Packed arguments: one 8-byte aligned slot per argument and the `void**` array
// cuLaunchKernel reads (terminated by a null pointer, which the driver never reads: it reads
// exactly the kernel's parameter count; the stand-in checks the count with it).
class EAGLE_CUDA_API KernelArgs {
public:
    KernelArgs() = default;
    KernelArgs(std::vector<ArgType> types, const std::vector<Value>& values);
    KernelArgs(const KernelArgs& other);
    KernelArgs& operator=(const KernelArgs& other);
    void set(std::size_t index, Value value);
    void** pointers() { return pointers_.data(); }
    std::size_t size() const { return types_.size(); }
    const std::vector<ArgType>& types() const { return types_; }

private:
    void rebuild();
    std::vector<ArgType> types_;
    std::vector<std::uint64_t> slots_;
    std::vector<void*> pointers_;
};

// A Function + argument types + block size; launches on the given stream, else this thread's
// current one (so inside a StreamCapturer it is recorded, not run).
class EAGLE_CUDA_API Launcher {
public:
    Launcher(Function function, std::vector<ArgType> types, unsigned block);
    void launch(unsigned grid, const std::vector<Value>& values, const Stream* stream = nullptr) const;
    void launch_packed(unsigned grid, KernelArgs& args, const Stream* stream = nullptr) const;
    const Function& function() const { return function_; }
    unsigned block() const { return block_; }
    const std::vector<ArgType>& types() const { return types_; }

private:
    Function function_;
    std::vector<ArgType> types_;
    unsigned block_;
};

// ------------------------------------------------------------------------------- memory
class EAGLE_CUDA_API DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const Device& device, std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    std::uint64_t ptr() const { return ptr_; }
    std::size_t size() const { return size_; }
    int device() const { return device_; }
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0) const;
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
    void upload_async(const void* host, std::size_t bytes, const Stream& stream) const;
    void download_async(void* host, std::size_t bytes, const Stream& stream) const;
    void zero() const;

private:
    void release() noexcept;
    std::uint64_t ptr_ = 0;
    std::size_t size_ = 0;
    int device_ = 0;
};

// Pinned host memory mapped for the device (a progress counter the device writes while a
// graph runs and a host thread reads). Move-only.
class EAGLE_CUDA_API HostMapped {
public:
    HostMapped(const Device& device, std::size_t bytes);
    ~HostMapped();
    HostMapped(const HostMapped&) = delete;
    HostMapped& operator=(const HostMapped&) = delete;
    void* host() const { return host_; }
    std::uint64_t device_ptr() const { return device_ptr_; }

private:
    void* host_ = nullptr;
    std::uint64_t device_ptr_ = 0;
    int device_ = 0;
};

// Device memory this library does not own (another library's array): zero it, copy it out.
EAGLE_CUDA_API void zero_device_memory(const Device& device, std::uint64_t ptr, std::size_t bytes);
EAGLE_CUDA_API void copy_to_host(const Device& device, void* host, std::uint64_t ptr, std::size_t bytes);

// ------------------------------------------------------------------------------- graphs
using Node = std::uint64_t;  // a CUgraphNode
struct GraphState;
class GraphExec;
struct WhileNode;

class EAGLE_CUDA_API Graph {
public:
    Graph();  // an empty graph owned here
    static Graph view(std::uint64_t handle, int device = 0);  // borrowed (a WHILE body)
    std::uint64_t handle() const;
    int device() const;
    std::size_t node_count() const;
    Node add_kernel(const Function& function, unsigned grid, unsigned block, KernelArgs& args,
                    const std::vector<Node>& dependencies = {});
    Node add_child(const Graph& child, const std::vector<Node>& dependencies = {});
    // A conditional handle on this graph: `default_value` applied at every launch when
    // `assign_default` (CU_GRAPH_COND_ASSIGN_DEFAULT).
    std::uint64_t conditional_handle(const Device& device, unsigned default_value = 1,
                                     bool assign_default = true);
    WhileNode add_while(const Device& device, std::uint64_t handle,
                        const std::vector<Node>& dependencies = {});
    void debug_dot(const std::string& path) const;
    GraphExec instantiate() const;
    // Keep `object` alive as long as this graph and any GraphExec made from it (modules).
    void keep(std::shared_ptr<const void> object);

private:
    explicit Graph(std::shared_ptr<GraphState> state) : state_(std::move(state)) {}
    std::shared_ptr<GraphState> state_;
    friend class StreamCapturer;
};

struct WhileNode {
    Node node;
    std::uint64_t handle;
    Graph body;  // a view: the driver owns the body graph
};

class EAGLE_CUDA_API GraphExec {
public:
    std::uint64_t handle() const;
    void upload(const Stream& stream) const;
    // Launch `times` replays in a row on `stream` (the loop in C++).
    void launch(const Stream& stream, std::uint64_t times = 1) const;

private:
    struct State;
    explicit GraphExec(std::shared_ptr<State> state) : state_(std::move(state)) {}
    std::shared_ptr<State> state_;
    friend class Graph;
};

// RAII stream capture: begins capturing `stream` (thread-local mode unless told otherwise) and
// makes it the current stream of the thread that began it; end() returns the recorded Graph or
// throws CaptureError when the capture was invalidated. Leaving the scope without end() ends
// the capture, drops the partial graph and leaves the stream usable.
// Threads: end it, or let it go, on the thread that began it. Let go on another thread, it is
// no longer that thread's current stream (and never touches the current stream of the thread
// letting it go); a RELAXED capture ends there, but the driver lets only the beginning thread
// end a GLOBAL or THREAD_LOCAL one (cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD),
// so such a capture stays open and its stream is never released (said under EAGLE_CUDA_DEBUG=1).
enum class CaptureMode { Global = 0, ThreadLocal = 1, Relaxed = 2 };
struct CaptureTicket;

class EAGLE_CUDA_API StreamCapturer {
public:
    explicit StreamCapturer(const Stream& stream, CaptureMode mode = CaptureMode::ThreadLocal);
    // Record into `graph` after `dependencies` (cuStreamBeginCaptureToGraph: a WHILE body).
    StreamCapturer(const Stream& stream, const Graph& graph, const std::vector<Node>& dependencies,
                   CaptureMode mode = CaptureMode::ThreadLocal);
    ~StreamCapturer();
    StreamCapturer(const StreamCapturer&) = delete;
    StreamCapturer& operator=(const StreamCapturer&) = delete;
    // Run one step; it must add exactly `nodes` nodes (one launch) and keep the capture valid,
    // else CaptureError naming `what`.
    void step(const std::function<void()>& fn, const std::string& what, std::size_t nodes = 1);
    std::size_t node_count() const;
    CaptureStatus status() const;
    Graph graph() const;                      // the graph being recorded (a view)
    std::vector<Node> dependencies() const;  // the capture's current frontier
    void set_dependencies(const std::vector<Node>& nodes);
    const Stream& stream() const { return stream_; }
    Graph end();

private:
    void finish() noexcept;
    void leave_current();
    Stream stream_;
    std::shared_ptr<CaptureTicket> ticket_;  // its entry in the beginning thread's current streams
    bool open_ = false;
    bool into_ = false;
    std::uint64_t id_ = 0;
    std::vector<std::shared_ptr<const void>> keep_;
    friend void register_capture_keepalive(std::uint64_t, std::shared_ptr<const void>);
};

// ----------------------------------------------------------------------------- artifacts
struct ParamInfo {
    std::string name, role, dtype;  // role: Scalar, Param, Mutable, Terminated, Out, Series, Table
    int width = 1, columns = 0, ndim = 0;
    bool per_sample() const { return role != "Param" && role != "Table"; }
    bool written() const { return role == "Mutable" || role == "Out" || role == "Terminated" || role == "Series"; }
};
struct ArgumentInfo {
    std::string name, kind, parameter, ctype, field;  // kind: count, control, terminated, parameter, table
    int component = -1;
};

// NAME.ptx / NAME.cubin and NAME.json read and validated as eagle's read_artifact does.
class EAGLE_CUDA_API Artifact {
public:
    static Artifact read(const std::string& path);
    const std::string& path() const { return path_; }
    const std::string& kernel() const { return kernel_; }
    const std::string& target() const { return target_; }
    const std::string& entry() const { return entry_; }
    const std::string& decide() const { return decide_; }
    const std::string& ptx_isa() const { return ptx_isa_; }  // the sidecar's, "" for a cubin
    unsigned block_size() const { return block_size_; }
    bool accumulate() const { return accumulate_; }
    const std::vector<ParamInfo>& params() const { return params_; }
    const std::vector<ArgumentInfo>& arguments() const { return arguments_; }
    const std::vector<std::string>& control_fields() const { return control_fields_; }
    const std::string& data() const { return data_; }
    const ParamInfo* param(const std::string& name) const;

private:
    std::string path_, kernel_, target_, entry_, decide_, ptx_isa_, data_;
    unsigned block_size_ = 256;
    bool accumulate_ = false;
    std::vector<ParamInfo> params_;
    std::vector<ArgumentInfo> arguments_;
    std::vector<std::string> control_fields_;
};

// The SHA-256 of `data` as 64 lowercase hex digits (the sidecar's form).
EAGLE_CUDA_API std::string sha256_hex(const void* data, std::size_t size);

// An array in device memory (or host memory a device can read) bound to a parameter.
struct ArrayView {
    std::uint64_t ptr = 0;
    std::string dtype;               // "float64", "float32", "int64", "int32", "uint32", "uint64", "bool"
    std::vector<std::int64_t> shape;  // C-contiguous
};
// A binding: an array, or a Param's value (one number, or one per component, row-major).
struct Binding {
    bool is_array = false;
    ArrayView array;
    std::vector<double> values;  // a Param (int64 Params exact up to 2^53; use ints for more)
    std::vector<std::int64_t> ints;
    Binding() = default;
    Binding(ArrayView view) : is_array(true), array(std::move(view)) {}
    Binding(double v) : values{v} {}
    Binding(std::vector<double> v) : values(std::move(v)) {}
    static Binding integer(std::int64_t v) { Binding b; b.ints = {v}; return b; }
};
using Bindings = std::map<std::string, Binding>;

// One artifact loaded on one device, everything at construction (nothing loads later inside a
// capture); launch() runs one step of every live sample on the current (or given) stream.
class EAGLE_CUDA_API LoadedVector {
public:
    LoadedVector(const std::string& path, const Device& device);
    const Artifact& artifact() const { return artifact_; }
    const Device& device() const { return device_; }
    const Function& entry() const { return entry_; }
    const Function& decide() const { return decide_; }
    // Check the bindings against the sidecar (names, array vs value, dtype, shape, n) and pack
    // the step's arguments in the sidecar's order; `n_out` gets the sample count.
    KernelArgs pack(const Bindings& bindings, std::uint64_t control, std::uint64_t flags_fallback,
                    std::int64_t* n_out) const;
    std::int64_t samples(const Bindings& bindings) const;
    void launch(const Bindings& bindings, const Stream* stream = nullptr);
    void launch_packed(unsigned grid, KernelArgs& args, const Stream* stream = nullptr);
    // One launch of already-bound values in the sidecar's argument order (their types from the
    // sidecar): Python's path, after its own bind().
    void launch_values(unsigned grid, const std::vector<Value>& values, const Stream* stream = nullptr);
    // The control block launch() passes (nsteps = 1, no lists).
    std::uint64_t control() const { return control_->ptr(); }

private:
    Artifact artifact_;
    Device device_;
    Module module_;
    Function entry_, decide_;
    std::shared_ptr<DeviceBuffer> control_;
    std::shared_ptr<DeviceBuffer> flags_;  // for a kernel bound without its Terminated array
    std::vector<std::shared_ptr<KernelArgs>> keep_;
};

// A graph `[deps] -> WHILE(handle) { body }` on its own graph: build the body, instantiate.
class EAGLE_CUDA_API WhileLoop {
public:
    explicit WhileLoop(const Device& device, unsigned default_value = 1, bool assign_default = true);
    Graph& graph() { return graph_; }
    Graph& body() { return node_.body; }
    std::uint64_t handle() const { return node_.handle; }
    GraphExec instantiate() const { return graph_.instantiate(); }

private:
    Device device_;
    Graph graph_;
    WhileNode node_;
};

// repeat_while with no Python: `[start] -> WHILE { body (a child graph) ; condition }`, where
// the condition kernel (eagle/cuda/loop.py's CONDITION_SOURCE, embedded as PTX) reads flag[0]
// (device memory of `flag_dtype`: bool, int8, uint8, int32, uint32, int64, uint64), counts the
// iteration into the int64 at `counter` and goes on while the flag is nonzero and fewer than
// `limit` iterations ran (limit < 0: no limit). One launch of the result runs the whole loop;
// the caller zeroes the counter before it. `body` is copied (a captured graph, say).
EAGLE_CUDA_API GraphExec repeat_while(const Device& device, const Graph& body, std::uint64_t flag,
                                      const std::string& flag_dtype, std::uint64_t counter,
                                      long long limit = -1);

struct RunOptions {
    std::int64_t max_steps = 10000;
    std::int64_t steps_per_launch = 16;  // the first launch's steps (every launch's when fixed)
    bool compact = true;                 // the live-sample lists eagle's GPU loop uses
    // eagle's adaptive schedule (docs/artifacts.md, eagle_decide): grow_until > 0 doubles the
    // launch size up to it while live >= full or live <= spread; 0 keeps it fixed.
    std::int64_t grow_until = 0, full = 0, spread = 0;
};
struct RunResult {
    std::int64_t launches = 0, steps = 0, live = 0;
    std::int64_t steps_per_launch = 0;  // the size the schedule ended at
};

// until_done with no Python: WHILE { eagle_step(grid) -> eagle_decide(1) } in one graph;
// run() is one graph launch, the control block read back once.
class EAGLE_CUDA_API RunLoop {
public:
    // An artifact's loop, its step's arguments packed from `bindings`.
    RunLoop(LoadedVector& loaded, const Bindings& bindings, RunOptions options = {});
    // eagle's own loop for a compiled program (`step` and `decide` from its module) over `n`
    // samples: the step's arguments are given with set_step_args, their control block pointer
    // being control() (Python's GPU runner over this layer).
    RunLoop(const Function& step, const Function& decide, std::int64_t n, unsigned block,
            RunOptions options = {});
    // The program's eagle_start kernel, for append_to.
    void set_start(const Function& start) { start_ = std::make_shared<Function>(start); }
    std::uint64_t control() const { return control_.ptr(); }
    void set_step_args(const KernelArgs& args) { step_args_ = args; exec_.reset(); }
    // The device address (HostMapped::device_ptr) eagle_decide writes (live, steps) to after
    // every launch from the next run on; 0: nothing written.
    void set_progress(std::uint64_t device_ptr) { progress_ = device_ptr; }
    void build();
    // Run until every sample is done or max_steps: one graph launch. Like eagle's Runner.run,
    // a run after one that finished (no live sample, or max_steps reached) launches nothing
    // until reset().
    RunResult run(const Stream* stream = nullptr);
    // One run from `steps` already taken up to `max_steps` (the caller decides whether it is
    // finished): one graph launch.
    RunResult run_from(std::int64_t steps, std::int64_t max_steps, const Stream* stream = nullptr);
    // The same loop with the host deciding: step, decide, read the control block back, again
    // (the eager loop a graph replaces; until_done(..., eager=True)).
    RunResult run_host_from(std::int64_t steps, std::int64_t max_steps, const Stream* stream = nullptr);
    void reset() { steps_ = 0; live_ = -1; }
    std::int64_t samples() const { return n_; }
    // Inside a larger capture (GraphComposer): set the control block for a run from `steps`
    // (before the capture begins: a copy from the host may not happen inside one), then record
    // `eagle_start -> WHILE { step ; decide }` at the top level of the graph `stream` is
    // capturing (CUDA refuses conditional nodes inside child graphs), after the stream's
    // dependencies; each replay continues the run. read_counters(): {launches of the last
    // replay, steps since reset, live samples}.
    void prepare_for_capture(std::int64_t steps, std::int64_t max_steps);
    void append_to(const Stream& stream);
    RunResult read_counters(const Stream* stream = nullptr) const;

private:
    void allocate();
    std::vector<std::int64_t> start(std::int64_t steps, std::int64_t max_steps) const;
    RunResult finish(const std::vector<std::int64_t>& control, std::int64_t steps);
    Device device_;
    std::shared_ptr<Function> step_, decide_, start_;
    unsigned block_ = 256;
    std::vector<std::shared_ptr<KernelArgs>> captured_;  // arguments of nodes appended to captures
    std::vector<std::string> fields_;
    RunOptions options_;
    std::int64_t n_ = 0, steps_ = 0, live_ = -1;
    std::uint64_t progress_ = 0;
    DeviceBuffer control_, lists_;
    std::shared_ptr<DeviceBuffer> flags_;
    KernelArgs step_args_, decide_args_;
    std::shared_ptr<WhileLoop> loop_;
    std::shared_ptr<GraphExec> exec_;
};

}  // namespace eagle::cuda
