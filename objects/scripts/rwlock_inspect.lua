-- Read-write lock, read only: the whole lock for its state document (both
-- halves ask the same).
-- KEYS as rwlock_common.luainc.
-- Reply: {mode ('' when free), the hash's PTTL, the read half's remaining
-- time (as rwlock_state.lua: the longest live read hold, -2 none),
-- {reader, read hold count, the longest TTL among its read holds, ...} in
-- owner order, {writer, write hold count, the hash's PTTL} or {} when there
-- is none}.
-- A reader is listed while its newest read hold is alive, the rule of
-- rwlock_state.lua's hold count: an owner whose newest hold ran out loses
-- all of them at its next unlock, so it holds nothing any more.
-- #include rwlock_common.luainc
local mode = redis.call('hget', KEYS[1], 'mode')
local ttl = redis.call('pttl', KEYS[1])
local fields, _, wfield = rw_fields(KEYS[1], mode)
local owners, readers, writer = {}, {}, {}
for f, n in pairs(fields) do
    if f ~= wfield and n > 0
       and redis.call('exists', rw_marker(KEYS[3], f, n)) == 1 then
        owners[#owners + 1] = f
    end
end
-- pairs() has no order; a sorted list reads the same on every call
table.sort(owners)
for _, o in ipairs(owners) do
    readers[#readers + 1] = o
    readers[#readers + 1] = fields[o]
    readers[#readers + 1] = rw_owner_ttl(KEYS[3], o, fields[o])
end
if wfield then
    -- the writer's field is its owner id + ':write'
    writer = {string.sub(wfield, 1, -1 - #rw_write_suffix), fields[wfield], ttl}
end
return {mode or '', ttl, rw_readers_ttl(KEYS[1], KEYS[3], false), readers, writer}
