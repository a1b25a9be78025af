local now = clock()
account()
local spent, held = sweep(now)
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do
  local v = redis.call('HGET', KEYS[2], ARGV[i])
  if v then
    local a = string.match(v, '^(%S+) ')
    redis.call('HSET', KEYS[2], ARGV[i], a .. ' ' .. fmt(now + lease))
  end
end
kept()
return 0
