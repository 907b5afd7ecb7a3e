-- Bucket: store a value only while a lock is held by the writer, checked and
-- written in one step, so that a holder whose lease ran out cannot
-- overwrite what the next holder wrote.
-- KEYS[1] the bucket, KEYS[2] the lock hash, KEYS[3] (with a token only) the
-- fenced lock's token counter.
-- ARGV[1] the value, ARGV[2] TTL ms ('0': none), ARGV[3] the field of the
-- lock hash that proves the writer's hold, ARGV[4] the writer's token ('0':
-- none to check).
-- Reply: 1 stored; 0 the lock is not held by the writer; -1 the token is
-- stale (a later acquisition handed out a greater one); -2 the token was
-- never handed out. The token is checked first: it says more.
-- #include time_check.luainc
local time_err = time_bad(2, 0, 'ttl')
if time_err then
    return time_err
end
-- #include bucket_common.luainc
if ARGV[4] ~= '0' then
    local current = tonumber(redis.call('get', KEYS[3]) or '0')
    local token = tonumber(ARGV[4])
    if not current then
        return redis.error_reply('ERR the token counter "' .. KEYS[3] ..
                                 '" is not an integer')
    end
    if token < current then
        return -1
    end
    if token > current then
        return -2
    end
end
if redis.call('hexists', KEYS[2], ARGV[3]) == 0 then
    return 0
end
bucket_write(ARGV[1], ARGV[2])
return 1
