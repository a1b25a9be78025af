-- the journal of a durable run: take or renew its lease (KEYS: meta, entries; ARGV: owner, lease, ttl or '')
local now = clock()
local m = redis.call('HMGET', KEYS[1], 'owner', 'until', 'entries')
local untl = num(m[2], 'journal') or 0
if m[1] and m[1] ~= ARGV[1] and untl > now then return fmt(untl - now) end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'until', fmt(now + tonumber(ARGV[2])))
if not m[3] then
  redis.call('HSET', KEYS[1], 'entries', 0, 'updated', fmt(now))
  if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000)) end
else
  journal_kept()
end
return false
