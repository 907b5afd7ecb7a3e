-- Fair lock: a waiter stops waiting and leaves the queue at once, so that
-- nobody behind it waits for its deadline. If that makes a new first waiter
-- while the lock is free, the new first waiter is woken.
-- KEYS as fair_release; ARGV[1] owner id, ARGV[2] the wake-up message.
-- Reply: 1 it was in line, 0 it was not.
local was_head = redis.call('lindex', KEYS[2], 0) == ARGV[1]
if redis.call('zrem', KEYS[3], ARGV[1]) == 0 then
    redis.call('lrem', KEYS[2], 0, ARGV[1])
    return 0
end
redis.call('lrem', KEYS[2], 0, ARGV[1])
local head = redis.call('lindex', KEYS[2], 0)
if was_head and head and redis.call('exists', KEYS[1]) == 0 then
    redis.call('publish', KEYS[4] .. ':' .. head, ARGV[2])
end
return 1
