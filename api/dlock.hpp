/*
 * dlock — the C++17 interface: header-only, over the C API of <dlock.h>.
 *
 *   #include <dlock.hpp>
 *   auto c = dlock::client::connect("redis://127.0.0.1:6379");
 *   dlock::reentrant_lock l(c, "orders:42");
 *   { std::lock_guard<dlock::reentrant_lock> g(l); ... }
 *
 * Ownership: every class owns its C object (move-only; the destructor frees
 * it with the C API's _free, which releases local resources only, never a
 * remote lock). A lock, semaphore or latch borrows its client: keep the
 * client alive longer (as in C). get() gives the C handle for a C call;
 * release_handle() gives it up (the caller frees it).
 *
 * Locks: every lock type (reentrant_lock, fair_lock, fenced_lock,
 * read_lock, write_lock, semaphore_lock, spin_lock, simple_lock, redlock,
 * multi_lock) derives from dlock::rlock, which meets the standard's
 * Lockable and TimedLockable requirements (lock, unlock, try_lock,
 * try_lock_for, try_lock_until with std::chrono), so std::lock_guard,
 * std::unique_lock, std::scoped_lock and std::lock work on them; the hold
 * belongs to the calling thread's owner id, as a std::mutex's does. lock()
 * and try_lock_* take the lease set with set_lease (default 0: held until
 * unlocked, renewed by the client's watchdog). read_write_lock holds both
 * halves and also meets SharedTimedMutex's shared half (lock_shared...), for
 * std::shared_lock.
 *
 * Errors: a failing call throws dlock::error, a std::system_error whose
 * code() is in dlock::category() (value: the DLOCK_E* code; compares equal
 * to the nearest std::errc, e.g. DLOCK_ETIMEDOUT == std::errc::timed_out)
 * and whose what() is dlock_strerror plus the object's detail (its
 * dlock_errmsg). Every call that can fail also has a non-throwing form that
 * takes a std::error_code & last (as std::filesystem's), sets it and
 * returns what the throwing one does (false / empty / 0 on failure).
 * try_lock* return false for "not acquired" (DLOCK_EBUSY, DLOCK_ETIMEDOUT)
 * and throw for anything else.
 *
 * Where dlock differs from the standard's Lockable: unlock() must not
 * throw, yet a distributed unlock can fail (DLOCK_ELOST: the lease ran out
 * before it; DLOCK_ECONN): unlock() is noexcept and keeps that code for
 * unlock_error(); unlock(std::error_code &) and unlock_or_throw() report it
 * directly.
 *
 * Async (<dlock/async.h>): dlock::loop owns a dlock_loop (poll mode, your
 * loop's hooks, or a thread of dlock's own); its starters take any callable
 * void(const dlock::result &), called once on the loop's thread with the
 * operation's result, never inside the starter. The callable must not
 * throw (the C loop cannot carry an exception: std::terminate).
 *
 * Threads: as the C objects (a lock object may be used by any number of
 * threads at once); moving an object or destroying it while another thread
 * uses it is a data race, as for any C++ object.
 */
#ifndef DLOCK_HPP
#define DLOCK_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "<dlock.hpp> needs C++17 (from C, include <dlock.h>)"
#endif

#include "dlock.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace dlock {

/* ---- errors --------------------------------------------------------------- */

namespace detail {
class category_impl final : public std::error_category {
public:
    const char *name() const noexcept override { return "dlock"; }
    std::string message(int ev) const override { return dlock_strerror(ev); }
    std::error_condition default_error_condition(int ev) const noexcept override
    {
        switch (ev) {
        case DLOCK_EBUSY: return std::errc::device_or_resource_busy;
        case DLOCK_ETIMEDOUT: return std::errc::timed_out;
        case DLOCK_ENOTOWNER: return std::errc::operation_not_permitted;
        case DLOCK_EDEADLK: return std::errc::resource_deadlock_would_occur;
        case DLOCK_EINVAL: return std::errc::invalid_argument;
        case DLOCK_ENOMEM: return std::errc::not_enough_memory;
        case DLOCK_ECONN: return std::errc::not_connected;
        case DLOCK_EPROTO: return std::errc::protocol_error;
        case DLOCK_ENOTSUP: return std::errc::not_supported;
        case DLOCK_EAUTH: return std::errc::permission_denied;
        case DLOCK_ECANCELED: return std::errc::operation_canceled;
        default: return std::error_condition(ev, *this);
        }
    }
};
} // namespace detail

/* The "dlock" error category: values are the DLOCK_E* codes. */
inline const std::error_category &category() noexcept
{
    static const detail::category_impl c;
    return c;
}

inline std::error_code make_error_code(int code) noexcept
{
    return code == 0 ? std::error_code() : std::error_code(code, category());
}

/* What the throwing forms throw: code() in dlock::category(); what() is
 * "<dlock_strerror>: <detail>" (or the strerror alone without a detail). */
