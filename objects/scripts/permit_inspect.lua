-- dlock: no-writes
-- Permit-expirable semaphore, read only: its state document's data.
-- KEYS, ARGV[1..4] as permit_check.luainc.
-- Reply: {available, acquired, total, {id, lease left in ms, ...}} with the
-- permits whose lease runs, the first to end first, each id in the hex form
-- callers know (the set holds raw bytes); -1 for a permanent permit.
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_counts.luainc
-- #include permit_never.luainc
local permits = {}
-- '(' excludes now itself: a lease ending at now is over (permit_status)
local running = redis.call('zrangebyscore', KEYS[2], '(' .. ARGV[1], '+inf', 'withscores')
for i = 1, #running, 2 do
    permits[#permits + 1] = (string.gsub(running[i], '.', function(c)
        return string.format('%02x', string.byte(c))
    end))
    permits[#permits + 1] = is_never(running[i + 1]) and -1
                            or tonumber(running[i + 1]) - now
end
return {available, acquired, total, permits}
