// Three kernels in the host-module form `--host-build` writes, for the self-test against the
// stand-in (no Python, no NVRTC): what eagle's generated CUDA becomes on the host.
extern "C" {
void (*eagle_condition_hook)(unsigned long long, unsigned int) = 0;
}
extern "C" const char eagle_host_module_image_sha256[] = "";  // named directly, not by its PTX
extern "C" const char eagle_host_module_kernels[] = "scale_add 8,8,8,8\ncountdown 8,8\ndecrement 8\n";
static unsigned long long block_index = 0;

// out[i] += a * in[i] for i < n (one thread per sample)
static void scale_add(double* out, const double* in, double a, long long n) {
    const long long i = static_cast<long long>(block_index);
    if (i < n) out[i] += a * in[i];
}
// *flag -= 1; the WHILE node's condition: flag still positive
static void countdown(long long* flag, unsigned long long handle) {
    *flag -= 1;
    eagle_condition_hook(handle, *flag > 0 ? 1u : 0u);
}

extern "C" void host_launch_scale_add(void** p, long long threads) {
    for (long long g = 0; g < threads; ++g) {
        block_index = g;
        scale_add(*(double**)p[0], *(const double**)p[1], *(double*)p[2], *(long long*)p[3]);
    }
}
extern "C" void host_launch_countdown(void** p, long long threads) {
    for (long long g = 0; g < threads; ++g) {
        block_index = g;
        countdown(*(long long**)p[0], *(unsigned long long*)p[1]);
    }
}

// *flag -= 1 (a repeat_while body)
extern "C" void host_launch_decrement(void** p, long long threads) {
    for (long long g = 0; g < threads; ++g) *(*(long long**)p[0]) -= 1;
}
