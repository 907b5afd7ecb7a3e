-- Bucket: take the value out.
-- KEYS[1] the bucket. Reply: the value (nil: there was none), now deleted.
-- #include bucket_common.luainc
local v = redis.call('get', KEYS[1])
if v then
    redis.call('del', KEYS[1])
end
return v
