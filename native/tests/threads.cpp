// eagle::cuda handles released on another thread than the one that made them, and by several
// threads at once, run by ctest against the stand-in libcuda (EAGLE_LIBCUDA) with the host-module
// kernels of tests/fakecuda/test_kernels.cpp. Python's finalisers run on whichever thread drops
// the last reference, and a C++ consumer hands streams and graphs between threads, so every
// handle must release cleanly from a thread that never touched CUDA (no current context: the
// destructor pushes the handle's context for the call and pops it after), and the last of
// several concurrent copies must release exactly once.
//
// Checked through the stand-in's counters: after each part, every live stream, event, module,
// graph, executable graph, device and host block and open capture is back to where it was, and
// no release failed (a double free, a release with no context, a capturing stream destroyed).
//
//   threads --kernels HOST_MODULE.so
//
// Prints one line per check; exits 0 when every check passed.
#include <dlfcn.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
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

namespace {

// The stand-in's cuCtxGetCurrent (through cuGetProcAddress, as the layer gets it): what is
// current on the calling thread.
void* current_context() {
    using Gpa = int (*)(const char*, void**, int, unsigned long long, int*);
    auto gpa = reinterpret_cast<Gpa>(dlsym(standin(), "cuGetProcAddress_v2"));
    void* fn = nullptr;
    int status = 0;
    gpa("cuCtxGetCurrent", &fn, 4000, 0, &status);
    void* ctx = nullptr;
    reinterpret_cast<int (*)(void**)>(fn)(&ctx);
    return ctx;
}

const char* kLive[] = {"streams", "events", "modules", "graphs", "execs", "allocations", "host blocks", "captures"};

struct Census {
    std::vector<long long> counts;
    Census() {
        for (const char* name : kLive) counts.push_back(counter(name));
    }
    // "" when nothing is alive that was not before, else what is (and what was released twice).
    std::string leaks() const {
        std::string out;
        for (std::size_t k = 0; k < counts.size(); ++k) {
            const long long now = counter(kLive[k]);
            if (now != counts[k])
                out += std::string(" ") + kLive[k] + " " + std::to_string(counts[k]) + " -> " + std::to_string(now);
        }
        if (const long long failed = counter("failed releases"))
            out += " failed releases " + std::to_string(failed);
        return out;
    }
};

// A countdown latch: every thread waits until all have arrived (C++17 has no std::latch).
class Gate {
public:
    explicit Gate(int count) : left_(count) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> hold(lock_);
        if (--left_ == 0) opened_.notify_all();
        opened_.wait(hold, [&] { return left_ == 0; });
    }

private:
    std::mutex lock_;
    std::condition_variable opened_;
    int left_;
};

constexpr long long kSamples = 300;
constexpr unsigned kBlock = 64;
constexpr unsigned kGrid = (kSamples + kBlock - 1) / kBlock;

// One of everything the layer hands out, made on the calling thread: a launch captured into a
// graph, instantiated and replayed once; a WHILE loop; a repeat_while graph.
struct Everything {
    ec::Stream blocking, non_blocking;
    ec::Event event;
    ec::Module module;
    ec::Launcher launcher;
    ec::DeviceBuffer in, out, flag, count;
    std::unique_ptr<ec::HostMapped> mapped;
    ec::Graph graph;
    ec::GraphExec exec;
    std::unique_ptr<ec::WhileLoop> loop;
    std::unique_ptr<ec::GraphExec> repeat;

