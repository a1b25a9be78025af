local now = clock()
account()
local spent, held = sweep(now)
redis.call('HSET', KEYS[1], 'spent', fmt(spent + tonumber(ARGV[1])))
kept()
return 0
