-- One step of listing objects by name (api/dlock/object.h:
-- dlock_client_scan). Reads only. No KEYS on a single server; on Redis
-- Cluster one KEYS entry that only routes the call to the master being
-- listed (never read).
-- ARGV[1] the cursor, ARGV[2] the MATCH pattern, ARGV[3] the COUNT hint.
-- Reply: {next cursor, name...}: the keys that matched, less the
-- auxiliary keys of the types in DESIGN.md's data layout (queues,
-- deadlines, tokens, holders, leases, read-hold markers, owner
-- descriptions, the total dlock(1) records for a semaphore), which are not
-- objects of their own.
-- A key is taken for an auxiliary one only when both its name and its
-- Redis type are those of the layout (an owner description: the client's
-- UUID in braces): a lock the user named "dlock_owner:x" or
-- "redisson_lock_queue:y" is listed, not hidden.
local r = redis.call('scan', ARGV[1], 'match', ARGV[2], 'count', ARGV[3])
local out = {r[1]}
local hex = '%x%x%x%x'
local uuid = hex .. hex .. '%-' .. hex .. '%-' .. hex .. '%-' .. hex .. '%-' ..
    hex .. hex .. hex
-- {Lua pattern of the name, the Redis type it has}
local aux_shapes = {
    {'^redisson_lock_queue:', 'list'},
    {'^redisson_lock_timeout:', 'zset'},
    {'^redisson_lock_token:', 'string'},
    {'^dlock_lock_alive:', 'zset'},
    {'^dlock_owner:{' .. uuid .. '}$', 'hash'},
    {'^{.*}:holders$', 'hash'},
    {'^{.*}:timeout$', 'zset'},
    {'^{.*}:expired$', 'zset'},
    {'^{.*}:lease:', 'string'},
    {'^{.*}:total$', 'string'},
    {'^{.*:rwlock_timeout:%d+$', 'string'},
}
local function aux(k)
    for i = 1, #aux_shapes do
        if string.find(k, aux_shapes[i][1]) then
            -- A key this user may not read (ACL) is left out, as it was
            -- when the name alone decided.
            local t = redis.pcall('type', k)
            return t.ok == nil or t.ok == aux_shapes[i][2]
        end
    end
    return false
end
for i = 1, #r[2] do
    if not aux(r[2][i]) then
        out[#out + 1] = r[2][i]
    end
end
return out
