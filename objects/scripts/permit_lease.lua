-- dlock: no-writes
-- Permit-expirable semaphore, read only: the lease left of one permit.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] the id, ARGV[6] the
-- publish command (unused: the C side passes it to every call with ids).
-- Reply: ms left, -1 for a permanent permit, or -2 when the permit is not
-- taken (expired, released or unknown).
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_never.luainc
if permit_status(ARGV[5]) ~= 1 then
    return -2
end
local ends = redis.call('zscore', KEYS[2], ARGV[5])
if is_never(ends) then
    return -1
end
return tonumber(ends) - now
