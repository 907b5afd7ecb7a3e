-- Where dlock_client_scan must look (api/dlock/object.h): on Redis Cluster,
-- every master's slot ranges, as {start, end, node id} triples flattened
-- into one array; elsewhere (a single server, the mock) an empty array.
-- No KEYS (any node answers for the whole cluster). Reads only.
local ok, slots = pcall(redis.call, 'cluster', 'slots')
local out = {}
if not ok or type(slots) ~= 'table' then
    return out
end
for i = 1, #slots do
    local r = slots[i]
    local master = r[3]
    if type(master) == 'table' and master[3] then
        out[#out + 1] = r[1]
        out[#out + 1] = r[2]
        out[#out + 1] = master[3]
    end
end
return out
