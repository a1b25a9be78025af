local now = clock()
account()
local max_usd, needed, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local spent, held = sweep(now)
if spent + held + needed > max_usd + 1e-12 then
  kept()
  return {0, fmt(spent + held)}
end
local expires = '-'
if lease ~= '-' then expires = fmt(now + tonumber(lease)) end
redis.call('HSET', KEYS[2], ARGV[3], fmt(needed) .. ' ' .. expires)
kept()
return {1, fmt(spent + held)}
