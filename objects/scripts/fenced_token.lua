-- dlock: no-writes
-- Fenced lock: the current token, for its holder.
-- KEYS[1] the lock hash, KEYS[2] the token counter; ARGV[1] owner id.
-- Reply: the latest token handed out (that of the owner's latest
-- acquisition) when the owner holds the lock, else nil.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return nil
end
return tonumber(redis.call('get', KEYS[2])) or 0
