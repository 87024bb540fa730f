// What every hand-written peer shares: eagle's error norm, its first step (Hairer's HINIT as
// hawk.ode.dopri5.dopri5_start writes it) and its saveat bookkeeping, written as plain CUDA C++
// for one thread per trajectory with the state in registers (fixed-size arrays, every loop
// unrolled, so no array is indexed by a run-time value).
//
// Every operation is written in the order hawk's source writes it (a + b + c is (a + b) + c,
// a * b / c is (a * b) / c), and the file is compiled without contraction (--fmad=false on a
// GPU, -ffp-contract=off on the host), as eagle compiles its kernels by default: so a peer
// takes eagle's accepted steps and, where the math library is the same, ends bit for bit
// where eagle ends. The same file builds as host C++ (gpu_ode_peers.py's rehearsal) behind a
// small prelude that defines __global__, __device__, threadIdx and blockIdx.
#pragma once

#define PEER_RUNNING 0
#define PEER_DONE 1
#define PEER_FAILED (-1)
// hawk.ode.kernels.SMALLEST_STEP: a step below 10 eps |t| gives the sample up
#define PEER_SMALLEST_STEP (10.0 * 2.220446049250313e-16)
// hawk.ode.pi_control: Hairer's constants; the controller's memory starts at C_START
#define PEER_SAFE 0.9
#define PEER_FAC_MIN 0.2
#define PEER_FAC_MAX 10.0
#define PEER_C_START 1e-4
// saveat: at most this many recorded times in one step (dopri5_kernel's saves_per_step)
#define PEER_SAVES_PER_STEP 4

__device__ __forceinline__ double peer_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ double peer_max(double a, double b) { return fmax(a, b); }

// sqrt(total(e * e) / width(e)): the components' squares summed left to right
template <int N>
__device__ __forceinline__ double peer_rms(const double (&e)[N]) {
    double total = e[0] * e[0];
#pragma unroll
    for (int j = 1; j < N; ++j) total = total + e[j] * e[j];
    return sqrt(total / (double)N);
}

// hawk.ode.dopri5.error_norm: rms(err / (atol + rtol * max(|u|, |u_new|)))
template <int N>
__device__ __forceinline__ double peer_error_norm(const double (&err)[N], const double (&u)[N],
                                                  const double (&u_new)[N], double rtol,
                                                  double atol) {
    double e[N];
#pragma unroll
    for (int j = 0; j < N; ++j) e[j] = err[j] / (atol + rtol * peer_max(fabs(u[j]), fabs(u_new[j])));
    return peer_rms(e);
}

// hawk.ode.pi_control: (accepted, h_next, c_next) after a step of size h
__device__ __forceinline__ double peer_pi_control(double err_norm, double h, double c,
                                                  double expo, double beta, bool* accepted,
                                                  double* c_next) {
    const double fac11 = pow(err_norm, expo);
    const double fac = peer_max(1.0 / PEER_FAC_MAX,
                                peer_min(1.0 / PEER_FAC_MIN, fac11 / pow(fabs(c), beta) / PEER_SAFE));
    *accepted = err_norm <= 1.0;
    double h_grown = h / fac;
    if (c < 0.0) h_grown = peer_min(h_grown, h);
    const double h_shrunk = h / peer_min(1.0 / PEER_FAC_MIN, fac11 / PEER_SAFE);
    if (*accepted) {
        *c_next = peer_max(err_norm, PEER_C_START);
        return h_grown;
    }
    *c_next = -fabs(c);
    return h_shrunk;
}

// hawk.ode.dopri5.dopri5_start: k1 = f(u, t) and the first step (two evaluations of f)
template <class M, int N>
__device__ __forceinline__ double peer_first_step(const double (&u)[N], double t, double t_end,
                                                  const double* p, double rtol, double atol,
                                                  double (&k1)[N]) {
    M::f(u, t, p, k1);
    double scale[N], a[N], b[N];
#pragma unroll
    for (int j = 0; j < N; ++j) scale[j] = atol + fabs(u[j]) * rtol;
#pragma unroll
    for (int j = 0; j < N; ++j) { a[j] = u[j] / scale[j]; b[j] = k1[j] / scale[j]; }
    const double d0 = peer_rms(a), d1 = peer_rms(b);
    const double span = t_end - t;
    double h0 = d0 < 1e-5 || d1 < 1e-5 ? 1e-6 : 0.01 * d0 / d1;
    h0 = peer_min(h0, span);
    double probe[N], k_probe[N];
#pragma unroll
    for (int j = 0; j < N; ++j) probe[j] = u[j] + h0 * k1[j];
    M::f(probe, t + h0, p, k_probe);
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = (k_probe[j] - k1[j]) / scale[j];
    const double d2 = peer_rms(a) / h0;
    double h1;
    if (d1 <= 1e-15 && d2 <= 1e-15) h1 = peer_max(1e-6, h0 * 1e-3);
    else h1 = pow(0.01 / peer_max(d1, d2), 0.2);
    return peer_min(peer_min(100.0 * h0, h1), span);
}

// The index of the first recorded time not before t (eagle.ode.solve's first_save)
__device__ __forceinline__ long long peer_first_save(double t, double save_first, double save_every,
                                                     long long save_count) {
    double k = ceil((t - save_first) / save_every);
    k = k < 0.0 ? 0.0 : k;
    k = k > (double)save_count ? (double)save_count : k;
    return (long long)k;
}
