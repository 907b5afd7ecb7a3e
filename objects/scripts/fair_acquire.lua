-- Fair lock, one acquisition attempt.
-- KEYS[1] the lock hash, KEYS[2] the wait queue (list), KEYS[3] the waiters'
-- deadlines (sorted set), KEYS[4] the channel prefix (a waiter O listens on
-- KEYS[4] .. ':' .. O).
-- ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] slack ms, ARGV[4] now (wall ms),
-- ARGV[5] the wake-up message, ARGV[6] '1' to join the queue when busy, '0'
-- for a single attempt that leaves no trace.
-- Reply: nil when the owner now holds it. Else the owner is (still) in line,
-- with its deadline moved to now + slack (a live waiter proves it is alive on
-- every attempt), and the reply is how long nothing can change for it: the
-- lock's PTTL if it is first in line (-1: no expiry), else the time until the
-- first waiter's deadline.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease') or time_bad(3, 1, 'slack') or wall_bad(4)
if time_err then
    return time_err
end
local now = tonumber(ARGV[4])
-- #include fair_purge.luainc

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end

local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == ARGV[2]) then
    if head then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[2])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    -- The next in line must now watch this lease: an expiring lease sends
    -- no message of its own.
    local next_head = redis.call('lindex', KEYS[2], 0)
    if next_head then
        redis.call('publish', KEYS[4] .. ':' .. next_head, ARGV[5])
    end
    return nil
end

if ARGV[6] == '0' then
    return redis.call('pttl', KEYS[1])
end

if not redis.call('zscore', KEYS[3], ARGV[2]) then
    redis.call('rpush', KEYS[2], ARGV[2])
end
redis.call('zadd', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])

head = redis.call('lindex', KEYS[2], 0)
if head == ARGV[2] then
    return redis.call('pttl', KEYS[1])
end
local wait = tonumber(redis.call('zscore', KEYS[3], head)) - now
if wait < 1 then
    wait = 1
end
return wait
