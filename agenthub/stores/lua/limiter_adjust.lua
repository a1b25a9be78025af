local now = clock()
local r, t, p = limiter(now)
keep(now, r, math.min(t + tonumber(ARGV[1]), math.max(t, now) + 600), p)
return 0
