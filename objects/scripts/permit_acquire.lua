-- Permit-expirable semaphore, one acquisition attempt.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] lease ms (> 0, or -1: permanent),
-- ARGV[6..#ARGV - 1] the ids the permits get (made by the caller: scripts
-- have no randomness of their own), ARGV[#ARGV] the publish command.
-- Reply: nil when taken; else how long until the first lease in the set
-- ends, in ms (-1: no permit is taken, or all are permanent: only a
-- release can help).
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_never.luainc
local time_err = lease_bad(5)
if time_err then
    return time_err
end
-- #include permit_reclaim.luainc
local n = #ARGV - 6
-- A retry of an attempt whose reply was lost (the caller keeps its ids
-- for the whole call): when the ids are taken already, that attempt
-- granted them, and taking them again would take the count twice for
-- one set of ids, a permit lost for good. Granted, as it was.
if n > 0 and redis.call('zscore', KEYS[2], ARGV[6]) then
    return nil
end
if count >= n then
    local ends = lease_ends(5)
    for i = 6, #ARGV - 1 do
        redis.call('zadd', KEYS[2], ends, ARGV[i])
    end
    redis.call('decrby', KEYS[1], n)
    -- permits reclaimed beyond ours are news for other waiters
    if reclaimed > 0 then
        wake(count - n)
    end
    return nil
end
if reclaimed > 0 then
    wake(count)
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if #first == 0 or is_never(first[2]) then
    return -1
end
return tonumber(first[2]) - now
