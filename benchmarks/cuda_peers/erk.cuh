// Tsitouras 5(4) and Dormand-Prince 5(4), as hawk.ode.tsit5 and hawk.ode.dopri5 write them:
// the same coefficients (the same literals), the same order of every sum, Hairer's PI
// controller with DOPRI5's exponents for both. A method is a struct: its interpolant's data Q,
// attempt() (one step of size h from u at t, given k1 = f(u, t)), value() (the interpolant at
// t + theta h) and control() (accept or reject, the next step).
#pragma once
#include "common.cuh"

#define PEER_DP_BETA 0.04
#define PEER_DP_EXPO (0.2 - 0.75 * PEER_DP_BETA)

template <int N>
struct Tsit5 {
    struct Q { double k[7][N]; };

    template <class M>
    static __device__ __forceinline__ void attempt(const double (&u)[N], const double (&k1)[N],
                                                   double t, double h, const double* p,
                                                   double (&u_new)[N], double (&err)[N], Q& q,
                                                   double (&k7)[N]) {
        const double C2 = 0.161, C3 = 0.327, C4 = 0.9, C5 = 0.9800255409045097;
        const double A21 = 0.161;
        const double A31 = -0.008480655492356989, A32 = 0.335480655492357;
        const double A41 = 2.8971530571054935, A42 = -6.359448489975075, A43 = 4.3622954328695815;
        const double A51 = 5.325864828439257, A52 = -11.748883564062828, A53 = 7.4955393428898365,
                     A54 = -0.09249506636175525;
        const double A61 = 5.86145544294642, A62 = -12.92096931784711, A63 = 8.159367898576159,
                     A64 = -0.071584973281401, A65 = -0.028269050394068383;
        const double B1 = 0.09646076681806523, B2 = 0.01, B3 = 0.4798896504144996,
                     B4 = 1.379008574103742, B5 = -3.290069515436081, B6 = 2.324710524099774;
        const double E1 = 0.0017800110522257773, E2 = 0.0008164344596567463,
                     E3 = -0.007880878010261994, E4 = 0.1447110071732629,
                     E5 = -0.5823571654525552, E6 = 0.45808210592918686, E7 = -1.0 / 66.0;
        double (&k)[7][N] = q.k;
        double y[N];
#pragma unroll
        for (int j = 0; j < N; ++j) { k[0][j] = k1[j]; y[j] = u[j] + h * (A21 * k[0][j]); }
        M::f(y, t + C2 * h, p, k[1]);
#pragma unroll
        for (int j = 0; j < N; ++j) y[j] = u[j] + h * (A31 * k[0][j] + A32 * k[1][j]);
        M::f(y, t + C3 * h, p, k[2]);
#pragma unroll
        for (int j = 0; j < N; ++j)
            y[j] = u[j] + h * (A41 * k[0][j] + A42 * k[1][j] + A43 * k[2][j]);
        M::f(y, t + C4 * h, p, k[3]);
#pragma unroll
        for (int j = 0; j < N; ++j)
            y[j] = u[j] + h * (A51 * k[0][j] + A52 * k[1][j] + A53 * k[2][j] + A54 * k[3][j]);
        M::f(y, t + C5 * h, p, k[4]);
#pragma unroll
        for (int j = 0; j < N; ++j)
            y[j] = u[j] + h * (A61 * k[0][j] + A62 * k[1][j] + A63 * k[2][j] + A64 * k[3][j]
                               + A65 * k[4][j]);
        M::f(y, t + h, p, k[5]);
#pragma unroll
        for (int j = 0; j < N; ++j)
            u_new[j] = u[j] + h * (B1 * k[0][j] + B2 * k[1][j] + B3 * k[2][j] + B4 * k[3][j]
                                   + B5 * k[4][j] + B6 * k[5][j]);
        M::f(u_new, t + h, p, k[6]);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            k7[j] = k[6][j];
            err[j] = h * (E1 * k[0][j] + E2 * k[1][j] + E3 * k[2][j] + E4 * k[3][j]
                          + E5 * k[4][j] + E6 * k[5][j] + E7 * k[6][j]);
        }
    }

    static __device__ __forceinline__ void value(const double (&u)[N], double h, const Q& q,
                                                 double s, double (&out)[N]) {
        const double s2 = s * s;
        const double b1 = -1.0530884977290216 * s * (s - 1.3299890189751412) * (
            s2 - 1.4364028541716351 * s + 0.7139816917074209);
        const double b2 = 0.1017 * s2 * (s2 - 2.1966568338249754 * s + 1.2949852507374631);
        const double b3 = 2.490627285651252793 * s2 * (s2 - 2.38535645472061657 * s
                                                       + 1.57803468208092486);
        const double b4 = -16.54810288924490272 * (s - 1.21712927295533244)
            * (s - 0.61620406037800089) * s2;
        const double b5 = 47.37952196281928122 * (s - 1.203071208372362603)
            * (s - 0.658047292653547382) * s2;
        const double b6 = -34.87065786149660974 * (s - 1.2) * (s - 0.666666666666666667) * s2;
        const double b7 = 2.5 * (s - 1.0) * (s - 0.6) * s2;
#pragma unroll
        for (int j = 0; j < N; ++j)
            out[j] = u[j] + h * (b1 * q.k[0][j] + b2 * q.k[1][j] + b3 * q.k[2][j]
                                 + b4 * q.k[3][j] + b5 * q.k[4][j] + b6 * q.k[5][j]
                                 + b7 * q.k[6][j]);
    }

    static __device__ __forceinline__ double control(double err_norm, double h, double c,
                                                     bool* accepted, double* c_next) {
        return peer_pi_control(err_norm, h, c, PEER_DP_EXPO, PEER_DP_BETA, accepted, c_next);
    }
};

