-- Watchdog renewal of write holds (the contract of api/dlock/sys/methods.h).
-- KEYS[i] a read-write lock hash; ARGV[1] lease ms; ARGV[1 + i] the owner of
-- KEYS[i]. The hash is extended, never shortened: the writer's own read
-- holds may need longer.
-- Reply: an array with 1 (renewed) or 0 (no longer held) per key. A key of
-- another type counts as not held instead of failing the whole batch.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
-- #include rwlock_common.luainc
local out = {}
for i = 1, #KEYS do
    local held = redis.pcall('hexists', KEYS[i], rw_write_field(ARGV[i + 1]))
    if held == 1 then
        keep_longer(KEYS[i], ARGV[1])
        out[i] = 1
    else
        out[i] = 0
    end
end
return out
