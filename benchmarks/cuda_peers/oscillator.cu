// The performance card's peer: eagle.bench's oscillator written by hand. One thread per
// sample loops up to k steps with the state in registers and stops by itself (t >= t_end, the
// device-side stop), then writes back; a sample still running counts itself in *live. With
// k = the card's max_steps one launch finishes every sample (a graph of one kernel node);
// with a smaller k the host (or a WHILE node) launches again while *live > 0.
//
// x, v and t are read and written in place (eagle's arrays); steps (int64) counts each
// sample's steps, so a run that stops at max_steps stops each sample where eagle does.
extern "C" __global__ void __launch_bounds__(256) oscillator_steps(
    long long n, double* __restrict__ x, double* __restrict__ v, double* __restrict__ t,
    const double* __restrict__ omega, const double* __restrict__ t_end, double dt, long long k,
    long long max_steps, long long* __restrict__ steps, unsigned long long* __restrict__ live) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double xi = x[i], vi = v[i], ti = t[i];
    const double w = omega[i], end = t_end[i];
    long long taken = steps[i];
    const long long stop = taken + k < max_steps ? taken + k : max_steps;
    bool running = !(ti >= end);
    while (running && taken < stop) {
        const double x0 = xi, v0 = vi;
        xi = x0 + dt * v0;
        vi = v0 - dt * w * w * x0;
        ti += dt;
        taken += 1;
        running = !(ti >= end);
    }
    x[i] = xi;
    v[i] = vi;
    t[i] = ti;
    steps[i] = taken;
    if (running && taken < max_steps) atomicAdd(live, 1ull);
}