class error : public std::system_error {
public:
    error(int code, const std::string &what_detail)
        : std::system_error(make_error_code(code), what_detail), detail_(what_detail),
          what_(std::string(dlock_strerror(code)) +
                (what_detail.empty() ? "" : ": " + what_detail))
    {
    }
    const char *what() const noexcept override { return what_.c_str(); }
    /* The object's detail alone (its dlock_errmsg at the failure). */
    const std::string &detail() const noexcept { return detail_; }

private:
    std::string detail_, what_;
};

namespace detail {
/* rc into ec (true when 0); the throwing forms go through check(). */
inline bool set(std::error_code &ec, int rc) noexcept
{
    ec = make_error_code(rc);
    return rc == 0;
}
inline void check(int rc, const char *errmsg)
{
    if (rc != 0)
        throw error(rc, errmsg ? errmsg : "");
}
/* A duration as whole milliseconds, rounded up (a wait is never shortened)
 * and clamped at 0 below. */
template <class Rep, class Period>
int64_t to_ms(const std::chrono::duration<Rep, Period> &d)
{
    if (d <= d.zero())
        return 0;
    if (std::chrono::duration<double, std::milli>(d).count() > double(DLOCK_TIME_MAX_MS))
        return DLOCK_TIME_MAX_MS + 1; /* no time limit in effect */
    return static_cast<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(d).count());
}
template <class Clock, class Duration>
int64_t until_ms(const std::chrono::time_point<Clock, Duration> &t)
{
    return to_ms(t - Clock::now());
}
inline std::vector<std::string> take_ids(char **ids)
{
    std::vector<std::string> v;
    if (ids) {
        for (char **p = ids; *p; p++)
            v.emplace_back(*p);
        dlock_permit_ids_free(ids);
    }
    return v;
}
/* The owner of one C object: a unique_ptr with its _free function. */
template <class T, void (*Free)(T *)> struct deleter {
    void operator()(T *p) const noexcept { Free(p); }
};
template <class T, void (*Free)(T *)> using owner = std::unique_ptr<T, deleter<T, Free>>;
} // namespace detail

using std::chrono::milliseconds;

/* ---- the client ------------------------------------------------------------ */

class client {
public:
    client() noexcept = default;
    /* Takes c over (freed by the destructor). */
    explicit client(dlock_client *c) noexcept : c_(c) {}

    /* dlock_client_connect: "mock:", "mock://NAME", redis://, unix://...
     * Throws dlock::error (its detail: the connect error's one line, which
     * never contains the password). opts may be NULL. */
    static client connect(const std::string &url, const dlock_client_options *opts = nullptr)
    {
        std::error_code ec;
        std::string detail;
        client c = connect(url, ec, opts, &detail);
        if (ec)
            throw error(ec.value(), detail);
        return c;
    }
    static client connect(const std::string &url, std::error_code &ec,
                          const dlock_client_options *opts = nullptr,
                          std::string *detail = nullptr)
    {
        dlock_client *c = nullptr;
        char err[256] = "";
        int rc = dlock_client_connect(&c, url.c_str(), opts, err, sizeof err);
        if (detail)
            *detail = err;
        detail::set(ec, rc);
        return client(c);
    }
    /* dlock_client_new: takes backend over on success only (as in C). */
    static client from_backend(dlock_backend *backend, const dlock_client_options *opts = nullptr)
    {
        dlock_client *c = nullptr;
        detail::check(dlock_client_new(&c, backend, opts), "dlock_client_new");
        return client(c);
    }

    dlock_client *get() const noexcept { return c_.get(); }
    dlock_client *release_handle() noexcept { return c_.release(); }
    explicit operator bool() const noexcept { return c_ != nullptr; }

    /* The client's UUID. */
    std::string id() const { return c_ ? dlock_client_id(c_.get()) : ""; }
    /* The calling thread's owner id on this client (for the _as calls). */
    std::string owner() const
    {
        char buf[DLOCK_OWNER_MAX];
        detail::check(dlock_client_owner(c_.get(), buf, sizeof buf), "no client");
        return buf;
    }
    /* A new owner id (dlock_client_owner_new): one per task that is not
     * a thread, for every call of the task. */
    std::string new_owner() const
    {
        char buf[DLOCK_OWNER_MAX];
        detail::check(dlock_client_owner_new(c_.get(), buf, sizeof buf), "no client");
        return buf;
    }
    /* dlock_client_cancel_waits: the blocked calls end with DLOCK_ECANCELED. */
    void cancel_waits() { detail::check(dlock_client_cancel_waits(c_.get()), "no client"); }

private:
    detail::owner<dlock_client, dlock_client_free> c_;
};

/* ---- locks ------------------------------------------------------------------ */

