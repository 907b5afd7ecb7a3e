-- Permit-expirable semaphore: release a list of permits, all or nothing.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5..#ARGV - 1] the ids,
-- ARGV[#ARGV] the publish command.
-- Reply: one status per id, as permit_status (1 taken, -1 expired, 0 not
-- taken), or -2 for an id given a second time. Only when every status is 1
-- were the permits released (and waiters told); else nothing changed but the
-- reclaiming of expired permits.
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_reclaim.luainc
local status, seen, all = {}, {}, true
for i = 5, #ARGV - 1 do
    local s = seen[ARGV[i]] and -2 or permit_status(ARGV[i])
    seen[ARGV[i]] = true
    status[#status + 1] = s
    all = all and s == 1
end
if all then
    for i = 5, #ARGV - 1 do
        redis.call('zrem', KEYS[2], ARGV[i])
    end
    count = redis.call('incrby', KEYS[1], #ARGV - 5)
    wake(count)
elseif reclaimed > 0 then
    wake(count)
end
return status
