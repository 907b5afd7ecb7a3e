-- Redlock fencing: raises one node's token counter to at least ARGV[1], so
-- that every node of the majority that granted an acquisition knows its
-- token (any later majority shares a node with it: its tokens are larger).
-- KEYS[1] the token counter; ARGV[1] the token.
-- Reply: the counter after the call.
local t = tonumber(redis.call('get', KEYS[1]) or '0')
local want = tonumber(ARGV[1])
if t == nil or want == nil then
    return redis.error_reply('ERR token counter or argument is not an integer')
end
if t < want then
    redis.call('set', KEYS[1], ARGV[1])
    return want
end
return t
