-- Read-write lock: read-only state of one half.
-- KEYS as rwlock_common.luainc; ARGV[1] owner id (may be empty), ARGV[2] 'read' or
-- 'write' (the half asking).
-- Reply: {locked (that half is held by someone: 0/1), the owner's hold count
-- of that half, the half's remaining time: read, the longest live read
-- hold's TTL; write, the hash's PTTL; -2 when not locked}.
-- A read hold whose lease ran out counts as gone even while other readers
-- keep the hash (and the dead field) alive: the same rule as the release
-- and renewal scripts (the owner's newest marker tells).
-- #include rwlock_common.luainc
local mode = redis.call('hget', KEYS[1], 'mode')
local locked, count, ttl = 0, 0, -2
if ARGV[2] == 'write' then
    if mode == 'write' then
        locked = 1
        ttl = redis.call('pttl', KEYS[1])
    end
    if ARGV[1] ~= '' then
        count = tonumber(redis.call('hget', KEYS[1], rw_write_field(ARGV[1]))) or 0
    end
elseif mode then
    ttl = rw_readers_ttl(KEYS[1], KEYS[3], false)
    if ttl ~= -2 then
        locked = 1
    end
    if ARGV[1] ~= '' then
        count = tonumber(redis.call('hget', KEYS[1], ARGV[1])) or 0
        if count > 0 and redis.call('exists', rw_marker(KEYS[3], ARGV[1], count)) == 0 then
            count = 0
        end
    end
end
return {locked, count, ttl}
