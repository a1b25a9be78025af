local now = clock()
account()
local max_usd, needed, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local spent, held = sweep(now)
local mine = redis.call('HGET', KEYS[2], ARGV[3])
if mine then  -- a retried call whose first try held it: held once
  kept()
  return {1, fmt(spent + held - num(string.match(mine, '^(%S+) '), 'budget hold'))}
end
if spent + held + needed > max_usd + 1e-12 then
  kept()
  return {0, fmt(spent + held)}
end
local expires = '-'
if lease ~= '-' then expires = fmt(now + tonumber(lease)) end
redis.call('HSET', KEYS[2], ARGV[3], fmt(needed) .. ' ' .. expires)
kept()
return {1, fmt(spent + held)}
