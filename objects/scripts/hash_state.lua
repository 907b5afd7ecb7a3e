-- dlock: no-writes
-- Read-only state of a lock kept as a hash with one field per owner.
-- KEYS[1] the lock hash; ARGV[1] owner id (may be empty).
-- Reply: {exists (0/1), the owner's hold count, PTTL}.
local count = redis.call('hget', KEYS[1], ARGV[1])
return {redis.call('exists', KEYS[1]), tonumber(count) or 0,
        redis.call('pttl', KEYS[1])}
