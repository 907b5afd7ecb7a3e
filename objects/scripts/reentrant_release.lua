-- Reentrant lock, release one hold.
-- KEYS[1] the lock hash, KEYS[2] the wake-up channel;
-- ARGV[1] the release message, ARGV[2] lease ms the hold keeps at least while still held
-- (0: keep the current TTL), ARGV[3] owner id, ARGV[4] the publish command
-- (publish.luainc).
-- Reply: nil the owner does not hold it; 0 still held (count > 0);
-- 1 released and waiters told.
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include publish.luainc
local time_err = time_bad(2, 0, 'lease')
if time_err then
    return time_err
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
    if tonumber(ARGV[2]) > 0 then
        keep_longer(KEYS[1], ARGV[2])
    end
    return 0
end
redis.call('del', KEYS[1])
publish(KEYS[2], ARGV[1])
return 1
