local now = clock()
local rpm, tpm, tokens = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local r, t, p = limiter(now)
local at = now
if rpm > 0 then at = math.max(at, r); r = at + 60 / rpm end
if tpm > 0 then at = math.max(at, t); t = at + math.min(tokens * 60 / tpm, 600) end
keep(now, r, t, p)
return fmt(at - now)