template <int N>
struct Dopri5 {
    struct Q { double q[4][N]; };  // the quartic interpolant's coefficients

    template <class M>
    static __device__ __forceinline__ void attempt(const double (&u)[N], const double (&k1)[N],
                                                   double t, double h, const double* p,
                                                   double (&u_new)[N], double (&err)[N], Q& q,
                                                   double (&k7)[N]) {
        const double C2 = 1.0 / 5, C3 = 3.0 / 10, C4 = 4.0 / 5, C5 = 8.0 / 9;
        const double A21 = 1.0 / 5;
        const double A31 = 3.0 / 40, A32 = 9.0 / 40;
        const double A41 = 44.0 / 45, A42 = -56.0 / 15, A43 = 32.0 / 9;
        const double A51 = 19372.0 / 6561, A52 = -25360.0 / 2187, A53 = 64448.0 / 6561,
                     A54 = -212.0 / 729;
        const double A61 = 9017.0 / 3168, A62 = -355.0 / 33, A63 = 46732.0 / 5247,
                     A64 = 49.0 / 176, A65 = -5103.0 / 18656;
        const double B1 = 35.0 / 384, B3 = 500.0 / 1113, B4 = 125.0 / 192,
                     B5 = -2187.0 / 6784, B6 = 11.0 / 84;
        const double E1 = -71.0 / 57600, E3 = 71.0 / 16695, E4 = -71.0 / 1920,
                     E5 = 17253.0 / 339200, E6 = -22.0 / 525, E7 = 1.0 / 40;
        const double P11 = 1.0, P12 = -8048581381.0 / 2820520608,
                     P13 = 8663915743.0 / 2820520608, P14 = -12715105075.0 / 11282082432;
        const double P32 = 131558114200.0 / 32700410799, P33 = -68118460800.0 / 10900136933,
                     P34 = 87487479700.0 / 32700410799;
        const double P42 = -1754552775.0 / 470086768, P43 = 14199869525.0 / 1410260304,
                     P44 = -10690763975.0 / 1880347072;
        const double P52 = 127303824393.0 / 49829197408, P53 = -318862633887.0 / 49829197408,
                     P54 = 701980252875.0 / 199316789632;
        const double P62 = -282668133.0 / 205662961, P63 = 2019193451.0 / 616988883,
                     P64 = -1453857185.0 / 822651844;
        const double P72 = 40617522.0 / 29380423, P73 = -110615467.0 / 29380423,
                     P74 = 69997945.0 / 29380423;
        double k2[N], k3[N], k4[N], k5[N], k6[N], y[N];
#pragma unroll
        for (int j = 0; j < N; ++j) y[j] = u[j] + h * (A21 * k1[j]);
        M::f(y, t + C2 * h, p, k2);
#pragma unroll
        for (int j = 0; j < N; ++j) y[j] = u[j] + h * (A31 * k1[j] + A32 * k2[j]);
        M::f(y, t + C3 * h, p, k3);
#pragma unroll
        for (int j = 0; j < N; ++j) y[j] = u[j] + h * (A41 * k1[j] + A42 * k2[j] + A43 * k3[j]);
        M::f(y, t + C4 * h, p, k4);
#pragma unroll
        for (int j = 0; j < N; ++j)
            y[j] = u[j] + h * (A51 * k1[j] + A52 * k2[j] + A53 * k3[j] + A54 * k4[j]);
        M::f(y, t + C5 * h, p, k5);
#pragma unroll
        for (int j = 0; j < N; ++j)
            y[j] = u[j] + h * (A61 * k1[j] + A62 * k2[j] + A63 * k3[j] + A64 * k4[j]
                               + A65 * k5[j]);
        M::f(y, t + h, p, k6);
#pragma unroll
        for (int j = 0; j < N; ++j)
            u_new[j] = u[j] + h * (B1 * k1[j] + B3 * k3[j] + B4 * k4[j] + B5 * k5[j]
                                   + B6 * k6[j]);
        M::f(u_new, t + h, p, k7);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            err[j] = h * (E1 * k1[j] + E3 * k3[j] + E4 * k4[j] + E5 * k5[j] + E6 * k6[j]
                          + E7 * k7[j]);
            q.q[0][j] = P11 * k1[j];
            q.q[1][j] = P12 * k1[j] + P32 * k3[j] + P42 * k4[j] + P52 * k5[j] + P62 * k6[j]
                        + P72 * k7[j];
            q.q[2][j] = P13 * k1[j] + P33 * k3[j] + P43 * k4[j] + P53 * k5[j] + P63 * k6[j]
                        + P73 * k7[j];
            q.q[3][j] = P14 * k1[j] + P34 * k3[j] + P44 * k4[j] + P54 * k5[j] + P64 * k6[j]
                        + P74 * k7[j];
        }
    }

    static __device__ __forceinline__ void value(const double (&u)[N], double h, const Q& q,
                                                 double theta, double (&out)[N]) {
#pragma unroll
        for (int j = 0; j < N; ++j)
            out[j] = u[j] + (h * theta) * (q.q[0][j] + theta * (q.q[1][j] + theta * (
                q.q[2][j] + theta * q.q[3][j])));
    }

    static __device__ __forceinline__ double control(double err_norm, double h, double c,
                                                     bool* accepted, double* c_next) {
        return peer_pi_control(err_norm, h, c, PEER_DP_EXPO, PEER_DP_BETA, accepted, c_next);
    }
};
