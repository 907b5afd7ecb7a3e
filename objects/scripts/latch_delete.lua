-- Count-down latch: delete the count, releasing every awaiter.
-- KEYS[1] the count; ARGV[1] the channel, ARGV[2] the publish command
-- (publish.luainc).
-- Reply: 1 a count was there, 0 the latch was open.
-- #include semaphore_count.luainc
-- #include publish.luainc
if redis.call('del', KEYS[1]) == 0 then
    return 0
end
publish(ARGV[1], '0')
return 1
