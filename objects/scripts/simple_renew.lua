-- Watchdog renewal for simple locks (a string holding the owner's id).
-- KEYS[i] a lock; ARGV[1] lease ms; ARGV[1 + i] the owner of KEYS[i].
-- Reply: an array with 1 (renewed) or 0 (no longer held) per key. A key of
-- another type counts as not held instead of failing the whole batch.
-- #include renew_batch.luainc
return renew_batch(function(key, owner)
    return redis.pcall('get', key) == owner
end)
