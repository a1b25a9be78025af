local now = clock()
account()
local needed = tonumber(ARGV[2])
local actual = nil
if ARGV[3] ~= '-' then actual = tonumber(ARGV[3]) end
local spent, held = sweep(now)
if redis.call('HDEL', KEYS[2], ARGV[1]) == 1 then
  if actual ~= nil then spent = spent + actual end
else
  spent = math.max(0, spent + (actual or 0) - needed)
end
redis.call('HSET', KEYS[1], 'spent', fmt(spent))
if actual ~= nil then redis.call('HINCRBY', KEYS[1], 'requests', 1) end
kept()
return 0
