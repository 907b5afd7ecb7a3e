-- Reentrant lock, one acquisition attempt.
-- KEYS[1] the lock hash; ARGV[1] lease ms; ARGV[2] owner id; ARGV[3] the
-- retry argument (retry_granted.luainc; optional: 0).
-- A re-entry keeps the longer of the TTL left and the lease.
-- Reply: nil when the owner now holds it (first time or re-entry),
-- else the remaining TTL of the current holder in ms (-1: no expiry).
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include retry_granted.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if not granted_before(KEYS[1], ARGV[2], 3) then
        redis.call('hincrby', KEYS[1], ARGV[2], 1)
    end
    keep_longer(KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
