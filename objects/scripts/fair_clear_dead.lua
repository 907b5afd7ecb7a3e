-- Fair lock: drop every waiter presumed dead (fair_purge.luainc's rule:
-- deadline passed, or a dlock waiter whose liveness passed) wherever it is
-- in the queue, not only first in line (api/dlock/fair.h:
-- dlock_fair_clear_dead). The deadlines of the others stay as they are; a
-- new first in line is woken when the lock is free.
-- KEYS as fair_release; ARGV[1] the wake-up message, ARGV[2] now (wall ms),
-- ARGV[3] the publish command (publish.luainc).
-- Reply: how many waiters were dropped. A key of another type is an error,
-- and everything is left alone.
-- #include time_check.luainc
-- #include fair_check.luainc
-- #include publish.luainc
local bad = wall_bad(2) or fair_bad(nil)
if bad then
    return bad
end
local now = tonumber(ARGV[2])
local old_head = redis.call('lindex', KEYS[2], 0)
local queue = redis.call('lrange', KEYS[2], 0, -1)
local dropped = 0
for i = 1, #queue do
    local w = queue[i]
    local deadline = tonumber(redis.call('zscore', KEYS[3], w))
    local alive = tonumber(redis.call('zscore', KEYS[5], w))
    if not (deadline and deadline > now and (not alive or alive > now)) then
        redis.call('lrem', KEYS[2], 1, w)
        redis.call('zrem', KEYS[3], w)
        redis.call('zrem', KEYS[5], w)
        dropped = dropped + 1
    end
end
local head = redis.call('lindex', KEYS[2], 0)
if not head then
    redis.call('del', KEYS[5])
elseif head ~= old_head and redis.call('exists', KEYS[1]) == 0 then
    publish(KEYS[4] .. ':' .. head, ARGV[1])
end
return dropped
