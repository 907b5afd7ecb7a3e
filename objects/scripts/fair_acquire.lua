-- Fair lock, one acquisition attempt.
-- KEYS[1] the lock hash, KEYS[2] the wait queue (list), KEYS[3] the waiters'
-- deadlines (sorted set), KEYS[4] the channel prefix (a waiter O listens on
-- KEYS[4] .. ':' .. O), KEYS[5] the dlock waiters' liveness (sorted set:
-- owner -> the wall ms until which it is presumed alive; dlock's own key,
-- which Java clients neither read nor write).
-- ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] W, the thread wait time (ms),
-- ARGV[4] now (wall ms), ARGV[5] the wake-up message, ARGV[6] '0' for a
-- single attempt that leaves no trace, '1' to join the queue when busy, '2'
-- when an earlier attempt of this call joined it, ARGV[7] L, the waiter
-- timeout (ms; 0: this waiter keeps Redisson's rules only), ARGV[8] the
-- retry argument (retry_granted.luainc), ARGV[9] the publish command
-- (publish.luainc).
--
-- Deadlines follow Redisson's rules, so that Java and dlock waiters can share
-- one queue: a waiter joins with the deadline of the waiter in front of it
-- (the lock's expiry when it is first) plus W, so deadlines are stacked W
-- apart; every acquisition from the queue moves every deadline W earlier
-- (everyone is one place closer); a waiter that gives up moves those behind
-- it W earlier (fair_give_up.lua). Two more rules keep a live dlock waiter
-- in line whatever the others do, and change nothing a Java client relies on:
--  * a waiter whose deadline fell more than W/2 behind the one it would get
--    by joining now at its place gets that one back, and the waiters behind
--    it move along so that the next one stays W behind it;
--  * only the first in line is ever purged, so a waiter that was queued and
--    finds itself gone ('2' and no deadline) was purged at the head while
--    alive (its deadline pushed into the past by others' shifts, or its
--    liveness by a stall longer than L): it goes back to the head, its old
--    place.
-- And one more lets a dead dlock waiter go quickly: a dlock waiter in line
-- keeps an entry in KEYS[5], renewed to now + L at every attempt (it makes
-- one at least every L/4); the purge (fair_purge.luainc) drops a first in
-- line whose entry there has passed, whatever its deadline says. A Java
-- waiter has no entry and is judged by its deadline alone.
-- Reply: nil when the owner now holds it. Else the owner is (still) in line,
-- and the reply is how long nothing can change for it: the lock's PTTL if it
-- is first in line (-1: no expiry), else the time until the first waiter's
-- deadline.
-- An error reply, with nothing changed (no dead waiter purged either), for
-- a bad time, a key of another type, or a hold count that is not an integer.
-- #include time_check.luainc
-- #include lease_keep.luainc
-- #include publish.luainc
-- #include fair_check.luainc
-- #include retry_granted.luainc
local bad = time_bad(1, 1, 'lease') or time_bad(3, 1, 'slack') or wall_bad(4)
            or time_bad(7, 0, 'waiter timeout') or fair_bad(ARGV[2])
if bad then
    return bad
end
local now = tonumber(ARGV[4])
local wait = tonumber(ARGV[3])
local alive_ms = tonumber(ARGV[7])
-- #include fair_purge.luainc
purge_dead(now, ARGV[5])

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if not granted_before(KEYS[1], ARGV[2], 8) then
        redis.call('hincrby', KEYS[1], ARGV[2], 1)
    end
    keep_longer(KEYS[1], ARGV[1]) -- a re-entry never shortens the hold
    return nil
end

local mine = redis.call('zscore', KEYS[3], ARGV[2])
if ARGV[6] == '2' and not mine then
    redis.call('lrem', KEYS[2], 0, ARGV[2])
    redis.call('lpush', KEYS[2], ARGV[2])
end

local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == ARGV[2]) then
    if head then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[2])
        redis.call('zrem', KEYS[5], ARGV[2])
    end
    local waiting = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #waiting do
        redis.call('zincrby', KEYS[3], -wait, waiting[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    -- The next in line must now watch this lease (an expiring lease sends
    -- no message of its own), and must be alive to.
    purge_dead(now, ARGV[5])
    local next_head = redis.call('lindex', KEYS[2], 0)
    if next_head then
        publish(KEYS[4] .. ':' .. next_head, ARGV[5])
    end
    return nil
end

local ttl = redis.call('pttl', KEYS[1])
if ARGV[6] == '0' then
    return ttl
end

local queue = redis.call('lrange', KEYS[2], 0, -1)
local pos = nil
for i = 1, #queue do
    if queue[i] == ARGV[2] then
        pos = i
        break
    end
end
if not pos then
    redis.call('rpush', KEYS[2], ARGV[2])
    queue[#queue + 1] = ARGV[2]
    pos = #queue
end

-- The deadline it would get by joining now at its place.
local base = now + math.max(ttl, 0)
if pos > 1 then
    local before = tonumber(redis.call('zscore', KEYS[3], queue[pos - 1]))
    if before and before > base then
        base = before
    end
end
local target = base + wait
mine = mine and tonumber(mine)
if not mine or mine < target - math.floor(wait / 2) then
    mine = target
    redis.call('zadd', KEYS[3], target, ARGV[2])
    local after = pos < #queue and redis.call('zscore', KEYS[3], queue[pos + 1])
    if after and tonumber(after) < target + wait then
        local by = target + wait - tonumber(after)
        for i = pos + 1, #queue do
            if redis.call('zscore', KEYS[3], queue[i]) then
                redis.call('zincrby', KEYS[3], by, queue[i])
            end
        end
    end
end

-- Alive until now + L. The set lives at least as long as this waiter's
-- deadline: a dead dlock waiter stays known as one until Redisson's rule
-- would drop it anyway.
if alive_ms > 0 then
    local keep = math.max(mine - now, 0) + alive_ms
    redis.call('zadd', KEYS[5], now + alive_ms, ARGV[2])
    if redis.call('pttl', KEYS[5]) < keep then
        redis.call('pexpire', KEYS[5], keep)
    end
else
    redis.call('zrem', KEYS[5], ARGV[2])
end

if pos == 1 then
    return ttl
end
-- Nothing changes for this waiter before the first in line is presumed
-- dead (or takes the lock, which wakes it).
local first = tonumber(redis.call('zscore', KEYS[3], queue[1]))
local first_alive = tonumber(redis.call('zscore', KEYS[5], queue[1]))
if first_alive and (not first or first_alive < first) then
    first = first_alive
end
if not first then
    return 1
end
return math.max(first - now, 1)
