-- Semaphore as a lock, read only: who holds it, without reclaiming.
-- KEYS[1] the count, KEYS[2] the holders hash; ARGV[1] the lease key
-- prefix, ARGV[2] owner id (may be empty).
-- Reply: {holders whose lease runs, the owner's hold count (0 when its
-- lease ran out), the longest lease left among them (-2 none, -1 one has no
-- expiry)}.
-- #include semaphore_count.luainc
-- #include semaphore_lock_check.luainc
local live, mine, longest = 0, 0, -2
local h = redis.call('hgetall', KEYS[2])
for i = 1, #h, 2 do
    local ttl = redis.call('pttl', ARGV[1] .. h[i])
    if ttl ~= -2 then
        live = live + 1
        if h[i] == ARGV[2] then
            mine = tonumber(h[i + 1]) or 0
        end
        if ttl == -1 or longest == -1 then
            longest = -1
        elseif ttl > longest then
            longest = ttl
        end
    end
end
return {live, mine, longest}
