// Reaching the driver with no toolkit: dlopen, cuGetProcAddress_v2, a table pinned per symbol.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "internal.hpp"

namespace eagle::cuda {

CudaError::CudaError(int code, std::string name, std::string call, std::string detail)
    : Error(call + " failed: " + name + (detail.empty() ? "" : " (" + detail + ")")),
      code_(code), name_(std::move(name)), call_(std::move(call)), detail_(std::move(detail)) {}

namespace detail {
namespace {

// Names for the results eagle meets, when the driver itself cannot be asked (from cuda.h's
// cudaError_enum).
const char* fallback_name(CUresult r) {
    switch (r) {
#define NAME(x) case x: return #x;
        NAME(CUDA_SUCCESS) NAME(CUDA_ERROR_INVALID_VALUE) NAME(CUDA_ERROR_OUT_OF_MEMORY)
        NAME(CUDA_ERROR_NOT_INITIALIZED) NAME(CUDA_ERROR_DEINITIALIZED) NAME(CUDA_ERROR_NO_DEVICE)
        NAME(CUDA_ERROR_INVALID_DEVICE) NAME(CUDA_ERROR_INVALID_IMAGE) NAME(CUDA_ERROR_INVALID_CONTEXT)
        NAME(CUDA_ERROR_NOT_FOUND) NAME(CUDA_ERROR_NOT_READY) NAME(CUDA_ERROR_INVALID_HANDLE)
        NAME(CUDA_ERROR_NOT_SUPPORTED) NAME(CUDA_ERROR_LAUNCH_TIMEOUT) NAME(CUDA_ERROR_LAUNCH_FAILED)
        NAME(CUDA_ERROR_INVALID_PTX) NAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
        NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) NAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        NAME(CUDA_ERROR_STREAM_CAPTURE_MERGE) NAME(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
        NAME(CUDA_ERROR_STREAM_CAPTURE_UNJOINED) NAME(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
        NAME(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) NAME(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
        NAME(CUDA_ERROR_CAPTURED_EVENT) NAME(CUDA_ERROR_ILLEGAL_ADDRESS) NAME(CUDA_ERROR_UNKNOWN)
#undef NAME
        default: return nullptr;
    }
}

struct Loaded {
    Driver table;
    std::string reason;  // why the driver is unusable, "" if it is
};

Loaded load() {
    Loaded out;
    const char* env = std::getenv("EAGLE_LIBCUDA");
    const std::string path = env && *env ? env : "libcuda.so.1";
    out.table.library = path;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = dlerror();
        out.reason = "no NVIDIA driver found (" + std::string(why ? why : path) + ")";
        return out;
    }
    // The 5-argument form (PFN_cuGetProcAddress_v12000), exported since CUDA 12.0; the plain
    // "cuGetProcAddress" symbol is the 4-argument v11030 ABI.
    auto gpa = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!gpa) {
        out.reason = "the CUDA driver in " + path + " is older than CUDA 12.0 (no cuGetProcAddress_v2); "
                     "eagle needs 12.4 or newer";
        return out;
    }
    std::string missing;
#define EAGLE_CU(name, version, need)                                                            \
    {                                                                                            \
        void* fn = nullptr;                                                                      \
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;             \
        if (gpa(#name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS || \
            found != CU_GET_PROC_ADDRESS_SUCCESS)                                                \
            fn = nullptr;                                                                        \
        out.table.pfn_##name = reinterpret_cast<PFN_##name##_v##version>(fn);                    \
        if (!fn && std::strcmp(#need, "REQUIRED") == 0 && missing.empty()) missing = #name;      \
    }
#include "driver_symbols.inc"
#undef EAGLE_CU
    if (!missing.empty()) {
        int version = 0;
        if (out.table.pfn_cuDriverGetVersion) out.table.pfn_cuDriverGetVersion(&version);
        out.reason = "the CUDA driver is too old (" + std::to_string(version / 1000) + "." +
                     std::to_string(version % 1000 / 10) + ", " + missing + " missing); eagle needs 12.4 or newer";
        return out;
    }
    CUresult r = out.table.pfn_cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char* name = nullptr;
        out.table.pfn_cuGetErrorName(r, &name);
        out.reason = std::string("cuInit failed: ") + (name ? name : "unknown error");
        return out;
    }
    int version = 0;
    out.table.pfn_cuDriverGetVersion(&version);
    out.table.version = version;
    return out;
}

const Loaded& loaded() {
    static const Loaded instance = load();  // thread-safe first use
    return instance;
}

}  // namespace

const Driver& driver() {
    const Loaded& l = loaded();
    if (!l.reason.empty()) throw Unavailable(l.reason);
    return l.table;
}

std::string error_name(CUresult result) {
    const char* name = nullptr;
    if (loaded().reason.empty() && loaded().table.pfn_cuGetErrorName(result, &name) == CUDA_SUCCESS && name)
        return name;
    const char* fallback = fallback_name(result);
    return fallback ? fallback : "CUDA_ERROR_" + std::to_string(static_cast<int>(result));
}

void check(CUresult result, const char* call, const std::string& extra) {
    if (result == CUDA_SUCCESS) return;
    std::string text;
    const char* s = nullptr;
    if (loaded().reason.empty() && loaded().table.pfn_cuGetErrorString(result, &s) == CUDA_SUCCESS && s)
        text = s;
    if (!extra.empty()) text += (text.empty() ? "" : "; ") + extra;
    throw CudaError(static_cast<int>(result), error_name(result), call, text);
}

bool debug() {
    static const bool on = [] {
        const char* v = std::getenv("EAGLE_CUDA_DEBUG");
        return v && std::strcmp(v, "1") == 0;
    }();
    return on;
}

void release_error(CUresult result, const char* call) {
    // CUDA_ERROR_DEINITIALIZED at process exit is normal; the rest only under EAGLE_CUDA_DEBUG.
    if (result != CUDA_SUCCESS && debug())
        std::fprintf(stderr, "eagle::cuda: %s failed while releasing: %s\n", call, error_name(result).c_str());
}

ContextScope::ContextScope(std::uint64_t context) {
    if (!context) return;
    pushed_ = driver().pfn_cuCtxPushCurrent(reinterpret_cast<CUcontext>(context)) == CUDA_SUCCESS;
}

ContextScope::~ContextScope() {
    if (pushed_) {
        CUcontext popped = nullptr;
        driver().pfn_cuCtxPopCurrent(&popped);
    }
}

namespace {
std::mutex contexts_lock;
std::vector<std::uint64_t>& contexts() {
    static std::vector<std::uint64_t> table;  // retained primary contexts, never released
    return table;
}
}  // namespace

std::uint64_t context_of(int device) {
    const Driver& d = driver();
    std::lock_guard<std::mutex> hold(contexts_lock);
    auto& table = contexts();
    if (device < 0) throw Unavailable("no CUDA device " + std::to_string(device));
    if (table.size() <= static_cast<std::size_t>(device)) table.resize(device + 1, 0);
    if (!table[device]) {
        int count = 0;
        check(d.pfn_cuDeviceGetCount(&count), "cuDeviceGetCount");
        if (device >= count)
            throw Unavailable(count == 0 ? "no CUDA device found"
                                         : "no CUDA device " + std::to_string(device) + " (" +
                                               std::to_string(count) + " present)");
        CUdevice dev = 0;
        check(d.pfn_cuDeviceGet(&dev, device), "cuDeviceGet");
        CUcontext ctx = nullptr;
        check(d.pfn_cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
        table[device] = reinterpret_cast<std::uint64_t>(ctx);
    }
    return table[device];
}

void activate(int device) {
    check(driver().pfn_cuCtxSetCurrent(reinterpret_cast<CUcontext>(context_of(device))), "cuCtxSetCurrent");
}

}  // namespace detail

using namespace detail;

std::string unavailable_reason() {
    try {
        driver();
        if (Device::count() == 0) return "no CUDA device found";
        return "";
    } catch (const Error& e) {
        return e.what();
    }
}

int driver_version() { return driver().version; }

std::string driver_library() {
    try {
        return driver().library;
    } catch (const Error&) {
        return "";
    }
}

int Device::count() {
    int count = 0;
    check(driver().pfn_cuDeviceGetCount(&count), "cuDeviceGetCount");
    return count;
}

Device Device::get(int ordinal) { return Device(ordinal, context_of(ordinal)); }

void Device::activate() const {
    check(driver().pfn_cuCtxSetCurrent(reinterpret_cast<CUcontext>(context_)), "cuCtxSetCurrent");
}

void Device::synchronize() const {
    activate();
    check(driver().pfn_cuCtxSynchronize(), "cuCtxSynchronize");
}

DeviceInfo Device::info() const {
    const Driver& d = driver();
    DeviceInfo out;
    out.ordinal = ordinal_;
    CUdevice dev = 0;
    check(d.pfn_cuDeviceGet(&dev, ordinal_), "cuDeviceGet");
    char name[256] = {0};
    check(d.pfn_cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
    out.name = name;
    int major = 0, minor = 0, sms = 0;
    check(d.pfn_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
    check(d.pfn_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
    check(d.pfn_cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
    out.arch = "sm_" + std::to_string(major) + std::to_string(minor);
    out.multiprocessors = sms;
    check(d.pfn_cuDeviceTotalMem(&out.memory, dev), "cuDeviceTotalMem");
    out.driver_version = d.version;
    out.supports_while_nodes = d.version >= 12040 && d.pfn_cuGraphConditionalHandleCreate &&
                               d.pfn_cuGraphAddNode && d.pfn_cuStreamBeginCaptureToGraph &&
                               d.pfn_cuStreamGetCaptureInfo;
    return out;
}

}  // namespace eagle::cuda
