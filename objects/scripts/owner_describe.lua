-- A client's description of itself (api/dlock/client.h: describe_owner):
-- one hash per client, KEYS[1] = dlock_owner:{<client uuid>}, rewritten
-- whole and given ARGV[5] ms more by every call (the watchdog's period).
-- ARGV[1] host, ARGV[2] pid, ARGV[3] program, ARGV[4] start (unix ms).
-- Reply: 1.
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], 'host', ARGV[1], 'pid', ARGV[2], 'program', ARGV[3],
           'started_ms', ARGV[4])
redis.call('pexpire', KEYS[1], ARGV[5])
return 1
