/*
 * make install-check: a C++17 program built from the installed <dlock.hpp>
 * through the installed CMake package (tests/install/CMakeLists.txt,
 * target dlock::dlock): std::lock_guard on a dlock lock, and an error as a
 * std::system_error of the "dlock" category.
 */
#include <dlock.hpp>

#include <cstdio>
#include <cstring>
#include <mutex>

int main()
{
    auto c = dlock::client::connect("mock:");
    dlock::reentrant_lock l(c, "install-check-cpp");
    {
        std::lock_guard<dlock::reentrant_lock> g(l);
        if (l.hold_count() != 1) {
            std::fprintf(stderr, "consumer.cpp: not held under lock_guard\n");
            return 1;
        }
    }
    if (l.is_locked()) {
        std::fprintf(stderr, "consumer.cpp: still locked after lock_guard\n");
        return 1;
    }
    try {
        l.unlock_or_throw();
        std::fprintf(stderr, "consumer.cpp: an unlock without the lock did not throw\n");
        return 1;
    } catch (const std::system_error &e) {
        if (e.code() != std::error_code(DLOCK_ENOTOWNER, dlock::category()) ||
            std::strcmp(e.code().category().name(), "dlock") != 0) {
            std::fprintf(stderr, "consumer.cpp: unexpected error %s\n", e.what());
            return 1;
        }
    }
    std::printf("consumer.cpp: dlock %s: lock_guard, dlock::error ok\n", dlock_version());
    return 0;
}
