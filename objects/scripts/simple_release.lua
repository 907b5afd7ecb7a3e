-- Simple lock, release.
-- KEYS[1] the lock, KEYS[2] the wake-up channel; ARGV[1] owner id,
-- ARGV[2] the publish command (publish.luainc).
-- Reply: nil the owner does not hold it; 1 released and waiters told.
-- #include publish.luainc
if redis.call('get', KEYS[1]) ~= ARGV[1] then
    return nil
end
redis.call('del', KEYS[1])
publish(KEYS[2], '0')
return 1
