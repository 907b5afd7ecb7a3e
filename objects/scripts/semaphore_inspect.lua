-- dlock: no-writes
-- Read the integer at KEYS[1] (a semaphore's available permits, a latch's
-- count) and its remaining time, for a state document.
-- Reply: {the integer (0 when absent), its PTTL (-2 absent, -1 no expiry)}.
-- #include semaphore_count.luainc
return {count, redis.call('pttl', KEYS[1])}
