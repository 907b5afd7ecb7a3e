/*
 * The C++17 interface (api/dlock.hpp), on every row it runs on (the mock on
 * its virtual clock, a throwaway redis-server): compiled with g++
 * -std=c++17 -Wall -Wextra -Werror into the test program. The locks under
 * std::lock_guard / std::unique_lock / std::scoped_lock / std::shared_lock,
 * errors as std::system_error of the "dlock" category and as
 * std::error_code, the fencing token, permit ids and the RAII permit set,
 * the semaphore and the latch, move-only owners, and the async loop with
 * callables.
 *
 * A cmocka assertion that fails leaves the case by longjmp, skipping the
 * destructors of the case's C++ objects: a failing case may leak them (the
 * fixture's own objects are still freed by its teardown).
 */
#include <dlock.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

extern "C" {
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

int dlock_test_cpp(const char *backend);
}

using namespace std::chrono_literals;

#define BEGIN(state) dlock_fx_begin(state, __func__)

static_assert(!std::is_copy_constructible_v<dlock::reentrant_lock>);
static_assert(std::is_nothrow_move_constructible_v<dlock::reentrant_lock>);
static_assert(!std::is_copy_assignable_v<dlock::client>);
static_assert(std::is_nothrow_move_assignable_v<dlock::client>);
static_assert(!std::is_copy_constructible_v<dlock::permit_set>);
static_assert(!std::is_copy_constructible_v<dlock::loop>);
static_assert(noexcept(std::declval<dlock::rlock &>().unlock()));

/* A name of the case's own: fx->name plus suffix. */
static std::string nm(dlock_fx *fx, const char *suffix)
{
    return std::string(fx->name) + suffix;
}

/* Runs f, which must throw dlock::error with code; returns its what(). */
template <class F> static std::string expect_error(F &&f, int code)
{
    try {
        f();
    } catch (const dlock::error &e) {
        assert_int_equal(e.code().value(), code);
        assert_true(&e.code().category() == &dlock::category());
        return e.what();
    } catch (...) {
        fail_msg("an exception other than dlock::error");
    }
    fail_msg("no exception; expected %s", dlock_errname(code));
    return "";
}

/* The standard's lock wrappers on dlock locks; another client sees the
 * holds they take and release. */
static void cpp_lockable(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock::reentrant_lock a(fx->c1, nm(fx, "a"));
    dlock::fair_lock b(fx->c1, nm(fx, "b"));
    dlock::reentrant_lock a2(fx->c2, nm(fx, "a")); /* the same lock, another process */

    a.set_lease(std::chrono::milliseconds(fx->long_lease_ms));
    {
        std::lock_guard<dlock::reentrant_lock> g(a);
        assert_int_equal(a.hold_count(), 1);
        assert_true(a2.is_locked());
        assert_false(a2.is_held());
        assert_false(a2.try_lock());
        assert_false(a2.try_lock_for(0ms));
        /* a deadline already past: one attempt */
        assert_false(a2.try_lock_until(std::chrono::steady_clock::now() - 1s));
        assert_true(a2.remain_ttl() > std::chrono::milliseconds(fx->long_lease_ms / 2));
        /* re-entry, as std::recursive_mutex */
        std::unique_lock<dlock::reentrant_lock> u(a, std::try_to_lock);
        assert_true(u.owns_lock());
        assert_int_equal(a.hold_count(), 2);
    }
    assert_false(a2.is_locked());

    {
        std::unique_lock<dlock::reentrant_lock> u(a, 2s);
        assert_true(u.owns_lock());
        u.unlock();
        assert_false(a2.is_locked());
        assert_true(u.try_lock_until(std::chrono::system_clock::now() + 2s));
        assert_true(a2.is_locked());
    }
    assert_false(a2.is_locked());

    {
        std::scoped_lock s(a, b);
        assert_true(a.is_held());
        assert_true(b.is_held());
    }
    assert_false(a.is_locked());
    assert_false(b.is_locked());

    /* std::lock backs off when one is busy elsewhere: a2 holds a */
    assert_true(a2.try_lock());
    std::unique_lock<dlock::reentrant_lock> ua(a, std::defer_lock);
    std::unique_lock<dlock::fair_lock> ub(b, std::defer_lock);
    assert_int_equal(std::try_lock(ua, ub), 0);
    assert_false(b.is_locked());
    a2.unlock();
    assert_false(static_cast<bool>(a2.unlock_error()));
    assert_int_equal(std::try_lock(ua, ub), -1);
    assert_true(a.is_held() && b.is_held());
}

/* Both halves of a read-write lock: std::shared_lock takes the read half,
 * std::unique_lock the write half. */
