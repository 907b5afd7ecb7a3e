-- Simple (non-reentrant) lock, one acquisition attempt.
-- KEYS[1] the lock: a string holding its owner's id (redis-py's layout);
-- ARGV[1] lease ms; ARGV[2] owner id; ARGV[3] '1' when an earlier attempt
-- of the same call got no answer (a lost or late reply) and the owner held
-- nothing before the call: finding the owner the holder then is that
-- attempt's grant, granted again (optional: '0').
-- Reply: nil when the owner now holds it; else {the holder's PTTL (-1: no
-- expiry), 1 when the holder is this very owner (no re-entry), else 0}.
-- #include time_check.luainc
local time_err = time_bad(1, 1, 'lease')
if time_err then
    return time_err
end
if redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then
    return nil
end
-- another kind of value under the name fails here (WRONGTYPE)
local holder = redis.call('get', KEYS[1])
if holder == ARGV[2] and ARGV[3] == '1' then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return {redis.call('pttl', KEYS[1]), holder == ARGV[2] and 1 or 0}
