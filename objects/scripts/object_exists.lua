-- Object lifetime, read only: whether any key of the object exists.
-- KEYS, ARGV[1..5] as object_keys.luainc; ARGV[6] the publish command
-- (unused: nothing is woken). Reply: 1 or 0.
-- #include object_keys.luainc
return existing() > 0 and 1 or 0