static void cpp_shared_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock::read_write_lock rw1(fx->c1, fx->name), rw2(fx->c2, fx->name);

    {
        std::shared_lock<dlock::read_write_lock> r1(rw1);
        {
            std::shared_lock<dlock::read_write_lock> r2(rw2, std::try_to_lock);
            assert_true(r2.owns_lock());
            assert_int_equal(rw1.read().hold_count(), 1);
        }
        /* c2's owner holds no read lock now; c1's does: busy */
        assert_false(rw2.try_lock());
        assert_true(rw2.read().is_locked());
        assert_false(rw2.write().is_held());
    }
    {
        std::unique_lock<dlock::read_write_lock> w(rw1, 2s);
        assert_true(w.owns_lock());
        assert_false(rw2.try_lock_shared());
        assert_false(rw2.try_lock_shared_for(0ms));
    }
    assert_true(rw2.try_lock_shared());
    rw2.unlock_shared();
    assert_false(rw2.read().is_locked());
}

/* Errors: dlock::error / std::system_error in the "dlock" category, whose
 * what() is dlock_strerror plus the object's detail; the std::error_code
 * forms; unlock() never throws and keeps its code. */
static void cpp_errors(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock::reentrant_lock l(fx->c1, fx->name);
    std::error_code ec;

    assert_string_equal(dlock::category().name(), "dlock");
    assert_string_equal(dlock::category().message(DLOCK_EBUSY).c_str(), dlock_strerror(DLOCK_EBUSY));
    assert_true(dlock::make_error_code(DLOCK_ETIMEDOUT) == std::errc::timed_out);
    assert_true(dlock::make_error_code(DLOCK_ECANCELED) == std::errc::operation_canceled);
    assert_false(static_cast<bool>(dlock::make_error_code(0)));

    /* an unlock without the lock */
    l.unlock();
    assert_int_equal(l.unlock_error().value(), DLOCK_ENOTOWNER);
    assert_true(l.unlock_error() == std::errc::operation_not_permitted);
    l.unlock(ec);
    assert_int_equal(ec.value(), DLOCK_ENOTOWNER);
    std::string what = expect_error([&] { l.unlock_or_throw(); }, DLOCK_ENOTOWNER);
    std::string detail = l.errmsg();
    printf("  [%s] %s\n", fx->backend, what.c_str());
    assert_false(detail.empty());
    assert_string_equal(what.c_str(),
                        (std::string(dlock_strerror(DLOCK_ENOTOWNER)) + ": " + detail).c_str());
    try {
        l.unlock_or_throw();
        fail_msg("no exception");
    } catch (const std::system_error &e) { /* as the standard's type */
        assert_true(e.code() == std::error_code(DLOCK_ENOTOWNER, dlock::category()));
    }

    /* a lease that ran out: the unlock says DLOCK_ELOST */
    l.set_lease(std::chrono::milliseconds(fx->lease_ms));
    l.lock();
    dlock_fx_advance(fx, 3 * fx->lease_ms);
    {
        std::error_code e2;
        l.unlock(e2);
        assert_int_equal(e2.value(), DLOCK_ELOST);
    }

    /* bad input: a clear error, nothing made */
    expect_error([&] { dlock::reentrant_lock bad(fx->c1, ""); }, DLOCK_EINVAL);
    expect_error([&] { l.extend(-5ms); }, DLOCK_EINVAL);
    std::string connect_what;
    auto c = dlock::client::connect("nosuchscheme://x", ec);
    assert_int_equal(ec.value(), DLOCK_EINVAL);
    assert_false(static_cast<bool>(c));
    connect_what = expect_error([] { dlock::client::connect("nosuchscheme://x"); }, DLOCK_EINVAL);
    printf("  [%s] %s\n", fx->backend, connect_what.c_str());
    assert_non_null(strstr(connect_what.c_str(), dlock_strerror(DLOCK_EINVAL)));
    /* a read that fails reports through the error_code form */
    assert_false(l.is_locked(ec));
    assert_false(static_cast<bool>(ec));
}

