local now = clock()
local name, value, ttl, max_bytes, prefix = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
-- (a size that is not a number counts as nothing, as SQLite's store counts it: its entry goes in its turn)
local function size_of(v)
  local n = tonumber(v or '')
  if n == nil or n ~= n or n == math.huge or n == -math.huge then return 0 end
  return n
end
local total = size_of(redis.call('HGET', KEYS[3], ''))
local function drop(n)
  local size = size_of(redis.call('HGET', KEYS[3], n))
  redis.call('DEL', prefix .. n)
  redis.call('HDEL', KEYS[3], n)
  redis.call('ZREM', KEYS[2], n)
  total = total - size
end
drop(name)
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', fmt(now))) do drop(n) end
if #value <= max_bytes then
  if ttl > 0 then
    redis.call('SET', KEYS[1], value, 'PX', math.ceil(ttl * 1000))
    redis.call('ZADD', KEYS[2], fmt(now + ttl), name)
  else
    redis.call('SET', KEYS[1], value)
    redis.call('ZADD', KEYS[2], fmt(now + 1e9), name)
  end
  redis.call('HSET', KEYS[3], name, #value)
  total = total + #value
  while total > max_bytes do
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
    if #oldest == 0 or oldest[1] == name then break end
    drop(oldest[1])
  end
end
redis.call('HSET', KEYS[3], '', math.max(0, total))
return 0
