-- Fair lock, release one hold.
-- KEYS[1] the lock hash, KEYS[2] the queue, KEYS[3] the deadlines,
-- KEYS[4] the channel prefix, KEYS[5] the dlock waiters' liveness
-- (fair_acquire.lua).
-- ARGV[1] the wake-up message, ARGV[2] lease ms the hold keeps at least while still held
-- (0: keep the TTL), ARGV[3] owner id, ARGV[4] now (wall ms),
-- ARGV[5] the publish command (publish.luainc).
-- Reply: nil not held by the owner; 0 still held; 1 released (only the first
-- live waiter is woken, on its own channel).
-- An error reply, with nothing changed (no dead waiter purged either), for
-- a bad time, a key of another type, or a hold count that is not an integer.
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include fair_check.luainc
local bad = time_bad(2, 0, 'lease') or wall_bad(4) or fair_bad(ARGV[3])
if bad then
    return bad
end
local now = tonumber(ARGV[4])
-- #include fair_purge.luainc
purge_dead(now, ARGV[1])

if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
    if tonumber(ARGV[2]) > 0 then
        keep_longer(KEYS[1], ARGV[2])
    end
    return 0
end
-- #include fair_wake.luainc
