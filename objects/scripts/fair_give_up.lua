-- Fair lock: a waiter stops waiting and leaves the queue at once, so that
-- nobody behind it waits for its deadline. As in Redisson, everyone behind it
-- is one place closer: their deadlines move W earlier. If that makes a new
-- first waiter while the lock is free, the new first waiter is woken.
-- KEYS as fair_release (its liveness entry goes too); ARGV[1] owner id, ARGV[2] the wake-up message,
-- ARGV[3] W, the thread wait time (ms), ARGV[4] the publish command
-- (publish.luainc).
-- Reply: 1 it was in line, 0 it was not.
-- #include time_check.luainc
-- #include publish.luainc
local time_err = time_bad(3, 1, 'slack')
if time_err then
    return time_err
end
local was_head = redis.call('lindex', KEYS[2], 0) == ARGV[1]
redis.call('zrem', KEYS[5], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) == 0 then
    redis.call('lrem', KEYS[2], 0, ARGV[1])
    return 0
end
local queue = redis.call('lrange', KEYS[2], 0, -1)
local behind = false
for i = 1, #queue do
    if behind and redis.call('zscore', KEYS[3], queue[i]) then
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), queue[i])
    end
    behind = behind or queue[i] == ARGV[1]
end
redis.call('lrem', KEYS[2], 0, ARGV[1])
local head = redis.call('lindex', KEYS[2], 0)
if was_head and head and redis.call('exists', KEYS[1]) == 0 then
    publish(KEYS[4] .. ':' .. head, ARGV[2])
end
return 1