/* Any lock object (a dlock_rlock *). Lockable and TimedLockable. */
class rlock {
public:
    rlock() noexcept = default;
    /* Takes l over. */
    explicit rlock(dlock_rlock *l) noexcept : l_(l) {}
    rlock(rlock &&o) noexcept
        : l_(std::move(o.l_)), lease_(o.lease_),
          unlock_rc_(o.unlock_rc_.load(std::memory_order_relaxed))
    {
    }
    rlock &operator=(rlock &&o) noexcept
    {
        l_ = std::move(o.l_);
        lease_ = o.lease_;
        unlock_rc_.store(o.unlock_rc_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        return *this;
    }

    dlock_rlock *get() const noexcept { return l_.get(); }
    dlock_rlock *native_handle() const noexcept { return l_.get(); }
    dlock_rlock *release_handle() noexcept { return l_.release(); }
    explicit operator bool() const noexcept { return l_ != nullptr; }
    std::string name() const { return l_ ? dlock_rlock_name(l_.get()) : ""; }
    /* The detail of the last failure on this lock (dlock_errmsg). */
    std::string errmsg() const { return dlock_errmsg(l_.get()); }

    /* The lease lock() and try_lock*() take: 0 (default) = held until
     * unlocked, renewed by the watchdog; else it runs out after lease. */
    void set_lease(milliseconds lease) noexcept { lease_ = lease; }
    milliseconds lease() const noexcept { return lease_; }

    /* Lockable / TimedLockable. lock() blocks until acquired. */
    void lock() { check(dlock_lock(get(), lease_.count())); }
    void lock(std::error_code &ec) noexcept { set(ec, dlock_lock(get(), lease_.count())); }
    bool try_lock() { return acquired(dlock_try_lock(get(), 0, lease_.count())); }
    bool try_lock(std::error_code &ec) noexcept
    {
        return set(ec, dlock_try_lock(get(), 0, lease_.count()));
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &wait)
    {
        return acquired(dlock_try_lock(get(), detail::to_ms(wait), lease_.count()));
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &wait, std::error_code &ec) noexcept
    {
        return set(ec, dlock_try_lock(get(), detail::to_ms(wait), lease_.count()));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return acquired(dlock_try_lock(get(), detail::until_ms(t), lease_.count()));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t,
                        std::error_code &ec) noexcept
    {
        return set(ec, dlock_try_lock(get(), detail::until_ms(t), lease_.count()));
    }
    /* Never throws (BasicLockable): a failure is kept for unlock_error(). */
    void unlock() noexcept
    {
        unlock_rc_.store(dlock_unlock(get()), std::memory_order_relaxed);
    }
    void unlock(std::error_code &ec) noexcept
    {
        int rc = dlock_unlock(get());
        unlock_rc_.store(rc, std::memory_order_relaxed);
        set(ec, rc);
    }
    void unlock_or_throw()
    {
        int rc = dlock_unlock(get());
        unlock_rc_.store(rc, std::memory_order_relaxed);
        check(rc);
    }
    /* The code of the last unlock() on this object (by any thread): empty,
     * or e.g. DLOCK_ELOST (the lease had run out) or DLOCK_ENOTOWNER. */
    std::error_code unlock_error() const noexcept
    {
        return make_error_code(unlock_rc_.load(std::memory_order_relaxed));
    }

    /* With an explicit owner id (dlock_lock_as...): one thread locks,
     * another unlocks. wait: milliseconds, or std::nullopt for no limit. */
    void lock_as(const std::string &owner) { check(dlock_lock_as(get(), owner.c_str(), lease_.count())); }
    bool try_lock_as(const std::string &owner, milliseconds wait = milliseconds(0))
    {
        return acquired(dlock_try_lock_as(get(), owner.c_str(), detail::to_ms(wait), lease_.count()));
    }
    void unlock_as(const std::string &owner) { check(dlock_unlock_as(get(), owner.c_str())); }
    void unlock_as(const std::string &owner, std::error_code &ec) noexcept
    {
        set(ec, dlock_unlock_as(get(), owner.c_str()));
    }

    /* dlock_extend: the calling owner's hold gets lease from now. */
    void extend(milliseconds lease) { check(dlock_extend(get(), lease.count())); }
    /* dlock_force_unlock: whether it existed. */
    bool force_unlock()
    {
        int existed = 0;
        check(dlock_force_unlock(get(), &existed));
        return existed != 0;
    }
    bool is_locked() const { return read_flag(dlock_is_locked); }
    bool is_held() const { return read_flag(dlock_is_held); }
    bool is_locked(std::error_code &ec) const noexcept { return read_flag(dlock_is_locked, &ec); }
    bool is_held(std::error_code &ec) const noexcept { return read_flag(dlock_is_held, &ec); }
    int64_t hold_count() const
    {
        int64_t n = 0;
        check(dlock_hold_count(get(), &n));
        return n;
    }
    /* -2 ms: no lock; -1 ms: no expiry; else the time left. */
    milliseconds remain_ttl() const
    {
        int64_t t = 0;
        check(dlock_remain_ttl(get(), &t));
        return milliseconds(t);
    }

protected:
    void check(int rc) const { detail::check(rc, rc ? dlock_errmsg(get()) : ""); }
    static bool set(std::error_code &ec, int rc) noexcept { return detail::set(ec, rc); }
    /* try_lock's answer: not acquired is false, a failure throws. */
    bool acquired(int rc) const
    {
        if (rc == DLOCK_EBUSY || rc == DLOCK_ETIMEDOUT)
            return false;
        check(rc);
        return true;
    }
    bool read_flag(int (*fn)(dlock_rlock *, int *), std::error_code *ec = nullptr) const
    {
        int v = 0, rc = fn(get(), &v);
        if (ec)
            set(*ec, rc);
        else
            check(rc);
        return rc == 0 && v != 0;
    }
    /* For the constructors of the types below. */
    template <class... A>
    static dlock_rlock *make(int (*ctor)(dlock_rlock **, A...), A... args)
    {
        dlock_rlock *l = nullptr;
        int rc = ctor(&l, args...);
        if (rc != 0)
            throw error(rc, "cannot create the lock");
        return l;
    }

private:
    detail::owner<dlock_rlock, dlock_rlock_free> l_;
    milliseconds lease_{0};
    std::atomic<int> unlock_rc_{0};
};

/* The types, each a dlock::rlock made by its C constructor (which throws
 * dlock::error on a bad name, DLOCK_EINVAL, or DLOCK_ENOMEM). */
#define DLOCK_HPP_LOCK_TYPE(cls, ctor)                                          \
    class cls : public rlock {                                                  \
    public:                                                                    \
        cls() noexcept = default;                                              \
        cls(const client &c, const std::string &name)                          \
            : cls(c.get(), name) {}                                            \
        cls(dlock_client *c, const std::string &name)                          \
            : rlock(make<dlock_client *, const char *>(ctor, c, name.c_str())) {} \
    };
DLOCK_HPP_LOCK_TYPE(reentrant_lock, dlock_reentrant_new)
DLOCK_HPP_LOCK_TYPE(fair_lock, dlock_fair_new)
DLOCK_HPP_LOCK_TYPE(read_lock, dlock_rwlock_read_new)
DLOCK_HPP_LOCK_TYPE(write_lock, dlock_rwlock_write_new)
DLOCK_HPP_LOCK_TYPE(semaphore_lock, dlock_semaphore_lock_new)
DLOCK_HPP_LOCK_TYPE(simple_lock, dlock_simple_lock_new)
#undef DLOCK_HPP_LOCK_TYPE

/* The fenced lock: every acquisition gets a token, larger than any
 * before it (api/dlock/fenced.h). lock()/try_lock*() work too; token()
 * then reads the holder's. */
class fenced_lock : public rlock {
public:
    fenced_lock() noexcept = default;
    fenced_lock(const client &c, const std::string &name) : fenced_lock(c.get(), name) {}
    fenced_lock(dlock_client *c, const std::string &name)
        : rlock(make<dlock_client *, const char *>(dlock_fenced_new, c, name.c_str()))
    {
    }
    /* Blocks until acquired; the token. */
    int64_t lock_token()
    {
        int64_t t = 0;
        check(dlock_fenced_lock(get(), &t, lease().count()));
        return t;
    }
    /* The token, or std::nullopt when not acquired within wait. */
    template <class Rep, class Period>
    std::optional<int64_t> try_lock_token_for(const std::chrono::duration<Rep, Period> &wait)
    {
        int64_t t = 0;
        if (!acquired(dlock_fenced_try_lock(get(), &t, detail::to_ms(wait), lease().count())))
            return std::nullopt;
        return t;
    }
    /* The calling owner's token (dlock_fenced_token). */
    int64_t token() const
    {
        int64_t t = 0;
        check(dlock_fenced_token(get(), &t));
        return t;
    }
};

class spin_lock : public rlock {
public:
    spin_lock() noexcept = default;
    spin_lock(const client &c, const std::string &name, const dlock_spin_options *opts = nullptr)
        : spin_lock(c.get(), name, opts)
    {
    }
    spin_lock(dlock_client *c, const std::string &name, const dlock_spin_options *opts = nullptr)
        : rlock(make<dlock_client *, const char *, const dlock_spin_options *>(
              dlock_spin_lock_new, c, name.c_str(), opts))
    {
    }
};

/* Redlock over independent servers, one client each (borrowed). */
class redlock : public rlock {
public:
    redlock() noexcept = default;
    redlock(const std::vector<dlock_client *> &clients, const std::string &name)
        : rlock(make<dlock_client *const *, size_t, const char *>(
              dlock_redlock_new, clients.data(), clients.size(), name.c_str()))
    {
    }
    int64_t token() const
    {
        int64_t t = 0;
        check(dlock_redlock_token(get(), &t));
        return t;
    }
};

/* A MultiLock over other locks (borrowed: keep them longer). */
class multi_lock : public rlock {
public:
    multi_lock() noexcept = default;
    explicit multi_lock(const std::vector<dlock::rlock *> &locks)
        : rlock(make<dlock_rlock *const *, size_t>(dlock_multilock_new, handles(locks).data(),
                                                  locks.size()))
    {
    }

private:
    static std::vector<dlock_rlock *> handles(const std::vector<dlock::rlock *> &locks)
    {
        std::vector<dlock_rlock *> v;
        for (auto *l : locks)
            v.push_back(l ? l->get() : nullptr);
        return v;
    }
};

/* Both halves of a read-write lock. As SharedTimedMutex: lock/unlock (and
 * try_*) take the write half, lock_shared/unlock_shared (and try_*_shared)
 * the read half, so std::unique_lock and std::shared_lock work. */
class read_write_lock {
public:
    read_write_lock() noexcept = default;
    read_write_lock(const client &c, const std::string &name) : read_write_lock(c.get(), name) {}
    read_write_lock(dlock_client *c, const std::string &name) : r_(c, name), w_(c, name) {}

