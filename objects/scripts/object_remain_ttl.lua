-- Object lifetime, read only: how long until no key of the object is left.
-- KEYS, ARGV[1..5] as object_keys.luainc; ARGV[6] the publish command
-- (unused: nothing is woken).
-- Reply: -2 no key exists, -1 some key has no expiry, else the longest
-- PTTL among the keys.
-- #include object_keys.luainc
local best = -2
for i = 1, #keys do
    local t = redis.call('pttl', keys[i])
    if t == -1 or best == -1 then
        best = -1
    elseif t > best then
        best = t
    end
end
return best
