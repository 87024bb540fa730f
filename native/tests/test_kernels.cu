// The self-test's three kernels as CUDA, for a real GPU (NVRTC compiles this to PTX:
// scripts/native_device_bundle.py); tests/fakecuda/test_kernels.cpp is the same pair in the
// host-module form the stand-in runs.
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void CUDARTAPI cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

// out[i] += a * in[i] for i < n
extern "C" __global__ void scale_add(double* out, const double* in, double a, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += a * in[i];
}

// *flag -= 1; the WHILE node's condition: flag still positive
extern "C" __global__ void countdown(long long* flag, cudaGraphConditionalHandle handle) {
    *flag -= 1;
    cudaGraphSetConditional(handle, *flag > 0 ? 1u : 0u);
}

// *flag -= 1 (a repeat_while body)
extern "C" __global__ void decrement(long long* flag) { *flag -= 1; }
