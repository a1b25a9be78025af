-- the journal of a durable run: its next entries (one or more, in order, at once), only from the lease's
-- holder and only from the next number; with release '1', the lease let go with them (KEYS: meta, entries,
-- index; ARGV: owner, seq, ttl or '', run_id, release '1' or '', entry, entry...)
local now = clock()
local m = redis.call('HMGET', KEYS[1], 'owner', 'until', 'entries')
local untl = num(m[2], 'journal') or 0
local n = num(m[3], 'journal') or 0
local count = #ARGV - 5
-- a retried call whose first try was done (its reply lost to a cut connection): these entries are the last ones
-- written, at these numbers (and with release, the lease let go): done, once
local function done_before()
  local seq = tonumber(ARGV[2])
  if count == 0 or seq + count ~= n then return false end
  local have = redis.call('LRANGE', KEYS[2], seq, n - 1)
  if #have ~= count then return false end
  for i = 1, count do
    if have[i] ~= ARGV[5 + i] then return false end
  end
  return true
end
if m[1] ~= ARGV[1] or untl <= now then
  if ARGV[5] == '1' and not m[1] and done_before() then return {'ok', n} end
  if m[1] and untl > now then return {'lost', 1} end
  return {'lost', 0}
end
if tonumber(ARGV[2]) ~= n then
  if done_before() then return {'ok', n} end
  return {'seq', n}
end
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
