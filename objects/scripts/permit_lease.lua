-- Permit-expirable semaphore, read only: the lease left of one permit.
-- KEYS, ARGV[1..4] as permit_check.luainc; ARGV[5] the id.
-- Reply: ms left, or -2 when the permit is not taken (expired, released or
-- unknown).
-- #include semaphore_count.luainc
-- #include permit_check.luainc
if permit_status(ARGV[5]) ~= 1 then
    return -2
end
return tonumber(redis.call('zscore', KEYS[2], ARGV[5])) - now
