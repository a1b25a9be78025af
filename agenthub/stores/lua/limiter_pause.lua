local now = clock()
local r, t, p = limiter(now)
local untl = now + tonumber(ARGV[1])
if ARGV[2] == '' then
  keep(now, r, t, math.max(p, untl))
  if untl > p then return 1 end
  return 0
end
local field = 'e:' .. ARGV[2]
local before = num(redis.call('HGET', KEYS[1], field), 'limiter') or -1
keep(now, r, t, p)
if untl > before then
  redis.call('HSET', KEYS[1], field, fmt(untl))
  return 1
end
return 0
