-- Permit-expirable semaphore, one acquisition attempt.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] lease ms (> 0),
-- ARGV[6..] the ids the permits get (made by the caller: scripts have no
-- randomness of their own).
-- Reply: nil when taken; else how long until the first lease in the set
-- ends, in ms (-1: no permit is taken, only a release can help).
-- #include semaphore_count.luainc
-- #include permit_check.luainc
local time_err = time_bad(5, 1, 'lease')
if time_err then
    return time_err
end
-- #include permit_reclaim.luainc
local n = #ARGV - 5
if count >= n then
    local ends = now + tonumber(ARGV[5])
    for i = 6, #ARGV do
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
if #first == 0 then
    return -1
end
return tonumber(first[2]) - now
