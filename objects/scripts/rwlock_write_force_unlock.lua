-- Read-write lock, write half: remove the writer's holds, whoever holds
-- them; the writer's own read holds stay (mode becomes read).
-- KEYS as rwlock_common.luainc; ARGV[1] the publish command.
-- Reply: 1 the write lock was held, 0 it was not.
-- #include rwlock_common.luainc
local mode = redis.call('hget', KEYS[1], 'mode')
if mode ~= 'write' then
    return 0
end
local fields, n, writer = rw_fields(KEYS[1], mode)
if writer then
    redis.call('hdel', KEYS[1], writer)
end
rw_writer_gone(KEYS[1], KEYS[3], KEYS[2])
return 1