    dlock::read_lock &read() noexcept { return r_; }
    dlock::write_lock &write() noexcept { return w_; }

    void lock() { w_.lock(); }
    bool try_lock() { return w_.try_lock(); }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d) { return w_.try_lock_for(d); }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) { return w_.try_lock_until(t); }
    void unlock() noexcept { w_.unlock(); }

    void lock_shared() { r_.lock(); }
    bool try_lock_shared() { return r_.try_lock(); }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) { return r_.try_lock_for(d); }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &t) { return r_.try_lock_until(t); }
    void unlock_shared() noexcept { r_.unlock(); }

private:
    dlock::read_lock r_;
    dlock::write_lock w_;
};

/* ---- semaphores and the latch ---------------------------------------------- */

/* dlock_semaphore: a count of permits, no ids (api/dlock/semaphore.h). */
class semaphore {
public:
    semaphore() noexcept = default;
    explicit semaphore(dlock_semaphore *s) noexcept : s_(s) {}
    semaphore(const client &c, const std::string &name) : semaphore(c.get(), name) {}
    semaphore(dlock_client *c, const std::string &name)
    {
        dlock_semaphore *s = nullptr;
        int rc = dlock_semaphore_new(&s, c, name.c_str());
        if (rc != 0)
            throw error(rc, "cannot create the semaphore");
        s_.reset(s);
    }
    dlock_semaphore *get() const noexcept { return s_.get(); }
    dlock_semaphore *release_handle() noexcept { return s_.release(); }
    std::string name() const { return s_ ? dlock_semaphore_name(s_.get()) : ""; }
    std::string errmsg() const { return dlock_semaphore_errmsg(s_.get()); }

