-- Read-write lock, read half: one acquisition attempt.
-- KEYS as rwlock_common.luainc; ARGV[1] lease ms; ARGV[2] owner id; ARGV[3]
-- the retry argument (retry_granted.luainc; optional: 0).
-- Reply: nil when the owner now holds one more read hold (free, read mode,
-- or the owner is the writer: a downgrade); else the hash's PTTL (the
-- writer's time left; -1 no expiry). An error, with nothing changed, for a
-- reserved owner id or a read hold count that is not an integer.
-- #include time_check.luainc
-- #include rwlock_common.luainc
-- #include retry_granted.luainc
-- Before any change: the lease, the owner id and its count (HINCRBY below);
-- the first command reads N, so a key of another type fails here too.
local bad = time_bad(1, 1, 'lease') or rw_owner_bad(2) or hash_int_bad(KEYS[1], ARGV[2])
if bad then
    return bad
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'write'
   and redis.call('hexists', KEYS[1], rw_write_field(ARGV[2])) == 0 then
    return redis.call('pttl', KEYS[1])
end
-- the unanswered attempt's hold, with its marker, is all there
if mode and granted_before(KEYS[1], ARGV[2], 3) then
    return nil
end
local ttl = redis.call('pttl', KEYS[1])
if not mode then
    redis.call('hset', KEYS[1], 'mode', 'read')
end
local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
-- A re-entry never shortens the owner's hold: the new hold lives at least as
-- long as its longest live one (a shorter inner hold running out would make
-- the next unlock drop them all).
local px = tonumber(ARGV[1])
local mine = k > 1 and rw_owner_ttl(KEYS[3], ARGV[2], k - 1) or -2
if mine == -1 then
    redis.call('set', rw_marker(KEYS[3], ARGV[2], k), 1)
else
    redis.call('set', rw_marker(KEYS[3], ARGV[2], k), 1, 'px', math.max(px, mine))
end
-- The hash outlives every live hold: a writer gets in when the longest ends.
if ttl == -2 then
    redis.call('pexpire', KEYS[1], ARGV[1])
else
    keep_longer(KEYS[1], math.max(px, mine))
end
return nil
