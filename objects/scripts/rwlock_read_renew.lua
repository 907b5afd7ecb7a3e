-- Watchdog renewal of read holds (the contract of api/dlock/sys/methods.h).
-- KEYS[i] a read-write lock hash; ARGV[1] lease ms; ARGV[1 + i] the owner of
-- KEYS[i]. Each of the owner's live markers gets the lease again and the
-- hash is extended to cover them. Only this owner's holds are renewed: a
-- dead reader's holds run out even while others are renewed.
-- Reply: an array with 1 (renewed) or 0 (no longer held: no read hold, or
-- the newest one's lease ran out) per key. A key of another type counts as
-- not held instead of failing the whole batch.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
-- #include rwlock_common.luainc
local out = {}
for i = 1, #KEYS do
    local count = tonumber(redis.pcall('hget', KEYS[i], ARGV[i + 1]))
    out[i] = 0
    local prefix = rw_prefix(KEYS[i])
    if count and count > 0
       and redis.call('pexpire', rw_marker(prefix, ARGV[i + 1], count), ARGV[1]) == 1 then
        for k = 1, count - 1 do
            redis.call('pexpire', rw_marker(prefix, ARGV[i + 1], k), ARGV[1])
        end
        keep_longer(KEYS[i], ARGV[1])
        out[i] = 1
    end
end
return out
