// Private to libeagle_cuda: the driver table and the one check every driver call goes through.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <mutex>
#include <string>
#include <vector>

#include "eagle/cuda/eagle_cuda.hpp"

namespace eagle::cuda::detail {

struct Driver {
#define EAGLE_CU(name, version, need) PFN_##name##_v##version pfn_##name = nullptr;
#include "driver_symbols.inc"
#undef EAGLE_CU
    int version = 0;
    std::string library;
};

// The process's driver table, loaded on first use; throws Unavailable with the reason.
const Driver& driver();

// Throws CudaError("cuX failed: NAME (text)") unless `result` is CUDA_SUCCESS.
void check(CUresult result, const char* call, const std::string& detail = "");
std::string error_name(CUresult result);

// Push `context` for the life of the scope (destructors, calls from any thread).
class ContextScope {
public:
    explicit ContextScope(std::uint64_t context);
    ~ContextScope();

private:
    bool pushed_ = false;
};

void activate(int device);
std::uint64_t context_of(int device);
bool debug();  // EAGLE_CUDA_DEBUG=1: print release errors instead of dropping them
void release_error(CUresult result, const char* call);

// What cuStreamGetCaptureInfo says of `stream` (status, capture id, graph, dependencies).
struct CaptureInfo {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = nullptr;
    std::vector<Node> dependencies;
};
CaptureInfo capture_info(CUstream stream);

// A launch while `stream` is capturing keeps `object` alive with the capture's graph.
void keep_with_capture(CUstream stream, std::shared_ptr<const void> object);

}  // namespace eagle::cuda::detail
