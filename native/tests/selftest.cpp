// eagle::cuda's self-test, run by ctest against the stand-in libcuda (EAGLE_LIBCUDA) with the
// host-module kernels of tests/fakecuda/test_kernels.cpp. Prints one line per check and exits
// 0 when every check passed.
//
//   selftest [--kernels HOST_MODULE.so | test_kernels.ptx]   (default: $EAGLE_TEST_KERNELS)
//
// On a real GPU (EAGLE_LIBCUDA unset) pass the PTX of tests/test_kernels.cu: the same checks
// then run on the device (the stand-in's own checks are skipped).
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "checks.hpp"
#include "eagle/cuda/eagle_cuda.hpp"

namespace ec = eagle::cuda;
using checks::counter;
using checks::expect;
using checks::failures;
using checks::standin;
using checks::throws;

int main(int argc, char** argv) {
    std::string kernels = std::getenv("EAGLE_TEST_KERNELS") ? std::getenv("EAGLE_TEST_KERNELS") : "";
    for (int k = 1; k + 1 < argc; ++k)
        if (std::strcmp(argv[k], "--kernels") == 0) kernels = argv[k + 1];

    const std::string reason = ec::unavailable_reason();
    expect(reason.empty(), "a usable device (" + (reason.empty() ? ec::driver_library() : reason) + ")");
    if (!reason.empty()) return 2;
    ec::Device dev = ec::Device::get(0);
    ec::DeviceInfo info = dev.info();
    std::printf("     device 0: %s, %s, %d SMs, driver %d, WHILE nodes: %s\n", info.name.c_str(), info.arch.c_str(),
                info.multiprocessors, info.driver_version, info.supports_while_nodes ? "yes" : "no");
    expect(counter("refused versions") <= 0, "every entry point resolved at the version of its typedef");
    if (void* h = standin()) {
        // The stand-in refuses an entry point asked at another version than it implements.
        using Gpa = int (*)(const char*, void**, int, unsigned long long, int*);
        auto gpa = reinterpret_cast<Gpa>(dlsym(h, "cuGetProcAddress_v2"));
        void* fn = nullptr;
        int status = 0;
        const int rc = gpa("cuGraphAddNode", &fn, 12020, 0, &status);
        expect(rc == 1 && fn == nullptr && status == 2, "the stand-in refuses cuGraphAddNode asked at 12020");
        const char* log = reinterpret_cast<const char* (*)()>(dlsym(h, "fakecuda_log"))();
        expect(std::strstr(log, "cuGetProcAddress(cuGraphAddNode@12020) -> CUDA_ERROR_INVALID_VALUE") != nullptr,
               "its call log says so");
    }
    expect(ec::sha256_hex("abc", 3) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
           "SHA-256 of 'abc'");

    // memory
    const long long n = 1000;
    std::vector<double> host(n), back(n);
    for (long long i = 0; i < n; ++i) host[i] = 0.5 + i;
    ec::DeviceBuffer in(dev, n * 8), out(dev, n * 8);
    in.upload(host.data(), n * 8);
    in.download(back.data(), n * 8);
    expect(back == host, "a buffer round trip");
    expect(!throws<ec::ArgumentError>([&] { in.upload(host.data(), n * 8 + 8); }).empty(), "a copy past the end is refused");

    if (kernels.empty()) {
        std::printf("     no --kernels host module: the launch checks are skipped\n");
        return failures ? 1 : 0;
    }
    // A .ptx file (test_kernels.cu through NVRTC, for a real GPU), else a host module for the
    // stand-in (tests/fakecuda/test_kernels.cpp).
    std::string image = "EAGLE-HOST-MODULE\n" + kernels;
    if (kernels.size() > 4 && kernels.compare(kernels.size() - 4, 4, ".ptx") == 0) {
        std::ifstream in(kernels, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        image = text.str();
    }
    ec::Module module = ec::Module::load(dev, image.c_str(), image.size() + 1);
    ec::Function scale_add = module.function("scale_add");
    ec::Launcher launcher(scale_add, {ec::ArgType::Ptr, ec::ArgType::Ptr, ec::ArgType::F64, ec::ArgType::I64}, 256);
    const unsigned grid = static_cast<unsigned>((n + 255) / 256);
    auto args = [&](double a) {
        return std::vector<ec::Value>{ec::Value::pointer(out.ptr()), ec::Value::pointer(in.ptr()), a, n};
    };

    // one eager launch
    out.zero();
    ec::Stream stream = ec::Stream::create(0, true);
    launcher.launch(grid, args(2.0), &stream);
    stream.synchronize();
    out.download(back.data(), n * 8);
    bool once = true;
    for (long long i = 0; i < n; ++i) once &= back[i] == 2.0 * host[i];
    expect(once, "one eager launch computes out += 2 in");

    // capture one launch, replay 5 times
    out.zero();
    const long long ran = counter("kernels run");
    ec::GraphExec exec = [&] {
        ec::StreamCapturer capture(stream);
        capture.step([&] { launcher.launch(grid, args(1.5)); }, "scale_add step");
        return capture.end().instantiate();
    }();
    expect(counter("kernels run") == ran, "nothing runs while capturing");
    ec::Stream replay = ec::Stream::create(0);
    exec.upload(replay);
    exec.launch(replay, 5);
    replay.synchronize();
    out.download(back.data(), n * 8);
    double worst = 0;
    for (long long i = 0; i < n; ++i) worst = std::max(worst, std::fabs(back[i] - 5 * 1.5 * host[i]) / (5 * 1.5 * host[i]));
    char line[128];
    std::snprintf(line, sizeof line, "5 replays of a captured launch = 5x one launch (max rel err %.3e)", worst);
    expect(worst <= 1e-12, line);

    // a fork and a join inside one capture (GraphComposer's shape): a second stream joins the
    // capture by waiting on an event recorded in it, and rejoins before the end
    {
        ec::Stream side = ec::Stream::create(0, true);
        ec::DeviceBuffer out2(dev, n * 8);
        ec::Event fork = ec::Event::create(0), join = ec::Event::create(0);
        out.zero();
        out2.zero();
        ec::GraphExec forked = [&] {
            ec::StreamCapturer capture(stream);
            fork.record(stream);
            side.wait(fork);
            launcher.launch(grid, args(1.0), &stream);
            launcher.launch(grid, {ec::Value::pointer(out2.ptr()), ec::Value::pointer(in.ptr()), 2.0, n}, &side);
            join.record(side);
            stream.wait(join);
            ec::Graph g = capture.end();
            expect(g.node_count() == 2, "the forked capture holds both launches");
            return g.instantiate();
        }();
        forked.launch(replay);
        replay.synchronize();
        std::vector<double> back2(n);
        out.download(back.data(), n * 8);
        out2.download(back2.data(), n * 8);
        bool both = true;
        for (long long i = 0; i < n; ++i) both &= back[i] == host[i] && back2[i] == 2.0 * host[i];
        expect(both, "one replay runs both branches of the fork");
    }

    // capture rules
    std::string why = throws<ec::CaptureError>([&] {
        ec::StreamCapturer capture(stream);
        capture.step([&] { ec::DeviceBuffer scratch(dev, 64); }, "an allocating step");
    });
    expect(why.find("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") != std::string::npos && why.find("cuMemAlloc") != std::string::npos,
           "an allocation inside a capture is a CaptureError naming cuMemAlloc: " + why);
    why = throws<ec::CaptureError>([&] {
        ec::StreamCapturer capture(stream);
        capture.step([&] { launcher.launch(grid, args(1.0)); launcher.launch(grid, args(1.0)); }, "a double step");
    });
    expect(why.find("issued 2 operations") != std::string::npos, "a step with two launches is refused: " + why);
    expect(stream.capture_status() == ec::CaptureStatus::None, "the stream is usable after a failed capture");
    launcher.launch(grid, args(0.0), &stream);
    stream.synchronize();

    // a launch with the wrong argument count (the stand-in's check: a real driver reads the
    // kernel's count of pointers and would dereference eagle's null terminator)
    if (standin()) why = throws<ec::CudaError>([&] {
        ec::Launcher wrong(scale_add, {ec::ArgType::Ptr, ec::ArgType::Ptr, ec::ArgType::F64}, 256);
        wrong.launch(grid, {ec::Value::pointer(out.ptr()), ec::Value::pointer(in.ptr()), 1.0}, &stream);
    });
    if (standin())
        expect(why.find("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE") == 0, "a launch missing an argument: " + why);

    // a WHILE loop: countdown from 10, then from 3 (the default condition 1 at each launch)
    if (info.supports_while_nodes) {
        ec::Function countdown = module.function("countdown");
        ec::DeviceBuffer flag(dev, 8);
        ec::WhileLoop loop(dev, 1, true);
        ec::KernelArgs cargs({ec::ArgType::Ptr, ec::ArgType::U64},
                             {ec::Value::pointer(flag.ptr()), ec::Value(static_cast<unsigned long long>(loop.handle()))});
        loop.body().add_kernel(countdown, 1, 1, cargs);
        ec::GraphExec wexec = loop.instantiate();
        long long value = 10;
        flag.upload(&value, 8);
        const long long before = counter("kernels run");
        wexec.launch(replay);
        replay.synchronize();
        flag.download(&value, 8);
        expect(value == 0 && counter("kernels run") - before == 10, "WHILE { countdown } from 10: 10 iterations, flag 0");
        value = 3;
        flag.upload(&value, 8);
        wexec.launch(replay);
        replay.synchronize();
        flag.download(&value, 8);
        expect(value == 0 && counter("kernels run") - before == 13, "a second launch from 3: 3 iterations");

        // repeat_while: a captured body (flag -= 1) repeated while the flag is nonzero, the
        // iterations counted by the embedded condition kernels; then again with a limit
        ec::Function decrement = module.function("decrement");
        ec::Launcher dec(decrement, {ec::ArgType::Ptr}, 1);
        ec::DeviceBuffer counter(dev, 8);
        ec::Graph body = [&] {
            ec::StreamCapturer capture(stream);
            capture.step([&] { dec.launch(1, {ec::Value::pointer(flag.ptr())}); }, "decrement");
            return capture.end();
        }();
        for (long long limit : {-1LL, 3LL}) {
            ec::GraphExec repeat = ec::repeat_while(dev, body, flag.ptr(), "int64", counter.ptr(), limit);
            long long start = 7, zero = 0, iterations = 0;
            flag.upload(&start, 8);
            counter.upload(&zero, 8);
            repeat.launch(replay);
            replay.synchronize();
            flag.download(&value, 8);
            counter.download(&iterations, 8);
            const long long expected = limit < 0 ? 7 : limit;
            expect(iterations == expected && value == 7 - expected,
                   "repeat_while from 7, limit " + std::to_string(limit) + ": " + std::to_string(iterations) +
                       " iterations, flag " + std::to_string(value));
        }

        // CUDA refuses a conditional node inside a child graph
        // (at instantiation on the stand-in; the device says where the driver refuses it)
        why = throws<ec::CudaError>([&] {
            ec::Graph outer;
            outer.add_child(loop.graph());
            outer.instantiate();
        });
        expect(why.find("cuGraphInstantiateWithFlags failed") == 0 || why.find("cuGraphAddChildGraphNode failed") == 0,
               "a WHILE inside a child graph is refused: " + why);
    }

    // release from another thread
    {
        ec::Stream other = ec::Stream::create(0, true);
        std::thread t([s = std::move(other)]() mutable { s = ec::Stream::wrap(0, 0); });
        t.join();
        expect(true, "a stream released on another thread");
    }

    // artifacts
    why = throws<ec::ArtifactError>([] { ec::Artifact::read("/nonexistent/k.ptx"); });
    expect(why.find("cannot read the artifact /nonexistent/k.ptx") == 0, "a missing artifact: " + why);

    std::printf("%s\n", failures ? "selftest: FAILED" : "selftest: all checks passed");
    return failures ? 1 : 0;
}
