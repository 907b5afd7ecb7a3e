-- Semaphore, one acquisition attempt.
-- KEYS[1] the count; ARGV[1] permits wanted (> 0).
-- Reply: nil when taken; else the available count (too small).
-- #include semaphore_count.luainc
if count >= tonumber(ARGV[1]) then
    -- decrby, not set: a TTL given by try_set_permits stays
    redis.call('decrby', KEYS[1], ARGV[1])
    return nil
end
return count
