-- Semaphore as a lock: every holder's permit goes back, whoever holds it.
-- KEYS[1..3], ARGV[1] as semaphore_lock_reclaim.luainc; ARGV[2] the publish
-- command.
-- Reply: 1 there was a holder, 0 there was none.
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- #include semaphore_lock_reclaim.luainc
local holders = redis.call('hkeys', KEYS[2])
if #holders == 0 then
    if freed > 0 then
        wake(count)
    end
    return 0
end
for i = 1, #holders do
    redis.call('del', KEYS[3] .. holders[i])
end
redis.call('del', KEYS[2])
wake(redis.call('incrby', KEYS[1], #holders))
return 1