    /* Sets the count if the semaphore has none yet: whether it did. */
    bool try_set_permits(int64_t n)
    {
        int done = 0;
        check(dlock_semaphore_try_set_permits(get(), &done, n));
        return done != 0;
    }
    void acquire(int64_t n = 1) { check(dlock_semaphore_acquire(get(), n)); }
    void acquire(int64_t n, std::error_code &ec) noexcept { detail::set(ec, dlock_semaphore_acquire(get(), n)); }
    bool try_acquire(int64_t n = 1) { return acquired(dlock_semaphore_try_acquire(get(), n, 0)); }
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period> &wait, int64_t n = 1)
    {
        return acquired(dlock_semaphore_try_acquire(get(), n, detail::to_ms(wait)));
    }
    template <class Clock, class Duration>
    bool try_acquire_until(const std::chrono::time_point<Clock, Duration> &t, int64_t n = 1)
    {
        return acquired(dlock_semaphore_try_acquire(get(), n, detail::until_ms(t)));
    }
    void release(int64_t n = 1) { check(dlock_semaphore_release(get(), n)); }
    void release(int64_t n, std::error_code &ec) noexcept { detail::set(ec, dlock_semaphore_release(get(), n)); }
    void add_permits(int64_t delta) { check(dlock_semaphore_add_permits(get(), delta)); }
    int64_t drain_permits()
    {
        int64_t n = 0;
        check(dlock_semaphore_drain_permits(get(), &n));
        return n;
    }
    int64_t available_permits() const
    {
        int64_t n = 0;
        check(dlock_semaphore_available_permits(get(), &n));
        return n;
    }

private:
    void check(int rc) const { detail::check(rc, rc ? dlock_semaphore_errmsg(get()) : ""); }
    bool acquired(int rc) const
    {
        if (rc == DLOCK_EBUSY || rc == DLOCK_ETIMEDOUT)
            return false;
        check(rc);
        return true;
    }
    detail::owner<dlock_semaphore, dlock_semaphore_free> s_;
};

class permit_semaphore;

/* Permits taken together (from permit_semaphore::acquire_set): their ids,
 * given back (try_release_all: expired ones are no error) by the
 * destructor unless released or dismissed before. Move-only; borrows the
 * semaphore. */
class permit_set {
public:
    permit_set() noexcept = default;
    permit_set(permit_semaphore *p, std::vector<std::string> ids) noexcept
        : p_(p), ids_(std::move(ids))
    {
    }
    permit_set(permit_set &&o) noexcept : p_(std::exchange(o.p_, nullptr)), ids_(std::move(o.ids_)) {}
    permit_set &operator=(permit_set &&o) noexcept
    {
        if (this != &o) {
            give_back();
            p_ = std::exchange(o.p_, nullptr);
            ids_ = std::move(o.ids_);
        }
        return *this;
    }
    ~permit_set() { give_back(); }

