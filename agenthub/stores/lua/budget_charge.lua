-- KEYS[5]: this charge's mark (a retried call whose first try was done finds it: charged once); ARGV (after the
-- epoch): USD, how long the mark lives (ms: past any retry of the call)
local now = clock()
account()
local spent, held = sweep(now)
if not redis.call('SET', KEYS[5], '1', 'NX', 'PX', ARGV[2]) then
  kept()
  return 0
end
redis.call('HSET', KEYS[1], 'spent', fmt(spent + tonumber(ARGV[1])))
kept()
return 0
