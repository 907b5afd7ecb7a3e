-- Semaphore as a lock, one acquisition attempt.
-- KEYS[1..3], ARGV[1] as semaphore_lock_reclaim.luainc; ARGV[2] lease ms,
-- ARGV[3] owner id, ARGV[4] the retry argument (retry_granted.luainc),
-- ARGV[5] the publish command.
-- Reply: nil when the owner now holds a permit (a re-entry takes no second
-- permit); else how long until the first holder's lease ends, in ms (-1: no
-- holder has a lease that ends, e.g. plain semaphore users took the permits:
-- only a release can help).
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- #include retry_granted.luainc
-- the owner's hold count (HINCRBY below) is checked before the reclaiming
-- step writes
local bad = time_bad(2, 1, 'lease') or hash_int_bad(KEYS[2], ARGV[3])
if bad then
    return bad
end
-- #include semaphore_lock_reclaim.luainc
local lease_key = KEYS[3] .. ARGV[3]
if redis.call('hexists', KEYS[2], ARGV[3]) == 1 then
    if not granted_before(KEYS[2], ARGV[3], 4) then
        redis.call('hincrby', KEYS[2], ARGV[3], 1)
    end
    keep_longer(lease_key, ARGV[2]) -- a re-entry never shortens the hold
    if freed > 0 then
        wake(count)
    end
    return nil
end
if count >= 1 then
    redis.call('decr', KEYS[1])
    redis.call('hset', KEYS[2], ARGV[3], 1)
    redis.call('set', lease_key, '1', 'px', ARGV[2])
    if freed > 0 then
        wake(count - 1)
    end
    return nil
end
local first = -1
local holders = redis.call('hkeys', KEYS[2])
for i = 1, #holders do
    local t = redis.call('pttl', KEYS[3] .. holders[i])
    if t >= 0 and (first < 0 or t < first) then
        first = t
    end
end
return first
