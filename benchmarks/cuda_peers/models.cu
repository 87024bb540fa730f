// The workloads of benchmarks/gpu_ode_peers.py, each a model struct (N states, P parameters
// per trajectory, f = du/dt written as the benchmark's @hawk.func writes it) and its kernels:
//
//   lorenz_tsit5[_saveat]      Lorenz, Tsitouras 5(4)
//   kepler_dopri5[_saveat]     the two-body problem (6 states), Dormand-Prince 5(4)
//   fpu16_tsit5[_saveat]       an FPU-beta chain of 8 masses (16 states), Tsitouras 5(4)
//   robertson_rodas5p[_saveat] Robertson's stiff kinetics, Rodas5P with a hand-written
//                              Jacobian
#include "common.cuh"
#include "erk.cuh"
#include "rodas5p.cuh"
#include "solve.cuh"

struct Lorenz {  // p = (sigma, rho, beta)
    static constexpr int N = 3, P = 3;
    static __device__ __forceinline__ void f(const double (&u)[3], double t, const double* p,
                                             double (&du)[3]) {
        du[0] = p[0] * (u[1] - u[0]);
        du[1] = u[0] * (p[1] - u[2]) - u[1];
        du[2] = u[0] * u[1] - p[2] * u[2];
    }
};

struct Kepler {  // u = (x, y, z, vx, vy, vz), p = mu
    static constexpr int N = 6, P = 1;
    static __device__ __forceinline__ void f(const double (&u)[6], double t, const double* p,
                                             double (&du)[6]) {
        const double r = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        const double d = p[0] / (r * r * r);
        du[0] = u[3];
        du[1] = u[4];
        du[2] = u[5];
        du[3] = -d * u[0];
        du[4] = -d * u[1];
        du[5] = -d * u[2];
    }
};

// The force on a mass at b between neighbours at a and c: linear springs plus beta times the
// cubic terms (the Fermi-Pasta-Ulam-Tsingou beta chain, both ends fixed at 0).
__device__ __forceinline__ double fpu_force(double a, double b, double c, double beta) {
    const double l = b - a;
    const double r = c - b;
    return (r - l) + beta * (r * r * r - l * l * l);
}

struct Fpu16 {  // u = (x0..x7, v0..v7), p = beta
    static constexpr int N = 16, P = 1;
    static __device__ __forceinline__ void f(const double (&u)[16], double t, const double* p,
                                             double (&du)[16]) {
#pragma unroll
        for (int j = 0; j < 8; ++j) du[j] = u[8 + j];
        du[8] = fpu_force(0.0, u[0], u[1], p[0]);
#pragma unroll
        for (int j = 1; j < 7; ++j) du[8 + j] = fpu_force(u[j - 1], u[j], u[j + 1], p[0]);
        du[15] = fpu_force(u[6], u[7], 0.0, p[0]);
    }
};

struct Robertson {  // p = (k0, k1, k2), the three rates
    static constexpr int N = 3, P = 3;
    static __device__ __forceinline__ void f(const double (&u)[3], double t, const double* p,
                                             double (&du)[3]) {
        const double r1 = p[0] * u[0];
        const double r2 = p[1] * u[1] * u[1];
        const double r3 = p[2] * u[1] * u[2];
        du[0] = -r1 + r3;
        du[1] = r1 - r2 - r3;
        du[2] = r2;
    }
    // df/du, by hand
    static __device__ __forceinline__ void jac(const double (&u)[3], double t, const double* p,
                                               double (&j)[3][3]) {
        j[0][0] = -p[0];
        j[0][1] = p[2] * u[2];
        j[0][2] = p[2] * u[1];
        j[1][0] = p[0];
        j[1][1] = -(2.0 * p[1] * u[1]) - p[2] * u[2];
        j[1][2] = -(p[2] * u[1]);
        j[2][0] = 0.0;
        j[2][1] = 2.0 * p[1] * u[1];
        j[2][2] = 0.0;
    }
    static __device__ __forceinline__ void dfdt(const double (&u)[3], double t, const double* p,
                                                double (&out)[3]) {
        out[0] = 0.0;
        out[1] = 0.0;
        out[2] = 0.0;
    }
};

PEER_KERNELS(lorenz_tsit5, Tsit5, Lorenz)
PEER_KERNELS(kepler_dopri5, Dopri5, Kepler)
PEER_KERNELS(fpu16_tsit5, Tsit5, Fpu16)
PEER_KERNELS(robertson_rodas5p, Rodas5P, Robertson)
