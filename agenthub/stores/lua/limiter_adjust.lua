local now = clock()
local r, t, p = limiter(now)
keep(now, r, math.min(t + tonumber(ARGV[1]), now + 600), p)
return 0
