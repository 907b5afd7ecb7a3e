-- Object lifetime: delete every key of the object and wake its waiters.
-- KEYS, ARGV[1..5] as object_keys.luainc; ARGV[6] the publish command.
-- Reply: 1 some key existed, 0 none did.
-- #include object_keys.luainc
if existing() == 0 then
    return 0
end
wake() -- first: the fair lock's waiters are read from its queue
for i = 1, #keys do
    redis.call('del', keys[i])
end
return 1
