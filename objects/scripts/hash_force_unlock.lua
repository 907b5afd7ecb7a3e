-- Any lock kept as a hash: delete it whoever holds it and tell the waiters.
-- KEYS[1] the lock hash, KEYS[2] the wake-up channel; ARGV[1] the message,
-- ARGV[2] the publish command (publish.luainc).
-- Reply: 1 it existed, 0 it did not. A key of another type is left alone.
-- #include publish.luainc
local t = redis.call('type', KEYS[1]).ok
if t == 'none' then
    return 0
end
if t ~= 'hash' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
redis.call('del', KEYS[1])
publish(KEYS[2], ARGV[1])
return 1
