-- Permit-expirable semaphore: set or change the permits.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] the mode: 'total' makes
-- the total ARGV[6] (available = total - taken), 'try' does the same only
-- if the count does not exist yet, 'add' adds ARGV[6] to the available
-- permits (negative allowed); ARGV[7] the publish command.
-- Reply: 1 done, 0 not ('try' on an existing count). An error, with
-- nothing changed, when the count would leave +-(2^53 - 1).
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_counts.luainc
local existed = redis.call('exists', KEYS[1]) == 1
local mode, v = ARGV[5], int_of(ARGV[6])
-- The count the call leaves is checked before the reclaiming step writes:
-- that step gives the permits whose lease ended back to the count, so
-- afterwards the count is `available` and the permits taken `acquired`
-- (permit_counts.luainc).
local new = v and (mode == 'add' and v + available or v - acquired)
if not new then
    return redis.error_reply('ERR invalid permits "' .. string.sub(tostring(ARGV[6]), 1, 24) ..
                             '" (ARGV[6]): an integer expected')
end
if not (mode == 'try' and existed) and not count_ok(new) then
    return redis.error_reply('ERR the permit count would leave +-(2^53 - 1)')
end
-- #include permit_reclaim.luainc
if mode == 'try' and existed then
    if reclaimed > 0 then
        wake(count)
    end
    return 0
end
-- incrby, not set: keeps a TTL someone gave the count
redis.call('incrby', KEYS[1], count_str(new - count))
if new > count or reclaimed > 0 then
    wake(new)
end
return 1