    const std::vector<std::string> &ids() const noexcept { return ids_; }
    size_t size() const noexcept { return ids_.size(); }
    bool empty() const noexcept { return ids_.empty(); }
    /* Releases them all now (all or nothing): throws as release_all. */
    inline void release();
    /* Keeps the permits taken (the ids are the caller's now). */
    std::vector<std::string> dismiss() noexcept
    {
        p_ = nullptr;
        return std::move(ids_);
    }

private:
    inline void give_back() noexcept;
    permit_semaphore *p_ = nullptr;
    std::vector<std::string> ids_;
};

/* dlock_permit_semaphore: permits with ids and leases
 * (api/dlock/permit_semaphore.h). Lease: milliseconds, or
 * DLOCK_PERMIT_PERMANENT. */
class permit_semaphore {
public:
    permit_semaphore() noexcept = default;
    explicit permit_semaphore(dlock_permit_semaphore *p) noexcept : p_(p) {}
    permit_semaphore(const client &c, const std::string &name) : permit_semaphore(c.get(), name) {}
    permit_semaphore(dlock_client *c, const std::string &name)
    {
        dlock_permit_semaphore *p = nullptr;
        int rc = dlock_permit_semaphore_new(&p, c, name.c_str());
        if (rc != 0)
            throw error(rc, "cannot create the permit semaphore");
        p_.reset(p);
    }
    dlock_permit_semaphore *get() const noexcept { return p_.get(); }
    dlock_permit_semaphore *release_handle() noexcept { return p_.release(); }
    std::string name() const { return p_ ? dlock_permit_semaphore_name(p_.get()) : ""; }
    std::string errmsg() const { return dlock_permit_semaphore_errmsg(p_.get()); }

    void set_permits(int64_t n) { check(dlock_permit_semaphore_set_permits(get(), n)); }
    bool try_set_permits(int64_t n)
    {
        int done = 0;
        check(dlock_permit_semaphore_try_set_permits(get(), &done, n));
        return done != 0;
    }
    void add_permits(int64_t delta) { check(dlock_permit_semaphore_add_permits(get(), delta)); }

    /* Blocks until n permits are taken; their ids. */
    std::vector<std::string> acquire(int64_t n, milliseconds lease)
    {
        char **ids = nullptr;
        check(dlock_permit_semaphore_acquire(get(), &ids, n, lease.count()));
        return detail::take_ids(ids);
    }
    /* The ids, or std::nullopt when too few came within wait. */
    template <class Rep, class Period>
    std::optional<std::vector<std::string>>
    try_acquire_for(int64_t n, const std::chrono::duration<Rep, Period> &wait, milliseconds lease)
    {
        char **ids = nullptr;
        int rc = dlock_permit_semaphore_try_acquire(get(), &ids, n, detail::to_ms(wait), lease.count());
        if (rc == DLOCK_EBUSY || rc == DLOCK_ETIMEDOUT)
            return std::nullopt;
        check(rc);
        return detail::take_ids(ids);
    }
    /* acquire, as a permit_set that gives them back when it goes. */
    permit_set acquire_set(int64_t n, milliseconds lease) { return permit_set(this, acquire(n, lease)); }

    /* 0 ok; throws DLOCK_ELOST (the lease had run out), DLOCK_ENOTOWNER... */
    void release(const std::string &id) { check(dlock_permit_semaphore_release(get(), id.c_str())); }
    void release(const std::string &id, std::error_code &ec) noexcept
    {
        detail::set(ec, dlock_permit_semaphore_release(get(), id.c_str()));
    }
    /* All or nothing. */
    void release_all(const std::vector<std::string> &ids)
    {
        auto v = c_strs(ids);
        check(dlock_permit_semaphore_release_all(get(), nullptr, v.data(), v.size()));
    }
    /* Not taken (expired, released) is an answer: whether it released. */
    bool try_release_all(const std::vector<std::string> &ids, std::error_code &ec) noexcept
    {
        int done = 0;
        std::vector<const char *> v;
        try {
            v = c_strs(ids);
        } catch (...) {
            return detail::set(ec, DLOCK_ENOMEM);
        }
        detail::set(ec, dlock_permit_semaphore_try_release_all(get(), &done, v.data(), v.size()));
        return !ec && done != 0;
    }
    void update_lease(const std::string &id, milliseconds lease)
    {
        check(dlock_permit_semaphore_update_lease(get(), id.c_str(), lease.count()));
    }
    int64_t available_permits() const { return read(dlock_permit_semaphore_available_permits); }
    int64_t acquired_permits() const { return read(dlock_permit_semaphore_acquired_permits); }
    int64_t total_permits() const { return read(dlock_permit_semaphore_total_permits); }

private:
    void check(int rc) const { detail::check(rc, rc ? dlock_permit_semaphore_errmsg(get()) : ""); }
    int64_t read(int (*fn)(dlock_permit_semaphore *, int64_t *)) const
    {
        int64_t n = 0;
        check(fn(get(), &n));
        return n;
    }
    static std::vector<const char *> c_strs(const std::vector<std::string> &ids)
    {
        std::vector<const char *> v;
        v.reserve(ids.size());
        for (const auto &s : ids)
            v.push_back(s.c_str());
        return v;
    }
    detail::owner<dlock_permit_semaphore, dlock_permit_semaphore_free> p_;
};

