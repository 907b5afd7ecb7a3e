-- Object lifetime: no key of the object expires any more.
-- KEYS, ARGV[1..5] as object_keys.luainc; ARGV[6] the publish command
-- (unused: nothing is woken).
-- Reply: 1 some key had an expiry, 0 none had.
-- #include object_keys.luainc
local done = 0
for i = 1, #keys do
    done = done + redis.call('persist', keys[i])
end
return done > 0 and 1 or 0
