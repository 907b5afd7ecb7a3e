-- Read-write lock, write half: one acquisition attempt.
-- KEYS as rwlock_common.luainc; ARGV[1] lease ms; ARGV[2] owner id; ARGV[3]
-- the retry argument (retry_granted.luainc; optional: 0).
-- Reply: nil when the owner now holds one more write hold (free, or
-- re-entry); the string 'upgrade' when the owner holds a read lock but not
-- the write lock (waiting would wait for itself: the caller fails with
-- DLOCK_EDEADLK, and nothing is changed); else the hash's PTTL (-1 no
-- expiry). An error, with nothing changed, for a reserved owner id or a
-- write hold count that is not an integer (its HINCRBY is the first write).
-- #include time_check.luainc
-- #include rwlock_common.luainc
-- #include retry_granted.luainc
local bad = time_bad(1, 1, 'lease') or rw_owner_bad(2)
if bad then
    return bad
end
local mode = redis.call('hget', KEYS[1], 'mode')
local field = rw_write_field(ARGV[2])
if not mode then
    redis.call('hset', KEYS[1], 'mode', 'write', field, 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], field) == 1 then
    if not granted_before(KEYS[1], field, 3) then
        redis.call('hincrby', KEYS[1], field, 1)
    end
    keep_longer(KEYS[1], ARGV[1]) -- a re-entry never shortens the hold
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return 'upgrade'
end
return redis.call('pttl', KEYS[1])
