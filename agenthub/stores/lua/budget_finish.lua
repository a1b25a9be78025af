local now = clock()
account()
local actual = nil
if ARGV[3] ~= '-' then actual = tonumber(ARGV[3]) end
local spent, held = sweep(now)
if ARGV[1] == '' then  -- nothing held: an unpriced model's request, counted
  spent = spent + (actual or 0)
elseif redis.call('HDEL', KEYS[2], ARGV[1]) == 1 then
  if actual ~= nil then spent = spent + actual end
else
  -- expired (its worst case counted): the difference put right, once; else settled already (a retried call whose
  -- first try was done) or never held: nothing
  local counted = gone_hold(ARGV[1])
  if counted == nil then
    kept()
    return 0
  end
  spent = math.max(0, spent + (actual or 0) - counted)
end
redis.call('HSET', KEYS[1], 'spent', fmt(spent))
if actual ~= nil then redis.call('HINCRBY', KEYS[1], 'requests', 1) end
kept()
return 0
