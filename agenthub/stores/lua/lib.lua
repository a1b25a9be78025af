local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function fmt(x) return string.format('%.17g', x) end
local function num(v, what)
  if v == false or v == nil then return nil end
  local n = tonumber(v)
  if n == nil or n ~= n or n == math.huge or n == -math.huge then
    error('AGENTHUB_CORRUPT the ' .. what .. ' row is corrupt', 0)
  end
  return n
end
local function sweep(now)
  local spent = num(redis.call('HGET', KEYS[1], 'spent'), 'budget') or 0
  local expired = 0
  local held = 0
  local all = redis.call('HGETALL', KEYS[2])
  local gone = {}
  -- every hold checked before any is changed (a script's error keeps what it wrote before it)
  for i = 1, #all, 2 do
    local a, b = string.match(all[i + 1], '^(%S+) (%S+)$')
    local needed = num(a, 'budget hold')
    if needed == nil or b == nil then error('AGENTHUB_CORRUPT the budget hold row is corrupt', 0) end
    if b ~= '-' and num(b, 'budget hold') < now then
      spent = spent + needed
      expired = expired + 1
      table.insert(gone, all[i])
      table.insert(gone, needed)
    else
      held = held + needed
    end
  end
  for i = 1, #gone, 2 do
    redis.call('HDEL', KEYS[2], gone[i])
    redis.call('HSET', KEYS[4], gone[i], fmt(gone[i + 1]) .. ' ' .. fmt(now))  -- remembered for a late settlement
  end
  if expired > 0 then
    redis.call('HSET', KEYS[1], 'spent', fmt(spent))
    redis.call('HINCRBY', KEYS[1], 'expired', expired)
    redis.call('PEXPIRE', KEYS[4], 172800000)  -- (and the whole of it two days after the last hold expired)
    -- the expired holds remembered past GONE_SECONDS (a day) are forgotten
    local old = redis.call('HGETALL', KEYS[4])
    for i = 1, #old, 2 do
      local when = tonumber(string.match(old[i + 1], ' (%S+)$') or '')
      if when == nil or when < now - 86400 then redis.call('HDEL', KEYS[4], old[i]) end
    end
  end
  return spent, held
end
-- a budget's expired hold, remembered (KEYS[4]) and forgotten: its worst case, counted when it expired; nil when
-- the store does not remember it
local function gone_hold(hold_id)
  local v = redis.call('HGET', KEYS[4], hold_id)
  if not v then return nil end
  local needed = num(string.match(v, '^(%S+) '), 'budget hold')
  if needed == nil then error('AGENTHUB_CORRUPT the budget hold row is corrupt', 0) end
  redis.call('HDEL', KEYS[4], hold_id)
  return needed
end
local function limiter(now)
  local s = redis.call('HMGET', KEYS[1], 'r', 't', 'p')
  return num(s[1], 'limiter') or now, num(s[2], 'limiter') or now, num(s[3], 'limiter') or now
end
local function keep(now, r, t, p)
  redis.call('HSET', KEYS[1], 'r', fmt(r), 't', fmt(t), 'p', fmt(p))
  -- a row whose times are all past says nothing a fresh row would not: let it go when idle (an endpoint's
  -- pause, at most 600 s, is covered by the 660 s floor)
  redis.call('PEXPIRE', KEYS[1], math.ceil((math.max(r, t, p) - now + 660) * 1000))
end
-- the budget scripts: KEYS[1] the account, KEYS[2] its holds, KEYS[3] the store's epoch hash (its 'epoch'
-- field, written when the store was first opened; a field per account that exists), KEYS[4] its expired holds
-- (id -> 'worst-case when', kept a day for a late settlement); ARGV[1] the epoch
-- this process opened the store with (taken off ARGV: the script's own arguments follow).  A store that
-- lost its rows (a restart without persistence, a failover to a replica that lags, an eviction) must never
-- start an account again from $0 without a word: it refuses.  An account that exists keeps a 'spent' field
-- and, among its holds, the mark '.' (a hold of 0 that never expires: counted as nothing, by any version).
local function account()
  local epoch = table.remove(ARGV, 1)
  if redis.call('HGET', KEYS[3], 'epoch') ~= epoch then
    error('AGENTHUB_LOST the store lost its rows (its epoch is gone or new: a restart without persistence, '
          .. 'a failover, a FLUSHALL or an eviction)', 0)
  end
  if redis.call('HEXISTS', KEYS[3], KEYS[1]) == 1 and (redis.call('HEXISTS', KEYS[1], 'spent') == 0
      or redis.call('HEXISTS', KEYS[2], '.') == 0) then
    error('AGENTHUB_LOST the store lost the rows of this budget (evicted, or deleted)', 0)
  end
end
local function kept()
  redis.call('HSETNX', KEYS[1], 'spent', '0')
  redis.call('HSETNX', KEYS[2], '.', '0 -')
  redis.call('HSET', KEYS[3], KEYS[1], '1')
end
-- the journal's claims (a run's start): up to 32 runs of the index (KEYS[3], scored by when the run's keys expire)
-- past that time are looked at: out of the index when their keys are gone, scored again when not (renewed since)
local function expire_runs(now, prefix)
  for _, run in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', fmt(now), 'LIMIT', 0, 32)) do
    local ms = redis.call('PTTL', prefix .. run)
    if ms == -2 then
      redis.call('ZREM', KEYS[3], run)
    elseif ms == -1 then
      redis.call('ZADD', KEYS[3], 'inf', run)
    else
      redis.call('ZADD', KEYS[3], fmt(now + ms / 1000), run)
    end
  end
end
