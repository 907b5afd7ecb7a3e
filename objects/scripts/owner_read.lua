-- Reads a client's description (owner_describe.lua). Reads only.
-- KEYS[1] = dlock_owner:{<client uuid>}. Reply: {host, pid, program,
-- started_ms} as bulk strings, or 0 when the client published none (or its
-- description expired, the client gone).
if redis.call('type', KEYS[1]).ok ~= 'hash' then
    return 0
end
local v = redis.call('hmget', KEYS[1], 'host', 'pid', 'program', 'started_ms')
for i = 1, 4 do
    if not v[i] then
        return 0
    end
end
return v
