-- Semaphore: release permits, or add (or remove) some.
-- KEYS[1] the count; ARGV[1] delta, ARGV[2] the wake-up channel, ARGV[3] '1'
-- to do it only if the semaphore exists, ARGV[4] the most the count may
-- become ('' no limit), ARGV[5] the publish command (publish.luainc).
-- Reply: 1 done, 0 not (it did not exist and ARGV[3] is '1', or it would
-- pass ARGV[4]: nothing is changed).
-- #include semaphore_count.luainc
-- #include publish.luainc
if ARGV[3] == '1' and redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local delta = tonumber(ARGV[1])
local new = count + delta
if ARGV[4] ~= '' and delta > 0 and new > tonumber(ARGV[4]) then
    return 0
end
if not count_ok(new) then
    return redis.error_reply('ERR the permit count would leave +-(2^53 - 1)')
end
redis.call('incrby', KEYS[1], ARGV[1])
-- Only more permits can let a waiter in; the message is the new count.
if delta > 0 and new > 0 then
    publish(ARGV[2], count_str(new))
end
return 1
