-- Permit-expirable semaphore: set or change the permits.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] the mode: 'total' makes
-- the total ARGV[6] (available = total - taken), 'try' does the same only
-- if the count does not exist yet, 'add' adds ARGV[6] to the available
-- permits (negative allowed); ARGV[7] the publish command.
-- Reply: 1 done, 0 not ('try' on an existing count).
-- #include semaphore_count.luainc
-- #include permit_check.luainc
local existed = redis.call('exists', KEYS[1]) == 1
-- #include permit_reclaim.luainc
local mode, v = ARGV[5], tonumber(ARGV[6])
if mode == 'try' and existed then
    if reclaimed > 0 then
        wake(count)
    end
    return 0
end
local new = v + count
if mode ~= 'add' then
    new = v - redis.call('zcard', KEYS[2])
end
if not count_ok(new) then
    return redis.error_reply('ERR the permit count would leave +-(2^53 - 1)')
end
-- incrby, not set: keeps a TTL someone gave the count
redis.call('incrby', KEYS[1], count_str(new - count))
if new > count or reclaimed > 0 then
    wake(new)
end
return 1
