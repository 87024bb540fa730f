// What the native test programs (selftest, threads) share: one printed line per check, and the
// stand-in libcuda's control functions when it is the driver loaded.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace checks {

inline int failures = 0;

inline void expect(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

// What `f` threw as an E ("" when it threw nothing).
template <typename E, typename F>
std::string throws(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<other exception> ") + e.what();
    }
    return "";
}

// The stand-in's own control functions, when it is the driver loaded (null on a real one).
inline void* standin() {
    const char* lib = std::getenv("EAGLE_LIBCUDA");
    void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return h && dlsym(h, "fakecuda_counter") ? h : nullptr;
}

// A stand-in counter (fakecuda_counter), -1 on a real driver.
inline long long counter(const char* name) {
    void* h = standin();
    return h ? reinterpret_cast<long long (*)(const char*)>(dlsym(h, "fakecuda_counter"))(name) : -1;
}

}  // namespace checks
