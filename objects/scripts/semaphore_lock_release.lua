-- Semaphore as a lock: release one hold.
-- KEYS, ARGV[1..2] as semaphore_lock_reclaim.luainc; ARGV[3] lease ms the
-- hold keeps at least while still held (0: keep the TTL), ARGV[4] owner id.
-- Reply: nil the owner holds no permit (never did, or its lease ran out);
-- 0 one hold less, still held; 1 the permit went back and waiters were told.
-- #include time_check.luainc
-- #include lease_keep.luainc
local time_err = time_bad(3, 0, 'lease')
if time_err then
    return time_err
end
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- #include semaphore_lock_reclaim.luainc
if freed > 0 then
    wake(count)
end
if redis.call('hexists', KEYS[2], ARGV[4]) == 0 then
    return nil
end
local lease_key = ARGV[1] .. ARGV[4]
if redis.call('hincrby', KEYS[2], ARGV[4], -1) > 0 then
    if tonumber(ARGV[3]) > 0 then
        keep_longer(lease_key, ARGV[3])
    end
    return 0
end
redis.call('hdel', KEYS[2], ARGV[4])
redis.call('del', lease_key)
wake(redis.call('incrby', KEYS[1], 1))
return 1
