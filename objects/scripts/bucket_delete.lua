-- Bucket: delete the value.
-- KEYS[1] the bucket. Reply: 1 there was one, 0 there was none.
-- #include bucket_common.luainc
return redis.call('del', KEYS[1])
