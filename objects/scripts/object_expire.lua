-- Object lifetime: every key of the object expires ARGV[6] ms from now
-- (ARGV[7] 'at': at the wall-clock ms ARGV[6] instead); waiters are woken so
-- that they re-read the time left.
-- KEYS, ARGV[1..5] as object_keys.luainc; ARGV[8] the publish command.
-- Reply: 1 some key existed (and got the expiry), 0 none did.
-- #include time_check.luainc
local time_err
if ARGV[7] == 'at' then
    time_err = wall_bad(6)
else
    time_err = time_bad(6, 0, 'expiry')
end
if time_err then
    return time_err
end
-- #include object_keys.luainc
local cmd = ARGV[7] == 'at' and 'pexpireat' or 'pexpire'
local done = 0
for i = 1, #keys do
    done = done + redis.call(cmd, keys[i], ARGV[6])
end
if done == 0 then
    return 0
end
wake()
return 1
