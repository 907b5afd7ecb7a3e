-- dlock: no-writes
-- Read the integer at KEYS[1]: a semaphore's available permits, or a
-- latch's count (the same layout). Reply: the integer, 0 when absent.
-- #include semaphore_count.luainc
return count
