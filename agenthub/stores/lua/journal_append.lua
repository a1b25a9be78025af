-- the journal of a durable run: its next entry, only from the lease's holder and only as the next number
-- (KEYS: meta, entries, index; ARGV: owner, seq, entry, ttl or '', run_id)
local now = clock()
local m = redis.call('HMGET', KEYS[1], 'owner', 'until', 'entries')
local untl = num(m[2], 'journal') or 0
if m[1] ~= ARGV[1] or untl <= now then
  if m[1] and untl > now then return {'lost', 1} end
  return {'lost', 0}
end
local n = num(m[3], 'journal') or 0
if tonumber(ARGV[2]) ~= n then return {'seq', n} end
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[1], 'entries', n + 1, 'updated', fmt(now))
redis.call('ZADD', KEYS[3], now, ARGV[5])
if ARGV[4] ~= '' then
  local ms = math.ceil(tonumber(ARGV[4]) * 1000)
  redis.call('PEXPIRE', KEYS[1], ms)
  redis.call('PEXPIRE', KEYS[2], ms)
else
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[2])
end
return {'ok', n + 1}
