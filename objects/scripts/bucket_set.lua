-- Bucket: store a value.
-- KEYS[1] the bucket; ARGV[1] the value, ARGV[2] TTL ms ('0': none),
-- ARGV[3] '1' to store only when no value is there.
-- Reply: 1 stored, 0 a value was there (only with ARGV[3] = '1').
-- #include time_check.luainc
local time_err = time_bad(2, 0, 'ttl')
if time_err then
    return time_err
end
-- #include bucket_common.luainc
if ARGV[3] == '1' and redis.call('exists', KEYS[1]) == 1 then
    return 0
end
bucket_write(ARGV[1], ARGV[2])
return 1
