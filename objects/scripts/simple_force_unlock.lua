-- Simple lock: delete it whoever holds it and tell the waiters.
-- KEYS[1] the lock, KEYS[2] the wake-up channel; ARGV[1] the publish
-- command (publish.luainc).
-- Reply: 1 it existed, 0 it did not. The GET refuses (WRONGTYPE) a key of
-- another kind before anything is deleted.
-- #include publish.luainc
if not redis.call('get', KEYS[1]) then
    return 0
end
redis.call('del', KEYS[1])
publish(KEYS[2], '0')
return 1
