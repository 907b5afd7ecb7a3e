-- Semaphore as a lock, read only: its state document's data, without
-- reclaiming.
-- KEYS[1] the count, KEYS[2] the holders hash; ARGV[1] the lease key prefix.
-- Reply: {available permits, counting those of ended holds (as the next
-- acquirer will find them), the longest lease left (-2 none, -1 one has no
-- expiry), {owner, hold count, lease left, ...}}.
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- #include semaphore_lock_live.luainc
return {count + ended, longest, live}
