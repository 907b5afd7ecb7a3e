-- Fair lock: delete it whoever holds it and wake the first live waiter.
-- KEYS as fair_release; ARGV[1] the wake-up message, ARGV[2] now (wall ms),
-- ARGV[3] the publish command (publish.luainc).
-- Reply: 1 it existed, 0 it did not. A key of another type (under the name,
-- the queue's or the deadlines') is an error, and everything is left alone.
-- #include time_check.luainc
-- #include fair_check.luainc
local bad = wall_bad(2) or fair_bad(nil)
if bad then
    return bad
end
local now = tonumber(ARGV[2])
-- #include fair_purge.luainc
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
-- #include fair_wake.luainc