/* The fencing token, permit ids, the permit set, the semaphore, the latch. */
static void cpp_tokens_permits(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock::fenced_lock f1(fx->c1, nm(fx, "f")), f2(fx->c2, nm(fx, "f"));

    int64_t t1 = f1.lock_token();
    assert_true(t1 > 0);
    assert_int_equal(f1.token(), t1);
    assert_false(f2.try_lock_token_for(0ms).has_value());
    f1.unlock();
    auto t2 = f2.try_lock_token_for(1s);
    assert_true(t2.has_value());
    assert_true(*t2 > t1);
    f2.unlock();

    dlock::permit_semaphore p(fx->c1, nm(fx, "p")), p2(fx->c2, nm(fx, "p"));
    assert_true(p.try_set_permits(3));
    assert_false(p2.try_set_permits(9));
    {
        dlock::permit_set set = p.acquire_set(2, std::chrono::milliseconds(fx->long_lease_ms));
        assert_int_equal(set.size(), 2);
        for (const auto &id : set.ids())
            assert_int_equal(id.size(), 32);
        assert_string_not_equal(set.ids()[0].c_str(), set.ids()[1].c_str());
        assert_int_equal(p2.available_permits(), 1);
        dlock::permit_set moved = std::move(set);
        assert_true(set.empty());
        assert_int_equal(p2.acquired_permits(), 2);
    }
    assert_int_equal(p2.available_permits(), 3);
    std::vector<std::string> ids = p.acquire(3, std::chrono::milliseconds(fx->long_lease_ms));
    assert_int_equal(ids.size(), 3);
    assert_false(p2.try_acquire_for(1, 0ms, 1s).has_value());
    p2.release_all(ids);
    expect_error([&] { p2.release(ids[0]); }, DLOCK_ENOTOWNER);
    expect_error([&] { p2.release("not-an-id"); }, DLOCK_EINVAL);
    {
        dlock::permit_set kept = p.acquire_set(1, std::chrono::milliseconds(fx->long_lease_ms));
        std::vector<std::string> mine = kept.dismiss();
        assert_int_equal(mine.size(), 1);
        assert_int_equal(p2.available_permits(), 2); /* still taken */
        p.release(mine[0]);
    }
    assert_int_equal(p2.available_permits(), 3);

    dlock::semaphore s(fx->c1, nm(fx, "s"));
    assert_true(s.try_set_permits(1));
    assert_true(s.try_acquire());
    assert_false(s.try_acquire());
    assert_false(s.try_acquire_for(0ms));
    s.release();
    assert_int_equal(s.available_permits(), 1);
    expect_error([&] { s.acquire(-1); }, DLOCK_EINVAL);

    dlock::latch l(fx->c1, nm(fx, "l")), l2(fx->c2, nm(fx, "l"));
    assert_true(l.try_set_count(2));
    l.count_down();
    assert_int_equal(l2.count(), 1);
    l2.count_down();
    l.wait();
    assert_true(l2.wait_for(0ms));
}

/* Owners are move-only and free what they own; a moved-from one is empty. */
static void cpp_raii_move(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_backend *b = nullptr;

    assert_int_equal(dlock_fx_backend_new(fx, &b), 0);
    dlock::client c = dlock::client::from_backend(b);
    assert_true(static_cast<bool>(c));
    assert_int_equal(c.id().size(), 36);
    assert_int_equal(c.owner().rfind(c.id(), 0), 0); /* "<uuid>:<thread>" */

    dlock::reentrant_lock l1(c, fx->name);
    dlock_rlock *raw = l1.get();
    l1.set_lease(std::chrono::milliseconds(fx->long_lease_ms));
    dlock::reentrant_lock l2 = std::move(l1);
    assert_null(l1.get());
    assert_ptr_equal(l2.get(), raw);
    assert_int_equal(l2.lease().count(), fx->long_lease_ms);
    l2.lock();
    assert_string_equal(l2.name().c_str(), fx->name);

    dlock::client c2 = std::move(c);
    assert_false(static_cast<bool>(c));
    /* one thread locks, another unlocks, with the owner id */
    std::string owner = c2.owner();
    std::thread t([&] { l2.unlock_as(owner); });
    t.join();
    dlock::reentrant_lock probe(fx->c2, fx->name);
    assert_false(probe.is_locked());
    l2.lock_as("cpp-task-7");
    assert_true(probe.is_locked());
    assert_false(l2.is_held());
    l2.unlock_as("cpp-task-7");
    /* the lock goes before its client (reverse order of declaration) */
}

/* The async API: a poll-mode loop, callables as callbacks, run on the
 * loop's thread, never inside the starter; a wait woken by a release; a
 * cancelled wait; permit ids in the result. */
