// One trajectory per thread, integrated to its end inside one launch with everything in
// registers: the MPGOS / DiffEqGPU EnsembleGPUKernel design. The step rules are those of
// hawk.ode.kernels.dopri5_kernel (without events and stops): a step is h, or shorter to land
// on t_end or on the last recorded time it may pass; a shortened accepted step does not
// shrink the next one; the counts and the status are _tally's. So the peer takes eagle's
// accepted and rejected steps.
//
// Arrays are eagle's layouts: u0 and u (N, n), p (P, n), saved (save_count, N, n), one column
// per trajectory; accepted, rejected and status int64 (n,).
#pragma once
#include "common.cuh"

template <class Method, class M, bool SAVES>
__device__ __forceinline__ void peer_solve(long long n, const double* __restrict__ u0,
                                           const double* __restrict__ params, double t0,
                                           double t_end, double rtol, double atol,
                                           long long max_steps, double save_first,
                                           double save_every, long long save_count,
                                           double* __restrict__ u_out, double* __restrict__ t_out,
                                           long long* __restrict__ accepted_out,
                                           long long* __restrict__ rejected_out,
                                           long long* __restrict__ status_out,
                                           double* __restrict__ saved) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    constexpr int N = M::N;
    double p[M::P > 0 ? M::P : 1];
#pragma unroll
    for (int j = 0; j < M::P; ++j) p[j] = params[j * n + i];
    double u[N], k1[N];
#pragma unroll
    for (int j = 0; j < N; ++j) u[j] = u0[j * n + i];
    double t = t0;
    double h = peer_first_step<M>(u, t, t_end, p, rtol, atol, k1);
    double c = PEER_C_START;
    long long accepted = 0, rejected = 0, status = PEER_RUNNING;
    long long saves = SAVES ? peer_first_save(t, save_first, save_every, save_count) : 0;
    for (long long step = 0; step < max_steps && status == PEER_RUNNING; ++step) {
        double h_step = peer_min(h, t_end - t);  // max_step: none (inf)
        if (SAVES) {
            const long long last_save = saves + (PEER_SAVES_PER_STEP - 1);
            if (last_save < save_count)
                h_step = peer_min(h_step, save_first + (double)last_save * save_every - t);
        }
        double t_new = t + h_step;
        if (h_step == t_end - t) t_new = t_end;
        double u_new[N], err[N], k_next[N];
        typename Method::Q q;
        Method::template attempt<M>(u, k1, t, h_step, p, u_new, err, q, k_next);
        bool ok;
        double c_next;
        double h_next = Method::control(peer_error_norm(err, u, u_new, rtol, atol), h_step, c,
                                        &ok, &c_next);
        if (ok && h_step < h) h_next = peer_max(h_next, h);
        if (SAVES) {
            long long passed = 0;
#pragma unroll
            for (int j = 0; j < PEER_SAVES_PER_STEP; ++j) {
                const double t_save = save_first + (double)(saves + j) * save_every;
                if (ok && saves + j < save_count && t_save <= t_new) {
                    double inside[N];
                    Method::value(u, h_step, q, (t_save - t) / h_step, inside);
                    double* row = saved + (saves + j) * N * n + i;
#pragma unroll
                    for (int m = 0; m < N; ++m) row[m * n] = t_save == t_new ? u_new[m] : inside[m];
                    passed += 1;
                }
            }
            saves += passed;
        }
        const bool failed = !(h_next > PEER_SMALLEST_STEP * fabs(t));
        if (ok) {
#pragma unroll
            for (int j = 0; j < N; ++j) { u[j] = u_new[j]; k1[j] = k_next[j]; }
            t = t_new;
            accepted += 1;
        } else {
            rejected += 1;
        }
        if (t >= t_end) status = PEER_DONE;
        if (failed) status = PEER_FAILED;
        h = h_next;
        c = c_next;
    }
#pragma unroll
    for (int j = 0; j < N; ++j) u_out[j * n + i] = u[j];
    t_out[i] = t;
    accepted_out[i] = accepted;
    rejected_out[i] = rejected;
    status_out[i] = status;
}

// The kernel of a model M and a method: NAME without saveat, NAME_saveat with.
#define PEER_KERNELS(NAME, METHOD, M)                                                          \
    extern "C" __global__ void __launch_bounds__(256) NAME(                                    \
        long long n, const double* __restrict__ u0, const double* __restrict__ p, double t0,    \
        double t_end, double rtol, double atol, long long max_steps, double save_first,        \
        double save_every, long long save_count, double* __restrict__ u,                       \
        double* __restrict__ t, long long* __restrict__ accepted,                              \
        long long* __restrict__ rejected, long long* __restrict__ status,                      \
        double* __restrict__ saved) {                                                          \
        peer_solve<METHOD<M::N>, M, false>(n, u0, p, t0, t_end, rtol, atol, max_steps,          \
                                           save_first, save_every, save_count, u, t, accepted,  \
                                           rejected, status, saved);                            \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) NAME##_saveat(                           \
        long long n, const double* __restrict__ u0, const double* __restrict__ p, double t0,    \
        double t_end, double rtol, double atol, long long max_steps, double save_first,        \
        double save_every, long long save_count, double* __restrict__ u,                       \
        double* __restrict__ t, long long* __restrict__ accepted,                              \
        long long* __restrict__ rejected, long long* __restrict__ status,                      \
        double* __restrict__ saved) {                                                          \
        peer_solve<METHOD<M::N>, M, true>(n, u0, p, t0, t_end, rtol, atol, max_steps,           \
                                          save_first, save_every, save_count, u, t, accepted,   \
                                          rejected, status, saved);                             \
    }
