-- Redlock renewal on one node. ARGV[3] '0': extend only; '1': extend or
-- set (redsync's extend-or-set), sent only to the nodes that lost the key
-- while a majority still had it (a node restarted without persistence), so
-- that a lock deleted everywhere (force unlock) is reported lost, not
-- brought back.
-- KEYS[1] the lock hash; ARGV[1] lease ms; ARGV[2] owner id; ARGV[3] mode.
-- Reply: 1 owner holds it here now, 0 nobody does, -1 another owner does.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
if redis.call('exists', KEYS[1]) == 1 then
    return -1
end
if ARGV[3] == '1' then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