inline void permit_set::release()
{
    if (p_ && !ids_.empty())
        p_->release_all(ids_);
    p_ = nullptr;
    ids_.clear();
}
inline void permit_set::give_back() noexcept
{
    if (p_ && !ids_.empty()) {
        std::error_code ec;
        p_->try_release_all(ids_, ec);
    }
    p_ = nullptr;
    ids_.clear();
}

/* dlock_latch: the count-down latch (api/dlock/latch.h). */
class latch {
public:
    latch() noexcept = default;
    explicit latch(dlock_latch *l) noexcept : l_(l) {}
    latch(const client &c, const std::string &name) : latch(c.get(), name) {}
    latch(dlock_client *c, const std::string &name)
    {
        dlock_latch *l = nullptr;
        int rc = dlock_latch_new(&l, c, name.c_str());
        if (rc != 0)
            throw error(rc, "cannot create the latch");
        l_.reset(l);
    }
    dlock_latch *get() const noexcept { return l_.get(); }
    dlock_latch *release_handle() noexcept { return l_.release(); }
    std::string name() const { return l_ ? dlock_latch_name(l_.get()) : ""; }
    std::string errmsg() const { return dlock_latch_errmsg(l_.get()); }

    /* Sets the count if none is set: whether it did. */
    bool try_set_count(int64_t n)
    {
        int done = 0;
        check(dlock_latch_try_set_count(get(), &done, n));
        return done != 0;
    }
    void count_down() { check(dlock_latch_count_down(get())); }
    int64_t count() const
    {
        int64_t n = 0;
        check(dlock_latch_count(get(), &n));
        return n;
    }
    /* Blocks until the count is 0. */
    void wait() { check(dlock_latch_await(get())); }
    /* Whether the count reached 0 within timeout. */
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period> &timeout)
    {
        int rc = dlock_latch_await_for(get(), detail::to_ms(timeout));
        if (rc == DLOCK_ETIMEDOUT)
            return false;
        check(rc);
        return true;
    }
    /* Deletes the latch's count: whether there was one. */
    bool remove()
    {
        int existed = 0;
        check(dlock_latch_delete(get(), &existed));
        return existed != 0;
    }

private:
    void check(int rc) const { detail::check(rc, rc ? dlock_latch_errmsg(get()) : ""); }
    detail::owner<dlock_latch, dlock_latch_free> l_;
};

/* ---- asynchronous operations (api/dlock/async.h) ----------------------------- */

using op_id = dlock_op_id;

/* An operation's answer, the callback's to keep. */
struct result {
    op_id op = 0;
    std::error_code ec;          /* empty on success */
    std::string detail;          /* "" on success, else the object's detail */
    int64_t value = 0;           /* the token, the boolean, the count, the TTL... */
    std::vector<std::string> permit_ids; /* permit_semaphore acquire */
    std::string owner; /* the owner id it acted for ("" for none): an
                        * acquisition started with owner nullptr gets
                        * its own, which unlock() then takes */
    explicit operator bool() const noexcept { return !ec; }
};

/* A wait without a time limit, for the starters' wait argument. */
inline constexpr milliseconds wait_forever{DLOCK_WAIT_FOREVER};

class loop {
public:
    loop() noexcept = default;
    explicit loop(dlock_loop *lp) noexcept : lp_(lp) {}

    /* Poll mode: run() it, or poll fd() with timeout(). */
    static loop poll(const client &c) { return make(c.get(), nullptr); }
    /* Your loop's hooks (e.g. filled by <dlock/adapters/libuv.h>). */
    static loop hooked(const client &c, const dlock_loop_hooks &hooks) { return make(c.get(), &hooks); }
    /* A thread of dlock's own runs the callbacks. */
    static loop thread(const client &c)
    {
        dlock_loop *lp = nullptr;
        detail::check(dlock_loop_new_thread(&lp, c.get()), "cannot create the loop");
        return loop(lp);
    }

    dlock_loop *get() const noexcept { return lp_.get(); }
    dlock_loop *release_handle() noexcept { return lp_.release(); }

    /* dlock_loop_run: the callbacks it ran. */
    int run(milliseconds max_wait = milliseconds(0))
    {
        int n = dlock_loop_run(get(), max_wait.count());
        if (n < 0)
            detail::check(n, "dlock_loop_run: a thread loop, or from inside a callback");
        return n;
    }
    int fd() const noexcept { return dlock_loop_fd(get()); }
    milliseconds timeout() const noexcept { return milliseconds(dlock_loop_timeout_ms(get())); }
    size_t pending() const noexcept { return dlock_loop_pending(get()); }
    /* Whether op was pending (its callback is still to come). */
    bool cancel(op_id op) noexcept { return dlock_op_cancel(get(), op) == 0; }

