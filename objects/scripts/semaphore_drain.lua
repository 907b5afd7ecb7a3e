-- Semaphore: take every available permit.
-- KEYS[1] the count. Reply: how many were taken (0 when the count is 0 or
-- negative, which is left alone).
-- #include semaphore_count.luainc
if count <= 0 then
    return 0
end
redis.call('decrby', KEYS[1], count_str(count))
return count
