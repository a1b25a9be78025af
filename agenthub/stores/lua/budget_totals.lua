local now = clock()
account()
local spent, held = sweep(now)
local requests = num(redis.call('HGET', KEYS[1], 'requests'), 'budget') or 0
kept()
return {fmt(spent), fmt(held), requests}
