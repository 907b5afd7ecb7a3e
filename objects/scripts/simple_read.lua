-- Simple lock, one read, no side effects: every read call and the state.
-- KEYS[1] the lock.
-- Reply: {PTTL (-2: not held), the holder's id ('' when not held)}.
local holder = redis.call('get', KEYS[1])
return {redis.call('pttl', KEYS[1]), holder or ''}
