-- Fair lock: delete it whoever holds it and wake the first live waiter.
-- KEYS as fair_release; ARGV[1] the wake-up message, ARGV[2] now (wall ms),
-- ARGV[3] the publish command (publish.luainc).
-- Reply: 1 it existed, 0 it did not. A key of another type is left alone.
-- #include time_check.luainc
local time_err = wall_bad(2)
if time_err then
    return time_err
end
local now = tonumber(ARGV[2])
local t = redis.call('type', KEYS[1]).ok
if t ~= 'none' and t ~= 'hash' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
-- #include fair_purge.luainc
if t == 'none' then
    return 0
end
-- #include fair_wake.luainc
