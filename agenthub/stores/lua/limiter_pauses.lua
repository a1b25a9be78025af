local now = clock()
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local name = all[i]
  if name == 'p' or string.sub(name, 1, 2) == 'e:' then
    local untl = num(all[i + 1], 'limiter')
    if untl > now + 600 then  -- written by a clock ahead (a failover): made to end 600 s from now, as read
      untl = now + 600
      redis.call('HSET', KEYS[1], name, fmt(untl))
    end
    if untl > now then
      if name == 'p' then table.insert(out, '') else table.insert(out, string.sub(name, 3)) end
      table.insert(out, fmt(math.min(untl - now, 600)))  -- (no pause is longer: one further ahead, a clock ahead)
    elseif name ~= 'p' then
      redis.call('HDEL', KEYS[1], name)
    end
  end
end
return out
