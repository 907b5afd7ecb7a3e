-- Watchdog renewal for simple locks (a string holding the owner's id).
-- KEYS[i] a lock; ARGV[1] lease ms; ARGV[1 + i] the owner of KEYS[i].
-- Reply: an array with 1 (renewed) or 0 (no longer held) per key. A key of
-- another type counts as not held instead of failing the whole batch.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
local out = {}
for i = 1, #KEYS do
    if redis.pcall('get', KEYS[i]) == ARGV[i + 1] then
        redis.call('pexpire', KEYS[i], ARGV[1])
        out[i] = 1
    else
        out[i] = 0
    end
end
return out
