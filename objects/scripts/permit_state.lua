-- dlock: no-writes
-- Permit-expirable semaphore, read only: the counts.
-- KEYS, ARGV[1..4] as permit_check.luainc.
-- Reply: {available, acquired, total}.
-- #include semaphore_count.luainc
-- #include permit_check.luainc
-- #include permit_counts.luainc
return {available, acquired, total}