    Everything(const ec::Device& dev, const std::string& image)
        : blocking(ec::Stream::create(0, false)),
          non_blocking(ec::Stream::create(0, true)),
          event(ec::Event::create(0)),
          module(ec::Module::load(dev, image.c_str(), image.size() + 1)),
          launcher(module.function("scale_add"), {ec::ArgType::Ptr, ec::ArgType::Ptr, ec::ArgType::F64, ec::ArgType::I64},
                   kBlock),
          in(dev, kSamples * 8),
          out(dev, kSamples * 8),
          flag(dev, 8),
          count(dev, 8),
          mapped(std::make_unique<ec::HostMapped>(dev, 16)),
          graph(capture()),
          exec(graph.instantiate()) {
        std::vector<double> ones(kSamples, 1.0);
        in.upload(ones.data(), kSamples * 8);
        out.zero();
        event.record(non_blocking);
        blocking.wait(event);
        exec.launch(blocking, 2);
        blocking.synchronize();
        if (dev.info().supports_while_nodes) {
            loop = std::make_unique<ec::WhileLoop>(dev, 1, true);
            ec::KernelArgs args({ec::ArgType::Ptr, ec::ArgType::U64},
                                {ec::Value::pointer(flag.ptr()), ec::Value(static_cast<unsigned long long>(loop->handle()))});
            loop->body().add_kernel(module.function("countdown"), 1, 1, args);
            repeat = std::make_unique<ec::GraphExec>(ec::repeat_while(dev, graph, flag.ptr(), "int64", count.ptr(), 2));
        }
    }

    ec::Graph capture() {
        ec::StreamCapturer capturing(non_blocking);
        capturing.step([&] { launcher.launch(kGrid, args(1.5)); }, "scale_add");
        return capturing.end();
    }

    std::vector<ec::Value> args(double a) const {
        return {ec::Value::pointer(out.ptr()), ec::Value::pointer(in.ptr()), a, kSamples};
    }

