-- Count-down latch: one count less; at zero the count is deleted and every
-- awaiter told ('0').
-- KEYS[1] the count; ARGV[1] the channel, ARGV[2] the publish command
-- (publish.luainc).
-- Reply: the count left (0 when the latch is, or now became, open).
-- #include semaphore_count.luainc
-- #include publish.luainc
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
if count > 1 then
    return redis.call('decr', KEYS[1])
end
-- A stored count of 0 or less (written by someone else) opens it as well.
redis.call('del', KEYS[1])
publish(ARGV[1], '0')
return 0
