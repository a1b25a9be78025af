-- the journal of a durable run: take or renew its lease (KEYS: meta, entries, the index of runs; ARGV: owner,
-- lease, ttl or '', the prefix of a run's meta key)
local now = clock()
expire_runs(now, ARGV[4])
local m = redis.call('HMGET', KEYS[1], 'owner', 'until', 'entries')
local untl = num(m[2], 'journal') or 0
if m[1] and m[1] ~= ARGV[1] and untl > now then return fmt(untl - now) end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'until', fmt(now + tonumber(ARGV[2])))
if not m[3] then
  redis.call('HSET', KEYS[1], 'entries', 0, 'updated', fmt(now))
  if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000)) end
end
return false
