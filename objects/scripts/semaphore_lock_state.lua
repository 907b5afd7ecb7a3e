-- dlock: no-writes
-- Semaphore as a lock, read only: who holds it, without reclaiming.
-- KEYS[1] the count, KEYS[2] the holders hash, KEYS[3] the lease key
-- prefix; ARGV[1] owner id (may be empty).
-- Reply: {holders whose lease runs, the owner's hold count (0 when its
-- lease ran out), the longest lease left among them (-2 none, -1 one has no
-- expiry)}.
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
-- #include semaphore_lock_live.luainc
local mine = 0
for i = 1, #live, 3 do
    if live[i] == ARGV[1] then
        mine = live[i + 1]
    end
end
return {#live / 3, mine, longest}
