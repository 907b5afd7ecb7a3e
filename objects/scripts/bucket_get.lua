-- Bucket: read the value and its TTL.
-- KEYS[1] the bucket. Reply (a nil would end the array, so the value comes
-- last, and only when present): {PTTL (-2: absent, -1: no expiry), value}.
-- #include bucket_common.luainc
local v = redis.call('get', KEYS[1])
if not v then
    return {-2}
end
return {redis.call('pttl', KEYS[1]), v}
