// Rodas5P (Steinebach 2023) as hawk.ode.rodas writes it, with the model's own Jacobian
// (M::jac, written by hand) and df/dt (M::dfdt), and one LU factorisation of
// W = I / (h gamma) - J per step, shared by the eight solves. The factorisation is
// hawk.linalg.eliminate's: partial pivoting by comparing each lower row with the current
// pivot in turn (swap when strictly larger), then elimination with factor a[i][k] / a[k][k]
// (0 where the pivot is 0); the solves replay its swaps and factors on the right-hand side,
// then substitute backward. The I-controller is rodas5p_control's.
#pragma once
#include "common.cuh"

template <int N>
struct Rodas5P {
    struct Q { double u_new[N]; double g[3][N]; };

    struct LU {
        double a[N][N];       // the upper triangle (and the factors below it)
        bool swap[N][N];      // swap[k][i]: rows k and i were swapped at step k
    };

    static __device__ __forceinline__ void factor(LU& lu) {
#pragma unroll
        for (int k = 0; k < N; ++k) {
#pragma unroll
            for (int i = k + 1; i < N; ++i) {
                const bool s = fabs(lu.a[i][k]) > fabs(lu.a[k][k]);
                lu.swap[k][i] = s;
#pragma unroll
                for (int j = k; j < N; ++j) {
                    const double top = lu.a[k][j], other = lu.a[i][j];
                    lu.a[k][j] = s ? other : top;
                    lu.a[i][j] = s ? top : other;
                }
            }
            const bool pivot = k + 1 < N ? fabs(lu.a[k][k]) > 0.0 : true;
#pragma unroll
            for (int i = k + 1; i < N; ++i) {
                const double f = pivot ? lu.a[i][k] / lu.a[k][k] : 0.0;
#pragma unroll
                for (int j = k + 1; j < N; ++j) lu.a[i][j] = lu.a[i][j] - f * lu.a[k][j];
                lu.a[i][k] = f;  // kept for the solves (the elimination never reads it again)
            }
        }
    }

    static __device__ __forceinline__ void solve(const LU& lu, const double (&b)[N],
                                                 double (&x)[N]) {
        double c[N];
#pragma unroll
        for (int j = 0; j < N; ++j) c[j] = b[j];
#pragma unroll
        for (int k = 0; k < N; ++k) {
#pragma unroll
            for (int i = k + 1; i < N; ++i) {
                const double top = c[k], other = c[i];
                c[k] = lu.swap[k][i] ? other : top;
                c[i] = lu.swap[k][i] ? top : other;
            }
#pragma unroll
            for (int i = k + 1; i < N; ++i) c[i] = c[i] - lu.a[i][k] * c[k];
        }
#pragma unroll
        for (int i = N - 1; i >= 0; --i) {
            double value = c[i];
#pragma unroll
            for (int m = i + 1; m < N; ++m) value = value - lu.a[i][m] * x[m];
            x[i] = value / lu.a[i][i];
        }
    }

