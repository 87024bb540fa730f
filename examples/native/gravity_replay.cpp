// The spec's low-level cell in C++: load gravity.ptx and its sidecar, capture one launch,
// replay it 5 times; gravity accumulates (`accumulate: true`), so 5 replays give 5x the
// single-launch answer.
//
//   gravity-replay [PATH/gravity.ptx]
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <eagle/cuda/eagle_cuda.hpp>

namespace ec = eagle::cuda;

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "gravity.ptx";
    try {
        ec::Device dev = ec::Device::get(0);
        ec::LoadedVector force(path, dev);

        // The buffers the launch reads and writes, allocated before any capture begins.
        const double MU = 3.986004418e5;
        const long long N = 1024;
        std::mt19937_64 rng(2);
        std::uniform_real_distribution<double> uniform(7.0e3, 4.2e4);
        std::vector<double> position(3 * N), out(3 * N, 0.0);
        for (auto& p : position) p = uniform(rng);
        ec::DeviceBuffer d_position(dev, 3 * N * 8), d_out(dev, 3 * N * 8), d_terminated(dev, N);
        d_position.upload(position.data(), position.size() * 8);
        d_terminated.zero();
        ec::Bindings bindings{{"position", ec::ArrayView{d_position.ptr(), "float64", {3, N}}},
                              {"out", ec::ArrayView{d_out.ptr(), "float64", {3, N}}},
                              {"terminated", ec::ArrayView{d_terminated.ptr(), "bool", {N}}},
                              {"mu", MU}};

        // Record one launch, instantiate once.
        ec::Stream capture_stream = ec::Stream::create(0, /*non_blocking=*/true);
        ec::StreamCapturer capture(capture_stream);
        capture.step([&] { force.launch(bindings); }, "gravity step");
        ec::GraphExec exec = capture.end().instantiate();

        // Replay it 5 times.
        const int replays = 5;
        d_out.zero();
        ec::Stream stream = ec::Stream::create(0);
        exec.upload(stream);
        exec.launch(stream, replays);
        stream.synchronize();
        d_out.download(out.data(), out.size() * 8);

        double worst = 0;
        for (long long i = 0; i < N; ++i) {
            const double x = position[i], y = position[N + i], z = position[2 * N + i];
            const double r = std::sqrt(x * x + y * y + z * z);
            for (int k = 0; k < 3; ++k) {
                const double once = -MU * position[k * N + i] / (r * r * r);
                worst = std::max(worst, std::fabs(out[k * N + i] - replays * once) / std::fabs(replays * once));
            }
        }
        std::printf("%d replays vs %dx the single-launch answer: max rel err = %.3e\n", replays, replays, worst);
        return worst <= 1e-12 ? 0 : 1;
    } catch (const ec::Error& e) {
        std::fprintf(stderr, "gravity-replay: %s\n", e.what());
        return 2;
    }
}
