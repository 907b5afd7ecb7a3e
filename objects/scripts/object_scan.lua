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
local r = redis.call('scan', ARGV[1], 'match', ARGV[2], 'count', ARGV[3])
local out = {r[1]}
local aux_prefixes = {'redisson_lock_queue:', 'redisson_lock_timeout:',
                      'redisson_lock_token:', 'dlock_lock_alive:', 'dlock_owner:'}
local function aux(k)
    for i = 1, #aux_prefixes do
        local p = aux_prefixes[i]
        if string.sub(k, 1, #p) == p then
            return true
        end
    end
    if string.sub(k, 1, 1) ~= '{' then
        return false
    end
    return string.match(k, '}:holders$') or string.match(k, '}:timeout$') or
        string.match(k, '}:expired$') or string.match(k, '}:lease:') or
        string.match(k, '}:total$') or
        string.match(k, ':rwlock_timeout:%d+$')
end
for i = 1, #r[2] do
    if not aux(r[2][i]) then
        out[#out + 1] = r[2][i]
    end
end
return out
