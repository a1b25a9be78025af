-- the journal of a durable run: its next entries (one or more, in order, at once), only from the lease's
-- holder and only from the next number; with release '1', the lease let go with them (KEYS: meta, entries,
-- index; ARGV: owner, seq, ttl or '', run_id, release '1' or '', entry, entry...)
local now = clock()
local m = redis.call('HMGET', KEYS[1], 'owner', 'until', 'entries')
local untl = num(m[2], 'journal') or 0
if m[1] ~= ARGV[1] or untl <= now then
  if m[1] and untl > now then return {'lost', 1} end
  return {'lost', 0}
end
local n = num(m[3], 'journal') or 0
if tonumber(ARGV[2]) ~= n then return {'seq', n} end
local count = #ARGV - 5
for i = 6, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if ARGV[5] == '1' then
  redis.call('HDEL', KEYS[1], 'owner')
  redis.call('HSET', KEYS[1], 'entries', n + count, 'updated', fmt(now), 'until', 0)
else
  redis.call('HSET', KEYS[1], 'entries', n + count, 'updated', fmt(now))
end
if ARGV[3] ~= '' then
  local ms = math.ceil(tonumber(ARGV[3]) * 1000)
  redis.call('PEXPIRE', KEYS[1], ms)
  redis.call('PEXPIRE', KEYS[2], ms)
  redis.call('ZADD', KEYS[3], fmt(now + ms / 1000), ARGV[4])  -- (the index: scored by when the run goes)
else
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[2])
  redis.call('ZADD', KEYS[3], 'inf', ARGV[4])
end
return {'ok', n + count}
