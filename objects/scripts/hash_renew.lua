-- Watchdog renewal for locks kept as a hash with one field per owner.
-- KEYS[i] a lock hash; ARGV[1] lease ms; ARGV[1 + i] the owner of KEYS[i].
-- Reply: an array with 1 (renewed) or 0 (no longer held) per key. A key of
-- another type counts as not held instead of failing the whole batch.
-- #include renew_batch.luainc
return renew_batch(function(key, owner)
    return redis.pcall('hexists', key, owner) == 1
end)
