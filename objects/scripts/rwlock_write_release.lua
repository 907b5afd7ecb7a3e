-- Read-write lock, write half: release one write hold.
-- KEYS as rwlock_common.luainc; ARGV[1] owner id, ARGV[2] lease ms the hold
-- keeps at least while still held (0: keep the TTL), ARGV[3] the publish
-- command.
-- Reply: nil the owner does not hold the write lock; 0 still held; 1 the
-- last write hold released (the owner's read holds, if any, stay: mode
-- becomes read) and every waiter woken. An error, with nothing changed,
-- for a bad lease or a reserved owner id.
-- #include time_check.luainc
-- #include rwlock_common.luainc
local time_err = time_bad(2, 0, 'lease') or rw_owner_bad(1)
if time_err then
    return time_err
end
local mode = redis.call('hget', KEYS[1], 'mode')
local field = rw_write_field(ARGV[1])
local count = tonumber(redis.call('hget', KEYS[1], field))
if mode ~= 'write' or not count then
    return nil
end
if count > 1 then
    redis.call('hset', KEYS[1], field, count - 1)
    if tonumber(ARGV[2]) > 0 then
        keep_longer(KEYS[1], ARGV[2])
    end
    return 0
end
redis.call('hdel', KEYS[1], field)
rw_writer_gone(KEYS[1], KEYS[3], KEYS[2])
return 1
