-- Semaphore: set the permits if the semaphore does not exist yet.
-- KEYS[1] the count; ARGV[1] permits (>= 0), ARGV[2] TTL ms (0: none),
-- ARGV[3] the wake-up channel, ARGV[4] the publish command (publish.luainc).
-- Reply: 1 set, 0 it existed (unchanged).
-- #include time_check.luainc
-- #include semaphore_count.luainc
-- #include publish.luainc
-- both checked before the SET (the message after it reads the permits)
local bad = time_bad(2, 0, 'ttl') or arg_out_of_range(1, 0, count_max, 'permits')
if bad then
    return bad
end
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
if tonumber(ARGV[2]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
else
    redis.call('set', KEYS[1], ARGV[1])
end
-- Acquirers may have been waiting for the semaphore to be set up.
if tonumber(ARGV[1]) > 0 then
    publish(ARGV[3], ARGV[1])
end
return 1
