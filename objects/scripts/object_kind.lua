-- What is stored under an object's name, whatever the handle's type
-- (api/dlock/object.h: dlock_object_kind). Reads only.
-- KEYS[1] the name, KEYS[2] redisson_lock_queue:{N}, KEYS[3]
-- redisson_lock_timeout:{N}, KEYS[4] dlock_lock_alive:{N}, KEYS[5]
-- redisson_lock_token:{N}, KEYS[6] {N}:holders, KEYS[7] {N}:timeout.
-- Reply: the kind's name (a status-free bulk string).
local function has(i)
    return redis.call('exists', KEYS[i]) == 1
end
local t = redis.call('type', KEYS[1]).ok
local fair = has(2) or has(3) or has(4)
if t == 'hash' then
    if redis.call('hexists', KEYS[1], 'mode') == 1 then
        return 'rwlock'
    end
    if fair then
        return 'fair'
    end
    if has(5) then
        return 'fenced'
    end
    return 'reentrant'
elseif t == 'string' or t == 'none' then
    if has(6) then
        return 'semaphore_lock'
    end
    if has(7) then
        return 'permit_semaphore'
    end
    if t == 'none' then
        if fair then
            return 'fair'
        end
        return has(5) and 'fenced' or 'none'
    end
    local v = redis.call('get', KEYS[1])
    if string.match(v, '^%-?%d+$') then
        return 'counter'
    end
    -- an owner id "<uuid>:<thread>" (api/dlock/simple_lock.h)
    if string.match(v, '^%x+%-%x+%-%x+%-%x+%-%x+:%d+$') then
        return 'simple'
    end
    return 'string'
end
return 'other'
