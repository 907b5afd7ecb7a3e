-- dlock: no-writes
-- Introspection of a lock kept as a hash with one field per owner: one read,
-- no side effects (dead fair-lock waiters are reported, not purged).
-- KEYS[1] the lock hash; ARGV[1] what else to read: 'plain'; 'fenced' with
-- KEYS[2] the token counter; 'fair' with KEYS[2] the queue, KEYS[3] the
-- waiters' deadlines, KEYS[4] the dlock waiters' liveness.
-- Reply: {PTTL of the hash, {owner, hold count, lease left, ...}, extra},
-- extra being 0 ('plain'), the latest token handed out, 0 if none
-- ('fenced'), or {owner, deadline (wall ms, -1 unknown), ...} in queue order
-- ('fair'), the deadline being when the waiter is presumed dead: the
-- sooner of its deadline and, for a dlock waiter, its liveness.
-- The first command reads the hash: a key of another type fails here.
local flat = redis.call('hgetall', KEYS[1])
local ttl = redis.call('pttl', KEYS[1])
local holders = {}
for i = 1, #flat, 2 do
    holders[#holders + 1] = flat[i]
    holders[#holders + 1] = tonumber(flat[i + 1]) or 0
    -- one hash, one lease: every holder of these locks shares it
    holders[#holders + 1] = ttl
end
local extra = 0
if ARGV[1] == 'fenced' then
    extra = tonumber(redis.call('get', KEYS[2])) or 0
elseif ARGV[1] == 'fair' then
    extra = {}
    for _, owner in ipairs(redis.call('lrange', KEYS[2], 0, -1)) do
        extra[#extra + 1] = owner
        local deadline = tonumber(redis.call('zscore', KEYS[3], owner))
        local alive = tonumber(redis.call('zscore', KEYS[4], owner))
        if alive and (not deadline or alive < deadline) then
            deadline = alive
        end
        extra[#extra + 1] = deadline or -1
    end
end
return {ttl, holders, extra}