    bool out_is(double value) const {
        std::vector<double> back(kSamples);
        out.download(back.data(), kSamples * 8);
        for (double x : back)
            if (x != value) return false;
        return true;
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::string kernels;
    for (int k = 1; k + 1 < argc; ++k)
        if (std::strcmp(argv[k], "--kernels") == 0) kernels = argv[k + 1];
    const std::string reason = ec::unavailable_reason();  // loads the driver (the stand-in)
    if (!reason.empty() || !standin() || kernels.empty()) {
        std::printf("threads: needs the stand-in libcuda (EAGLE_LIBCUDA) and --kernels HOST_MODULE.so\n");
        return 2;
    }
    const std::string image = "EAGLE-HOST-MODULE\n" + kernels;
    ec::Device dev = ec::Device::get(0);
    // What the layer makes once and keeps (eagle's default stream, the condition kernels'
    // module): made before any count is taken.
    Everything(dev, image);

    // 1. Made here, released on a thread that never touched CUDA.
    {
        const Census before;
        auto all = std::make_unique<Everything>(dev, image);
        expect(all->out_is(3.0), "two replays of a captured launch on the making thread: out = 2 x 1.5");
        void* context_after = reinterpret_cast<void*>(1);
        std::thread([&all, &context_after] {
            all.reset();
            context_after = current_context();
        }).join();
        expect(before.leaks().empty(), "every handle released on another thread, once:" + before.leaks());
        expect(context_after == nullptr, "the releasing thread is left with no context, as it was");
    }

    // 2. Copies of the same handles on several threads, the last copy dropped by whichever
    // thread gets there last, all at once; before that, each thread makes, runs and releases
    // its own stream, buffer, capture and graph, concurrently with the others.
    {
        const Census before;
        constexpr int kThreads = 8;
        constexpr int kRounds = 20;
        struct Copies {
            ec::Stream stream;
            ec::Graph graph;
            ec::GraphExec exec;
            ec::Module module;
            ec::Launcher launcher;
        };
        auto shared = std::make_unique<Everything>(dev, image);
        const std::uint64_t in = shared->in.ptr();
        Gate start(kThreads), done(kThreads + 1), drop(kThreads + 1);
        std::atomic<int> right{0}, errors{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            auto copies = std::make_unique<Copies>(
                Copies{shared->non_blocking, shared->graph, shared->exec, shared->module, shared->launcher});
            threads.emplace_back([&, t, copies = std::move(copies)]() mutable {
                try {
                    start.arrive_and_wait();
                    for (int round = 0; round < kRounds; ++round) {
                        ec::Stream mine = ec::Stream::create(0, true);  // eagle captures on non-blocking streams
                        ec::DeviceBuffer out(dev, kSamples * 8);
                        out.zero();
                        ec::Launcher own(copies->module.function("scale_add"), copies->launcher.types(), kBlock);
                        ec::GraphExec replay = [&] {
                            ec::StreamCapturer capturing(mine);
                            capturing.step([&] {
                                own.launch(kGrid, {ec::Value::pointer(out.ptr()), ec::Value::pointer(in), double(t + 1),
                                                   kSamples});
                            }, "scale_add");
                            return capturing.end().instantiate();
                        }();
                        replay.launch(mine, 3);
                        mine.synchronize();
                        std::vector<double> back(kSamples);
                        out.download(back.data(), kSamples * 8);
                        bool ok = true;
                        for (double x : back) ok &= x == 3.0 * (t + 1);
                        right += ok;
                    }
                } catch (const std::exception& e) {
                    std::printf("     thread %d: %s\n", t, e.what());
                    ++errors;
                }
                done.arrive_and_wait();
                drop.arrive_and_wait();  // the owner has let go: these copies are the last ones
                copies.reset();
            });
        }
        done.arrive_and_wait();
        shared.reset();
        drop.arrive_and_wait();
        for (auto& th : threads) th.join();
        expect(errors == 0 && right == kThreads * kRounds,
               std::to_string(kThreads) + " threads each capture, replay and release their own graphs: " +
                   std::to_string(right.load()) + " of " + std::to_string(kThreads * kRounds) + " right");
        expect(before.leaks().empty(), "shared copies dropped by several threads at once, released once:" + before.leaks());
    }

    // 3. Many handles made on one thread, released concurrently by several others (each takes
    // a share; Python's finalisers on whatever threads drop the last references).
    {
        const Census before;
        constexpr int kThreads = 6;
        std::vector<std::unique_ptr<Everything>> made;
        for (int k = 0; k < 2 * kThreads; ++k) made.push_back(std::make_unique<Everything>(dev, image));
        Gate go(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            std::vector<std::unique_ptr<Everything>> share;
            share.push_back(std::move(made[2 * t]));
            share.push_back(std::move(made[2 * t + 1]));
            threads.emplace_back([&go, share = std::move(share)]() mutable {
                go.arrive_and_wait();
                share.clear();
            });
        }
        for (auto& th : threads) th.join();
        expect(before.leaks().empty(), std::to_string(2 * kThreads) + " sets released by " + std::to_string(kThreads) +
                                           " threads at once:" + before.leaks());
    }

    // 4. A capture left open and destroyed on another thread. In RELAXED mode the driver lets
    // any thread end it: it ends, the stream is released, and the thread that began it finds
    // its current stream back to what it was. In THREAD_LOCAL mode (the default) only the
    // beginning thread may end it (cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD):
    // the destructor must still never touch the destroying thread's own current stream, and
    // the beginning thread must not go on issuing work into the abandoned capture.
    for (const ec::CaptureMode mode : {ec::CaptureMode::Relaxed, ec::CaptureMode::ThreadLocal}) {
        const bool relaxed = mode == ec::CaptureMode::Relaxed;
        const char* name = relaxed ? "a RELAXED" : "a THREAD_LOCAL";
        const std::uint64_t default_stream = ec::Stream::current(0).handle();  // made once, kept
        const Census before;
        auto stream = std::make_unique<ec::Stream>(ec::Stream::create(0, true));
        auto capturing = std::make_unique<ec::StreamCapturer>(*stream, mode);
        stream.reset();  // the capturer holds it
        bool own_kept = false;
        std::thread([&] {
            ec::Stream own = ec::Stream::create(0, true);
            ec::StreamScope scope(own);
            capturing.reset();
            own_kept = ec::Stream::current(0).handle() == own.handle();
        }).join();
        expect(own_kept, std::string(name) + " capture destroyed on another thread leaves that thread's current stream");
        expect(ec::Stream::current(0).handle() == default_stream,
               std::string(name) + " capture destroyed on another thread is no longer the current stream where it began");
        if (relaxed) expect(before.leaks().empty(), "... and it ends there, its stream released:" + before.leaks());
    }

    std::printf("%s\n", failures ? "threads: FAILED" : "threads: all checks passed");
    return failures ? 1 : 0;
}
