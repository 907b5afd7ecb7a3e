-- Permit-expirable semaphore: a taken permit's lease becomes lease ms from now.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] lease ms (> 0, or -1: permanent), ARGV[6]
-- the id, ARGV[7] the publish command.
-- Reply: the id's status (permit_status): only 1 changed the lease.
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_never.luainc
local time_err = lease_bad(5)
if time_err then
    return time_err
end
-- #include permit_reclaim.luainc
local s = permit_status(ARGV[6])
if s == 1 then
    redis.call('zadd', KEYS[2], lease_ends(5), ARGV[6])
end
if reclaimed > 0 then
    wake(count)
end
return s
