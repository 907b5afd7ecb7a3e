-- What is stored under an object's name, whatever the handle's type
-- (api/dlock/object.h: dlock_object_kind). Reads only. No type is named
-- here: each built-in type's descriptor says how its data is recognised
-- (objects/types/type.h, dlock__kind), and objects/types/kinds.c passes
-- them in rank order.
-- KEYS[1] the name, then the marks of every kind (keys derived from the
-- name, in the same slot).
-- ARGV: six per kind: its name; what the name may hold (1 nothing, 2 a
-- hash, 4 a string, summed); a field its hash has ('' none); the index in
-- KEYS of its first mark and how many there are, one of which exists (0:
-- no such condition); a Lua pattern its string matches ('' none).
-- Reply: the first kind whose every condition holds, else 'none', 'string'
-- or 'other' by what the name holds (a status-free bulk string).
local t = redis.call('type', KEYS[1]).ok
local at = ({none = 1, hash = 2, string = 4})[t]
if not at then
    return 'other'
end
local value
local function fits(i)
    if math.floor(tonumber(ARGV[i + 1]) / at) % 2 ~= 1 then
        return false
    end
    if ARGV[i + 2] ~= '' and redis.call('hexists', KEYS[1], ARGV[i + 2]) ~= 1 then
        return false
    end
    local first, n = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
    if n > 0 then
        local found = false
        for k = first, first + n - 1 do
            if redis.call('exists', KEYS[k]) == 1 then
                found = true
                break
            end
        end
        if not found then
            return false
        end
    end
    if ARGV[i + 5] ~= '' then
        if t ~= 'string' then
            return false
        end
        value = value or redis.call('get', KEYS[1])
        return string.match(value, ARGV[i + 5]) ~= nil
    end
    return true
end
for i = 1, #ARGV, 6 do
    if fits(i) then
        return ARGV[i]
    end
end
if t == 'none' or t == 'string' then
    return t
end
return 'other'
