-- the journal of a durable run: its holder lets the lease go (KEYS: meta; ARGV: owner)
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'owner')
  redis.call('HSET', KEYS[1], 'until', 0)
end
return 0