    /* The starters: each calls fn(const result &) once, later, on the
     * loop's thread, and returns the operation's id; or throws
     * dlock::error (DLOCK_EINVAL...) and never calls fn. owner: nullptr
     * on lock / fenced_lock = a new owner id of the acquisition's own
     * (result::owner); unlock, extend, is_held and hold_count take an
     * owner id (result::owner, or client::new_owner()) and refuse
     * nullptr (DLOCK_EINVAL). wait: wait_forever, 0 (one attempt)
     * or a limit. */
    template <class F>
    op_id lock(dlock::rlock &l, F &&fn, milliseconds wait = wait_forever,
               const char *owner = nullptr)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_lock_async(get(), op, l.get(), owner, wait.count(), l.lease().count(), cb, arg);
        });
    }
    template <class F> op_id unlock(dlock::rlock &l, F &&fn, const char *owner = nullptr)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_unlock_async(get(), op, l.get(), owner, cb, arg);
        });
    }
    /* result::value: the token. */
    template <class F>
    op_id fenced_lock(dlock::fenced_lock &l, F &&fn, milliseconds wait = wait_forever,
                      const char *owner = nullptr)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_fenced_lock_async(get(), op, l.get(), owner, wait.count(), l.lease().count(),
                                           cb, arg);
        });
    }
    template <class F> op_id is_locked(dlock::rlock &l, F &&fn)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_is_locked_async(get(), op, l.get(), cb, arg);
        });
    }
    template <class F>
    op_id extend(dlock::rlock &l, milliseconds lease, F &&fn, const char *owner = nullptr)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_extend_async(get(), op, l.get(), owner, lease.count(), cb, arg);
        });
    }
    /* result::value: 1 when it existed. */
    template <class F> op_id force_unlock(dlock::rlock &l, F &&fn)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_force_unlock_async(get(), op, l.get(), cb, arg);
        });
    }
    template <class F> op_id is_held(dlock::rlock &l, F &&fn, const char *owner = nullptr)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_is_held_async(get(), op, l.get(), owner, cb, arg);
        });
    }
    template <class F> op_id hold_count(dlock::rlock &l, F &&fn, const char *owner = nullptr)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_hold_count_async(get(), op, l.get(), owner, cb, arg);
        });
    }
    /* result::value: the TTL in ms (-2 no lock, -1 no expiry). */
    template <class F> op_id remain_ttl(dlock::rlock &l, F &&fn)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_remain_ttl_async(get(), op, l.get(), cb, arg);
        });
    }
    template <class F>
    op_id semaphore_acquire(semaphore &s, int64_t n, F &&fn, milliseconds wait = wait_forever)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_semaphore_acquire_async(get(), op, s.get(), n, wait.count(), cb, arg);
        });
    }
    template <class F> op_id semaphore_release(semaphore &s, int64_t n, F &&fn)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_semaphore_release_async(get(), op, s.get(), n, cb, arg);
        });
    }
    /* result::permit_ids: the ids. */
    template <class F>
    op_id permits_acquire(permit_semaphore &p, int64_t n, milliseconds lease, F &&fn,
                          milliseconds wait = wait_forever)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_permit_semaphore_acquire_async(get(), op, p.get(), n, wait.count(),
                                                        lease.count(), cb, arg);
        });
    }
    template <class F> op_id permit_release(permit_semaphore &p, const std::string &id, F &&fn)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_permit_semaphore_release_async(get(), op, p.get(), id.c_str(), cb, arg);
        });
    }
    template <class F> op_id latch_wait(latch &l, F &&fn, milliseconds wait = wait_forever)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_latch_await_async(get(), op, l.get(), wait.count(), cb, arg);
        });
    }
    template <class F> op_id latch_count_down(latch &l, F &&fn)
    {
        return start(std::forward<F>(fn), [&](dlock_op_id *op, dlock_done_fn cb, void *arg) {
            return dlock_latch_count_down_async(get(), op, l.get(), cb, arg);
        });
    }

private:
    using callback = std::function<void(const result &)>;

    static loop make(dlock_client *c, const dlock_loop_hooks *hooks)
    {
        dlock_loop *lp = nullptr;
        detail::check(dlock_loop_new(&lp, c, hooks), "cannot create the loop");
        return loop(lp);
    }
    /* The C callback: the callable, then its deletion. noexcept: an
     * exception cannot cross the C loop. */
    static void trampoline(void *arg, dlock_op_id op, const dlock_result *r) noexcept
    {
        std::unique_ptr<callback> fn(static_cast<callback *>(arg));
        result res;
        res.op = op;
        res.ec = make_error_code(r->rc);
        res.detail = r->detail ? r->detail : "";
        res.value = r->value;
        res.permit_ids = detail::take_ids(dlock_result_take_permit_ids(r));
        res.owner = r->owner ? r->owner : "";
        (*fn)(res);
    }
    template <class F, class Start> op_id start(F &&fn, Start &&s)
    {
        auto cb = std::make_unique<callback>(std::forward<F>(fn));
        dlock_op_id op = 0;
        int rc = s(&op, &loop::trampoline, cb.get());
        if (rc != 0)
            throw error(rc, "the operation did not start");
        cb.release(); /* the trampoline's now */
        return op;
    }
    detail::owner<dlock_loop, dlock_loop_free> lp_;
};

} // namespace dlock

#endif /* DLOCK_HPP */
