-- Semaphore as a lock, one acquisition attempt.
-- KEYS, ARGV[1..2] as semaphore_lock_reclaim.luainc; ARGV[3] lease ms,
-- ARGV[4] owner id.
-- Reply: nil when the owner now holds a permit (a re-entry takes no second
-- permit); else how long until the first holder's lease ends, in ms (-1: no
-- holder has a lease that ends, e.g. plain semaphore users took the permits:
-- only a release can help).
-- #include time_check.luainc
-- #include lease_keep.luainc
local time_err = time_bad(3, 1, 'lease')
if time_err then
    return time_err
end
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- #include semaphore_lock_reclaim.luainc
local lease_key = ARGV[1] .. ARGV[4]
if redis.call('hexists', KEYS[2], ARGV[4]) == 1 then
    redis.call('hincrby', KEYS[2], ARGV[4], 1)
    keep_longer(lease_key, ARGV[3]) -- a re-entry never shortens the hold
    if freed > 0 then
        wake(count)
    end
    return nil
end
if count >= 1 then
    redis.call('decr', KEYS[1])
    redis.call('hset', KEYS[2], ARGV[4], 1)
    redis.call('set', lease_key, '1', 'px', ARGV[3])
    if freed > 0 then
        wake(count - 1)
    end
    return nil
end
local first = -1
local holders = redis.call('hkeys', KEYS[2])
for i = 1, #holders do
    local t = redis.call('pttl', ARGV[1] .. holders[i])
    if t >= 0 and (first < 0 or t < first) then
        first = t
    end
end
return first
