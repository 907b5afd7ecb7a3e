-- Read-write lock, read half: remove every read hold, whoever holds it; a
-- writer keeps the write lock.
-- KEYS as rwlock_common.luainc; ARGV[1] the publish command.
-- Reply: 1 there were read holds, 0 there were none.
-- #include rwlock_common.luainc
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    return 0
end
local fields, n, writer = rw_fields(KEYS[1], mode)
local existed = 0
for f, count in pairs(fields) do
    if f ~= writer then
        for k = 1, count do
            redis.call('del', rw_marker(KEYS[3], f, k))
        end
        redis.call('hdel', KEYS[1], f)
        existed = 1
    end
end
if existed == 0 then
    return 0
end
if not writer then
    redis.call('del', KEYS[1])
end
publish(KEYS[2], '0')
return 1
