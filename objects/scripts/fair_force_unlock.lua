-- Fair lock: delete it whoever holds it, drop the waiters first in line
-- that are presumed dead (fair_purge.luainc: a dead dlock waiter goes once
-- its liveness has passed) and wake the first live waiter.
-- KEYS as fair_release; ARGV[1] the wake-up message, ARGV[2] now (wall ms),
-- ARGV[3] the publish command (publish.luainc).
-- Reply: 1 it existed, 0 it did not. A key of another type (under the name,
-- the queue's, the deadlines' or the liveness') is an error, and everything
-- is left alone.
-- #include time_check.luainc
-- #include fair_check.luainc
local bad = wall_bad(2) or fair_bad(nil)
if bad then
    return bad
end
local now = tonumber(ARGV[2])
-- #include fair_purge.luainc
purge_dead(now, ARGV[1])
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
-- #include fair_wake.luainc
