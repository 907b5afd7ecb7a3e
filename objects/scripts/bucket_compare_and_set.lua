-- Bucket: replace the value only if it is the expected one.
-- KEYS[1] the bucket; ARGV[1] '1' a value is expected (ARGV[2], its bytes),
-- '0' the bucket is expected empty; ARGV[3] '1' store ARGV[4] with TTL
-- ARGV[5] ms ('0': none), '0' delete the value.
-- Reply: 1 replaced, 0 the bucket did not hold what was expected.
-- #include time_check.luainc
if ARGV[3] == '1' then
    local time_err = time_bad(5, 0, 'ttl')
    if time_err then
        return time_err
    end
end
-- #include bucket_common.luainc
local v = redis.call('get', KEYS[1])
if ARGV[1] == '1' then
    if v ~= ARGV[2] then
        return 0
    end
elseif v then
    return 0
end
if ARGV[3] == '1' then
    bucket_write(ARGV[4], ARGV[5])
else
    redis.call('del', KEYS[1])
end
return 1