static void cpp_async(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_backend *b = nullptr;

    assert_int_equal(dlock_fx_backend_new(fx, &b), 0);
    dlock::client c = dlock::client::from_backend(b);
    dlock::reentrant_lock l(c, fx->name);
    dlock::reentrant_lock other(fx->c2, fx->name);
    dlock::loop lp = dlock::loop::poll(c);
    const std::thread::id me = std::this_thread::get_id();
    auto run_until = [&](const int &calls, int n) {
        auto end = std::chrono::steady_clock::now() + 5s;
        /* On the mock too until the calls came: a run does a bounded
         * slice (loop_slice_ms), which a slow build (a sanitizer) can
         * fill before every callback is in. */
        do {
            lp.run(fx->is_mock ? 0ms : 20ms);
        } while (calls < n && std::chrono::steady_clock::now() < end);
        lp.run(0ms);
    };

    int calls = 0;
    dlock::result seen;
    bool in_starter = true, called_inside = false;
    auto record = [&](const dlock::result &r) {
        calls++;
        seen = r;
        called_inside = called_inside || in_starter;
        assert_true(std::this_thread::get_id() == me);
    };
    dlock::op_id op = lp.lock(l, record);
    in_starter = false;
    assert_true(op != 0);
    run_until(calls, 1);
    assert_int_equal(calls, 1);
    assert_false(called_inside);
    assert_true(static_cast<bool>(seen));
    assert_true(seen.op == op);
    assert_true(other.is_locked());
    const std::string mine = seen.owner; /* the acquisition's own owner id */
    assert_false(mine.empty());
    assert_true(mine != c.owner());
    assert_true(c.new_owner() != c.new_owner());
    expect_error([&] { lp.unlock(l, record); }, DLOCK_EINVAL); /* owner nullptr */

    /* the reads: value carries the answer */
    int reads = 0;
    int64_t held = -1, count = -1, ttl = 0;
    lp.is_held(l, [&](const dlock::result &r) { reads++; held = r.value; }, mine.c_str());
    lp.hold_count(l, [&](const dlock::result &r) { reads++; count = r.value; }, mine.c_str());
    lp.remain_ttl(l, [&](const dlock::result &r) { reads++; ttl = r.value; });
    run_until(reads, 3);
    assert_int_equal(reads, 3);
    assert_int_equal(held, 1);
    assert_int_equal(count, 1);
    assert_true(ttl > 0);

    /* a waiter, woken by the release */
    in_starter = true;
    lp.unlock(l, record, mine.c_str());
    in_starter = false;
    run_until(calls, 2);
    assert_int_equal(calls, 2);
    assert_false(static_cast<bool>(seen.ec));
    assert_true(other.try_lock());
    int woke = 0;
    dlock::result wres;
    lp.lock(l, [&](const dlock::result &r) { woke++; wres = r; });
    lp.run(0ms);
    assert_int_equal(woke, 0);
    other.unlock();
    run_until(woke, 1);
    assert_int_equal(woke, 1);
    assert_false(static_cast<bool>(wres.ec));
    assert_false(other.try_lock());

    /* a cancelled wait: DLOCK_ECANCELED, std::errc::operation_canceled */
    dlock::reentrant_lock l_other(c, nm(fx, "x"));
    dlock::reentrant_lock x2(fx->c2, nm(fx, "x"));
    assert_true(x2.try_lock());
    int ended = 0;
    dlock::result cres;
    dlock::op_id w = lp.lock(l_other, [&](const dlock::result &r) { ended++; cres = r; });
    lp.run(0ms);
    assert_true(lp.cancel(w));
    run_until(ended, 1);
    assert_int_equal(ended, 1);
    assert_int_equal(cres.ec.value(), DLOCK_ECANCELED);
    assert_true(cres.ec == std::errc::operation_canceled);
    assert_false(cres.detail.empty());
    assert_false(lp.cancel(w));
    x2.unlock();

    /* permit ids in the result, released by another call */
    dlock::permit_semaphore p(c, nm(fx, "p"));
    assert_true(p.try_set_permits(2));
    int got = 0;
    std::vector<std::string> ids;
    lp.permits_acquire(p, 2, std::chrono::milliseconds(fx->long_lease_ms),
                       [&](const dlock::result &r) {
                           got++;
                           ids = r.permit_ids;
                           assert_int_equal(r.value, 2);
                       });
    run_until(got, 1);
    assert_int_equal(got, 1);
    assert_int_equal(ids.size(), 2);
    assert_int_equal(p.available_permits(), 0);
    p.release_all(ids);

    /* a starter refused: nothing started, the callable never runs */
    dlock::semaphore empty;
    expect_error([&] { lp.semaphore_release(empty, 1, [&](const dlock::result &) { calls += 100; }); },
                 DLOCK_EINVAL);
    lp.unlock(l, record, wres.owner.c_str());
    run_until(calls, 3);
    assert_int_equal(calls, 3);
    assert_int_equal(lp.pending(), 0);
}

/* An exception a case did not expect fails that case (instead of ending
 * the run through std::terminate). */
static void guarded(void (*f)(void **), void **state)
{
    try {
        f(state);
    } catch (const std::exception &e) {
        fail_msg("uncaught exception: %s", e.what());
    }
}

#define CASE(f) \
    { #f, [](void **s) { guarded(f, s); }, dlock_fx_setup, dlock_fx_teardown, nullptr }

static const struct CMUnitTest cpp_cases[] = {
    CASE(cpp_lockable), CASE(cpp_shared_lock),  CASE(cpp_errors),
    CASE(cpp_tokens_permits), CASE(cpp_raii_move), CASE(cpp_async),
};

int dlock_test_cpp(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("C++ (dlock.hpp)", backend, cpp_cases);
}
