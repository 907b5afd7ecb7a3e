-- Read-write lock, read half: release the owner's newest read hold.
-- KEYS as rwlock_common.luainc; ARGV[1] owner id, ARGV[2] unused (the write
-- half's lease), ARGV[3] the publish command.
-- Reply: nil the owner holds no read lock, or the hold's lease had run out
-- (then all of the owner's read holds are dropped: the caller forgets them
-- too); 0 one hold less, still held; 1 the owner's last read hold released.
-- An error, with nothing changed, for a reserved owner id (a writer's
-- field is no read hold to release).
-- A read hold keeps its own lease: nothing is re-applied. In read mode a
-- release that shortens the hash's life (the released hold was the longest)
-- publishes the read-unlock message too, so that a sleeping writer re-reads
-- the TTL at once instead of sleeping for the one it saw.
-- #include rwlock_common.luainc
local bad = rw_owner_bad(1)
if bad then
    return bad
end
local mode = redis.call('hget', KEYS[1], 'mode')
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not mode or not count or count < 1 then
    return nil
end
local before = redis.call('pttl', KEYS[1])
local alive = redis.call('del', rw_marker(KEYS[3], ARGV[1], count)) == 1
if alive and count > 1 then
    redis.call('hset', KEYS[1], ARGV[1], count - 1)
else
    for k = 1, count - 1 do
        redis.call('del', rw_marker(KEYS[3], ARGV[1], k))
    end
    redis.call('hdel', KEYS[1], ARGV[1])
end
-- In write mode the hash's TTL is the writer's; in read mode it follows the
-- live readers, and when none is left or it got shorter a waiting writer
-- is told.
if mode == 'read' and (rw_fit_to_readers(KEYS[1], KEYS[3])
                      or rw_shorter(redis.call('pttl', KEYS[1]), before)) then
    publish(KEYS[2], '0')
end
if not alive then
    return nil
end
if count > 1 then
    return 0
end
return 1