    template <class M>
    static __device__ __forceinline__ void attempt(const double (&u)[N], const double (&f0)[N],
                                                   double t, double h, const double* p,
                                                   double (&u_new)[N], double (&err)[N], Q& q,
                                                   double (&f_new)[N]) {
        const double GAMMA = 0.21193756319429014;
        const double A[8][7] = {
            {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
            {3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
            {2.849394379747939, 0.45842242204463923, 0.0, 0.0, 0.0, 0.0, 0.0},
            {-6.954028509809101, 2.489845061869568, -10.358996098473584, 0.0, 0.0, 0.0, 0.0},
            {2.8029986275628964, 0.5072464736228206, -0.3988312541770524, -0.04721187230404641,
             0.0, 0.0, 0.0},
            {-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
             0.030198172008377946, 0.0, 0.0},
            {-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
             0.030198172008377946, 1.0, 0.0},
            {-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
             0.030198172008377946, 1.0, 1.0}};
        const double C[8][7] = {
            {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
            {-14.155112264123755, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
            {-17.97296035885952, -2.859693295451294, 0.0, 0.0, 0.0, 0.0, 0.0},
            {147.12150275711716, -1.41221402718213, 71.68940251302358, 0.0, 0.0, 0.0, 0.0},
            {165.43517024871676, -0.4592823456491126, 42.90938336958603, -5.961986721573306,
             0.0, 0.0, 0.0},
            {24.854864614690072, -3.0009227002832186, 47.4931110020768, 5.5814197821558125,
             -0.6610691825249471, 0.0, 0.0},
            {30.91273214028599, -3.1208243349937974, 77.79954646070892, 34.28646028294783,
             -19.097331116725623, -28.087943162872662, 0.0},
            {37.80277123390563, -3.2571969029072276, 112.26918849496327, 66.9347231244047,
             -40.06618937091002, -54.66780262877968, -9.48861652309627}};
        const double NODES[8] = {0.0, 0.6358126895828704, 0.4095798393397535,
                                 0.9769306725060716, 0.4288403609558664, 1.0, 1.0, 1.0};
        const double D[8] = {0.21193756319429014, -0.42387512638858027, -0.3384627126235924,
                             1.8046452872882734, 2.325825639765069, 0.0, 0.0, 0.0};
        const double H[3][8] = {
            {25.948786856663858, -2.5579724845846235, 10.433815404888879, -2.3679251022685204,
             0.524948541321073, 1.1241088310450404, 0.4272876194431874, -0.17202221070155493},
            {-9.91568850695171, -0.9689944594115154, 3.0438037242978453, -24.495224566215796,
             20.176138334709044, 15.98066361424651, -6.789040303419874, -6.710236069923372},
            {11.419903575922262, 2.8879645146136994, 72.92137995996029, 80.12511834622643,
             -52.072871366152654, -59.78993625266729, -0.15582684282751913, 4.883087185713722}};
        LU lu;
        M::jac(u, t, p, lu.a);
        const double scale = 1.0 / (h * GAMMA);
#pragma unroll
        for (int r = 0; r < N; ++r)
#pragma unroll
            for (int c = 0; c < N; ++c) lu.a[r][c] = (r == c ? scale : 0.0) - lu.a[r][c];
        factor(lu);
        double dt_term[N], rhs[N], ks[8][N], y[N], du[N];
        M::dfdt(u, t, p, dt_term);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            dt_term[j] = h * dt_term[j];
            rhs[j] = f0[j] + D[0] * dt_term[j];
        }
        solve(lu, rhs, ks[0]);
#pragma unroll
        for (int s = 1; s < 8; ++s) {
#pragma unroll
            for (int j = 0; j < N; ++j) {
                double a = 0.0 * u[j];
#pragma unroll
                for (int i = 0; i < s; ++i)
                    if (A[s][i] != 0.0) a = a + A[s][i] * ks[i][j];
                y[j] = u[j] + a;
            }
            M::f(y, t + NODES[s] * h, p, du);
#pragma unroll
            for (int j = 0; j < N; ++j) {
                double c = 0.0 * u[j];
#pragma unroll
                for (int i = 0; i < s; ++i)
                    if (C[s][i] != 0.0) c = c + C[s][i] * ks[i][j];
                rhs[j] = du[j] + D[s] * dt_term[j] + c / h;
            }
            solve(lu, rhs, ks[s]);
        }
#pragma unroll
        for (int j = 0; j < N; ++j) {
            double a = 0.0 * u[j];
#pragma unroll
            for (int i = 0; i < 7; ++i)
                if (A[7][i] != 0.0) a = a + A[7][i] * ks[i][j];
            u_new[j] = u[j] + a + ks[7][j];
            err[j] = ks[7][j];
            q.u_new[j] = u_new[j];
#pragma unroll
            for (int g = 0; g < 3; ++g) {
                double sum = 0.0 * u[j];
#pragma unroll
                for (int i = 0; i < 8; ++i)
                    if (H[g][i] != 0.0) sum = sum + H[g][i] * ks[i][j];
                q.g[g][j] = sum;
            }
        }
        M::f(u_new, t + h, p, f_new);
    }

    static __device__ __forceinline__ void value(const double (&u)[N], double h, const Q& q,
                                                 double theta, double (&out)[N]) {
        const double rest = 1.0 - theta;
#pragma unroll
        for (int j = 0; j < N; ++j)
            out[j] = rest * u[j] + theta * (q.u_new[j] + rest * (q.g[0][j] + theta * (
                q.g[1][j] + theta * q.g[2][j])));
    }

    static __device__ __forceinline__ double control(double err_norm, double h, double c,
                                                     bool* accepted, double* c_next) {
        const double FAC_MIN = 0.2, FAC_MAX = 6.0, SAFE = 0.9;
        double fac = peer_min(FAC_MAX, peer_max(FAC_MIN, SAFE * pow(err_norm, -0.2)));
        *accepted = err_norm <= 1.0;
        if (c < 0.0) fac = peer_min(fac, 1.0);
        if (*accepted) {
            *c_next = 1.0;
            return h * fac;
        }
        *c_next = -1.0;
        return h * peer_min(fac, 0.9);
    }
};
