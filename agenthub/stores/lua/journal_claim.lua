-- the journal of a durable run: take or renew its lease (KEYS: meta, entries; ARGV: owner, lease, ttl or '')
local now = clock()
local m = redis.call('HMGET', KEYS[1], 'owner', 'until', 'entries')
local untl = num(m[2], 'journal') or 0
if m[1] and m[1] ~= ARGV[1] and untl > now then return fmt(untl - now) end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'until', fmt(now + tonumber(ARGV[2])))
if not m[3] then
  redis.call('HSET', KEYS[1], 'entries', 0, 'updated', fmt(now))
  if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000)) end
elseif ARGV[3] ~= '' then
  -- a run taken or renewed lives ttl from now at least (its ttl counts from its last write or renewal)
  local ms = math.ceil(tonumber(ARGV[3]) * 1000)
  for _, key in ipairs(KEYS) do
    local left = redis.call('PTTL', key)
    if left >= 0 and left < ms then redis.call('PEXPIRE', key, ms) end
  end
end
return false
