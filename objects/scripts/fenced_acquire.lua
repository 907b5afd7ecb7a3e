-- Fenced lock, one acquisition attempt: the reentrant lock's, plus a new
-- fencing token for every acquisition (the first and each re-entry).
-- KEYS[1] the lock hash, KEYS[2] the token counter; ARGV[1] lease ms,
-- ARGV[2] owner id, ARGV[3] the retry argument (retry_granted.luainc;
-- optional: 0). A retry granted as its unanswered attempt was gets that
-- attempt's token back (the counter's value: no one else acquires while
-- the owner holds the lock).
-- Reply: {1, token} when the owner now holds it (token greater than every
-- token handed out before: INCR never goes back); {0, PTTL of the holder}
-- (-1: no expiry) when another owner holds it. Nothing changes when the
-- counter is not an integer (the INCR error comes before any write) or the
-- owner's hold count is not (checked before the INCR: a failed call hands
-- out no token).
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include value_check.luainc
-- #include retry_granted.luainc
local bad = time_bad(1, 1, 'lease') or hash_int_bad(KEYS[1], ARGV[2])
if bad then
    return bad
end
local fresh = redis.call('exists', KEYS[1]) == 0
if not fresh and granted_before(KEYS[1], ARGV[2], 3) then
    keep_longer(KEYS[1], ARGV[1])
    return {1, tonumber(redis.call('get', KEYS[2]))}
end
if fresh or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    if fresh then
        redis.call('pexpire', KEYS[1], ARGV[1])
    else
        keep_longer(KEYS[1], ARGV[1]) -- a re-entry never shortens the hold
    end
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
