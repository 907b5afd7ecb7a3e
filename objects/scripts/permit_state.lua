-- Permit-expirable semaphore, read only: the counts, with permits whose
-- lease ended counted as available (as the next writer will make them).
-- KEYS, ARGV[1..4] as permit_check.luainc.
-- Reply: {available, acquired, total}.
-- #include semaphore_count.luainc
-- #include permit_check.luainc
local ended = redis.call('zcount', KEYS[2], '-inf', now)
local taken = redis.call('zcard', KEYS[2])
return {count + ended, taken - ended, count + taken}
