-- Semaphore as a lock: release one hold.
-- KEYS[1..3], ARGV[1] as semaphore_lock_reclaim.luainc; ARGV[2] lease ms
-- the hold keeps at least while still held (0: keep the TTL), ARGV[3] owner
-- id, ARGV[4] the publish command.
-- Reply: nil the owner holds no permit (never did, or its lease ran out);
-- 0 one hold less, still held; 1 the permit went back and waiters were told.
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- the owner's hold count (HINCRBY below) is checked before the reclaiming
-- step writes
local bad = time_bad(2, 0, 'lease') or hash_int_bad(KEYS[2], ARGV[3])
if bad then
    return bad
end
-- #include semaphore_lock_reclaim.luainc
if freed > 0 then
    wake(count)
end
if redis.call('hexists', KEYS[2], ARGV[3]) == 0 then
    return nil
end
local lease_key = KEYS[3] .. ARGV[3]
if redis.call('hincrby', KEYS[2], ARGV[3], -1) > 0 then
    if tonumber(ARGV[2]) > 0 then
        keep_longer(lease_key, ARGV[2])
    end
    return 0
end
redis.call('hdel', KEYS[2], ARGV[3])
redis.call('del', lease_key)
wake(redis.call('incrby', KEYS[1], 1))
return 1
