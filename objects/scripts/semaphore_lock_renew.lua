-- Watchdog renewal of semaphore-lock holds.
-- KEYS[i] a semaphore name; ARGV[1] lease ms; ARGV[1 + i] the owner of
-- KEYS[i]. Reply: an array with 1 (renewed) or 0 (no longer held) per key.
-- The renewal contract hands over the name only, so the holders hash and
-- the lease key are derived here with dlock_rlock_key's rule (braces around
-- the name unless it has one already); another type under them counts as
-- not held instead of failing the batch.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
local out = {}
for i = 1, #KEYS do
    local n = KEYS[i]
    local base = string.find(n, '{', 1, true) and n or ('{' .. n .. '}')
    local owner = ARGV[i + 1]
    out[i] = 0
    if redis.pcall('hexists', base .. ':holders', owner) == 1
       and redis.call('pexpire', base .. ':lease:' .. owner, ARGV[1]) == 1 then
        out[i] = 1
    end
end
return out
