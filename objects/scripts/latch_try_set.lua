-- Count-down latch: set the count if the latch is open (no count stored).
-- KEYS[1] the count; ARGV[1] the count (>= 1), ARGV[2] the channel,
-- ARGV[3] the publish command (publish.luainc).
-- Reply: 1 set, 0 a count was there (unchanged).
-- #include semaphore_count.luainc
-- #include publish.luainc
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('set', KEYS[1], ARGV[1])
publish(ARGV[2], '1')
return 1
