"""RedisStore: rows on a Redis server (5 or newer), shared by every machine that reaches it.

The only module of agenthub that imports ``redis`` (the optional extra ``redis``: ``pip install ".[redis]"``), and only
when a ``redis://`` or ``rediss://`` store is opened.  Every update is one Lua script run by the server
(atomic: no other client's command runs in between), and every time is the server's ``TIME``, never a
worker's clock.

URL: ``redis://[[user]:password@]host[:port][/db][?timeout=S&wait=S]`` (``rediss://`` for TLS).
``timeout`` (5 s): the socket timeout of each command.  ``wait`` (0 s): how long a command keeps
retrying while the server is unreachable.  When the server cannot be reached (at open, or mid-run),
the limiter and the budget raise ``StoreError`` (retryable) and the request is not sent: the default
fails closed, never letting a call through unpaced or unbudgeted.  ``?wait=30`` rides out a restart
of up to 30 s instead.  A budget hold whose settlement could not reach the server keeps its lease
until it expires (then its whole worst case counts as spent).
"""

import time
from typing import Any, Dict, Iterable, List, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

from .._redact import redact_url
from ..errors import ConfigError
from .base import SCHEMA_VERSION, Store, StoreError

__all__ = ["RedisStore", "parse_redis_url"]

PREFIX = "agenthub:{}:".format(SCHEMA_VERSION)
SCHEMA_KEY = "agenthub:schema"

_LIB = r"""
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
  for i = 1, #all, 2 do
    local a, b = string.match(all[i + 1], '^(%S+) (%S+)$')
    local needed = num(a, 'budget hold')
    if needed == nil or b == nil then error('AGENTHUB_CORRUPT the budget hold row is corrupt', 0) end
    if b ~= '-' and num(b, 'budget hold') < now then
      spent = spent + needed
      expired = expired + 1
      redis.call('HDEL', KEYS[2], all[i])
    else
      held = held + needed
    end
  end
  if expired > 0 then
    redis.call('HSET', KEYS[1], 'spent', fmt(spent))
    redis.call('HINCRBY', KEYS[1], 'expired', expired)
  end
  return spent, held
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
"""

_SCRIPTS = {
    "limiter_reserve": r"""
local now = clock()
local rpm, tpm, tokens = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local r, t, p = limiter(now)
local at = now
if rpm > 0 then at = math.max(at, r); r = at + 60 / rpm end
if tpm > 0 then at = math.max(at, t); t = at + math.min(tokens * 60 / tpm, 600) end
keep(now, r, t, p)
return fmt(at - now)
""",
    "limiter_adjust": r"""
local now = clock()
local r, t, p = limiter(now)
keep(now, r, math.min(t + tonumber(ARGV[1]), now + 600), p)
return 0
""",
    "limiter_pause": r"""
local now = clock()
local r, t, p = limiter(now)
local untl = now + tonumber(ARGV[1])
if ARGV[2] == '' then
  keep(now, r, t, math.max(p, untl))
  if untl > p then return 1 end
  return 0
end
local field = 'e:' .. ARGV[2]
local before = num(redis.call('HGET', KEYS[1], field), 'limiter') or -1
keep(now, r, t, p)
if untl > before then
  redis.call('HSET', KEYS[1], field, fmt(untl))
  return 1
end
return 0
""",
    "limiter_pauses": r"""
local now = clock()
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local name = all[i]
  if name == 'p' or string.sub(name, 1, 2) == 'e:' then
    local untl = num(all[i + 1], 'limiter')
    if untl > now then
      if name == 'p' then table.insert(out, '') else table.insert(out, string.sub(name, 3)) end
      table.insert(out, fmt(untl - now))
    elseif name ~= 'p' then
      redis.call('HDEL', KEYS[1], name)
    end
  end
end
return out
""",
    "limiter_reslot": r"""
local now = clock()
local r, t, p = limiter(now)
local at = math.max(now, r)
keep(now, at + 60 / tonumber(ARGV[1]), t, p)
return fmt(at - now)
""",
    "budget_hold": r"""
local now = clock()
local max_usd, needed, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local spent, held = sweep(now)
if spent + held + needed > max_usd + 1e-12 then return {0, fmt(spent + held)} end
local expires = '-'
if lease ~= '-' then expires = fmt(now + tonumber(lease)) end
redis.call('HSET', KEYS[2], ARGV[3], fmt(needed) .. ' ' .. expires)
return {1, fmt(spent + held)}
""",
    "budget_finish": r"""
local now = clock()
local needed = tonumber(ARGV[2])
local actual = nil
if ARGV[3] ~= '-' then actual = tonumber(ARGV[3]) end
local spent, held = sweep(now)
if redis.call('HDEL', KEYS[2], ARGV[1]) == 1 then
  if actual ~= nil then spent = spent + actual end
else
  spent = math.max(0, spent + (actual or 0) - needed)
end
redis.call('HSET', KEYS[1], 'spent', fmt(spent))
if actual ~= nil then redis.call('HINCRBY', KEYS[1], 'requests', 1) end
return 0
""",
    "budget_renew": r"""
local now = clock()
local spent, held = sweep(now)
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do
  local v = redis.call('HGET', KEYS[2], ARGV[i])
  if v then
    local a = string.match(v, '^(%S+) ')
    redis.call('HSET', KEYS[2], ARGV[i], a .. ' ' .. fmt(now + lease))
  end
end
return 0
""",
    "budget_charge": r"""
local now = clock()
local spent, held = sweep(now)
redis.call('HSET', KEYS[1], 'spent', fmt(spent + tonumber(ARGV[1])))
return 0
""",
    "budget_totals": r"""
local now = clock()
local spent, held = sweep(now)
local requests = num(redis.call('HGET', KEYS[1], 'requests'), 'budget') or 0
return {fmt(spent), fmt(held), requests}
""",
    # KEYS[1]: the entry, KEYS[2]: the index (name -> expiry), KEYS[3]: sizes (name -> bytes, '' -> total)
    "cache_put": r"""
local now = clock()
local name, value, ttl, max_bytes, prefix = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local total = num(redis.call('HGET', KEYS[3], ''), 'cache') or 0
local function drop(n)
  local size = num(redis.call('HGET', KEYS[3], n), 'cache') or 0
  redis.call('DEL', prefix .. n)
  redis.call('HDEL', KEYS[3], n)
  redis.call('ZREM', KEYS[2], n)
  total = total - size
end
drop(name)
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', fmt(now))) do drop(n) end
if #value <= max_bytes then
  if ttl > 0 then
    redis.call('SET', KEYS[1], value, 'PX', math.ceil(ttl * 1000))
    redis.call('ZADD', KEYS[2], fmt(now + ttl), name)
  else
    redis.call('SET', KEYS[1], value)
    redis.call('ZADD', KEYS[2], fmt(now + 1e9), name)
  end
  redis.call('HSET', KEYS[3], name, #value)
  total = total + #value
  while total > max_bytes do
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
    if #oldest == 0 or oldest[1] == name then break end
    drop(oldest[1])
  end
end
redis.call('HSET', KEYS[3], '', math.max(0, total))
return 0
""",
}


def parse_redis_url(url: str) -> Tuple[str, float, float]:
    """(the URL for redis-py without agenthub's options, socket timeout, wait); ConfigError when malformed."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigError("store {!r}: not a valid redis:// URL (bad port?)".format(shown[:120]))
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ConfigError("store {!r}: a Redis store is redis://host[:port][/db] or rediss://...".format(shown[:120]))
    if port is not None and not 0 < port < 65536:
        raise ConfigError("store {!r}: bad port".format(shown[:120]))
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ConfigError("store {!r}: the database is a number (redis://host:port/0), got {!r}".format(
            shown[:120], db[:20]))
    timeout, wait = 5.0, 0.0
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if name not in ("timeout", "wait") or not 0 <= number < 86400 or (name == "timeout" and number == 0):
            raise ConfigError("store {!r}: unknown or bad option {!r} (timeout=SECONDS, wait=SECONDS)".format(
                shown[:120], name[:40]))
        if name == "timeout":
            timeout = number
        else:
            wait = number
    base = "{}://{}{}".format(parts.scheme, parts.netloc, "/" + db if db else "")
    return base, timeout, wait


class RedisStore(Store):
    def __init__(self, url: str, *, client: Any = None) -> None:
        """``client``: a ready ``redis.Redis`` (or ``fakeredis.FakeRedis``) to use instead of connecting."""
        self._raw_url = url
        self.url = redact_url(url)
        self._shown = self.url[:120]  # type: str
        base, self.timeout, self.wait = parse_redis_url(url)
        try:
            import redis
        except ImportError:
            raise ConfigError("store {!r} needs the redis package: pip install '.[redis]' (from agenthub's checkout)".format(self._shown))
        self._redis_errors = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
        self._response_error = redis.exceptions.ResponseError
        self._error = redis.exceptions.RedisError
        try:
            self._client = client if client is not None else redis.Redis.from_url(base, socket_timeout=self.timeout,
                                                socket_connect_timeout=self.timeout, decode_responses=False)
        except (ValueError, self._error) as exc:
            raise ConfigError("store {!r}: {}".format(self._shown, type(exc).__name__))
        self._scripts = {name: self._client.register_script(_LIB + body) for name, body in _SCRIPTS.items()}
        self._setup()

    def __repr__(self) -> str:
        return "RedisStore({!r})".format(self.url)

    def __getstate__(self) -> Any:
        return {"url": self._raw_url}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["url"])  # type: ignore[misc]

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing never raises
            pass

    def _call(self, what: Any, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + self.wait
        while True:
            try:
                return what(*args, **kwargs)
            except self._redis_errors as exc:
                if time.monotonic() < deadline:
                    time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                    continue
                raise StoreError("store {!r} is unreachable ({}): nothing was sent; the store URL's "
                                 "?wait=SECONDS retries that long".format(self._shown, type(exc).__name__),
                                 retryable=True)
            except self._response_error as exc:
                text = str(exc)
                if "AGENTHUB_CORRUPT" in text:
                    detail = text.split("AGENTHUB_CORRUPT", 1)[1].split("script:", 1)[0].strip(" .")
                    raise StoreError("store {!r}: {}: refusing it".format(self._shown, detail[:200]))
                raise StoreError("store {!r} refused the operation ({}): a key holds data agenthub did not "
                                 "write?".format(self._shown, text[:160]))
            except self._error as exc:
                raise StoreError("store {!r}: {}".format(self._shown, type(exc).__name__))

    def _run(self, name: str, keys: List[str], args: List[Any]) -> Any:
        return self._call(self._scripts[name], keys=keys, args=args)

    def _setup(self) -> None:
        found = self._call(self._client.get, SCHEMA_KEY)
        if found is None:
            self._call(self._client.set, SCHEMA_KEY, str(SCHEMA_VERSION), nx=True)
            found = self._call(self._client.get, SCHEMA_KEY)
        if found != str(SCHEMA_VERSION).encode():
            raise StoreError("store {!r} holds agenthub rows of schema {!r} (this agenthub reads schema {}): "
                             "refusing it; use another database".format(
                                 self._shown, found[:20] if isinstance(found, bytes) else found, SCHEMA_VERSION))

    @staticmethod
    def _f(value: Any) -> float:
        return float(value.decode() if isinstance(value, bytes) else value)

    # -- the limiter ------------------------------------------------------------------------------------
    def limiter_reserve(self, key: str, rpm: Optional[float], tpm: Optional[float], tokens: int) -> float:
        return self._f(self._run("limiter_reserve", [PREFIX + "limiter:" + key],
                                 [repr(float(rpm or 0)), repr(float(tpm or 0)), int(tokens)]))

    def limiter_adjust(self, key: str, seconds: float) -> None:
        self._run("limiter_adjust", [PREFIX + "limiter:" + key], [repr(float(seconds))])

    def limiter_pause(self, key: str, seconds: float, endpoint: str = "") -> bool:
        return bool(self._run("limiter_pause", [PREFIX + "limiter:" + key], [repr(float(seconds)), endpoint]))

    def limiter_pauses(self, key: str) -> Dict[str, float]:
        flat = self._run("limiter_pauses", [PREFIX + "limiter:" + key], [])
        return {(flat[i].decode("utf-8", "replace") if isinstance(flat[i], bytes) else str(flat[i])): self._f(flat[i + 1])
                for i in range(0, len(flat) - 1, 2)}

    def limiter_reslot(self, key: str, rpm: float) -> float:
        return self._f(self._run("limiter_reslot", [PREFIX + "limiter:" + key], [repr(float(rpm))]))

    # -- the budget -------------------------------------------------------------------------------------
    def _budget_keys(self, key: str) -> List[str]:
        return [PREFIX + "budget:" + key, PREFIX + "holds:" + key]

    def budget_hold(self, key: str, max_usd: float, needed: float, hold_id: str,
                    lease: Optional[float]) -> Tuple[bool, float]:
        ok, held = self._run("budget_hold", self._budget_keys(key),
                             [repr(float(max_usd)), repr(float(needed)), hold_id,
                              "-" if lease is None else repr(float(lease))])
        return bool(ok), self._f(held)

    def budget_finish(self, key: str, hold_id: str, needed: float, actual: Optional[float]) -> None:
        self._run("budget_finish", self._budget_keys(key),
                  [hold_id, repr(float(needed)), "-" if actual is None else repr(float(actual))])

    def budget_renew(self, key: str, hold_ids: Iterable[str], lease: float) -> None:
        self._run("budget_renew", self._budget_keys(key), [repr(float(lease))] + list(hold_ids))

    def budget_charge(self, key: str, usd: float) -> None:
        self._run("budget_charge", self._budget_keys(key), [repr(float(usd))])

    def budget_totals(self, key: str) -> Tuple[float, float, int]:
        spent, held, requests = self._run("budget_totals", self._budget_keys(key), [])
        return self._f(spent), self._f(held), int(requests)

    # -- the cache ----------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Optional[bytes]:
        value = self._call(self._client.get, PREFIX + "cache:" + key)
        return value if isinstance(value, bytes) else None

    def cache_put(self, key: str, value: bytes, ttl: Optional[float], max_bytes: int) -> None:
        self._run("cache_put", [PREFIX + "cache:" + key, PREFIX + "cacheindex", PREFIX + "cachesizes"],
                  [key, value, repr(float(ttl or 0)), int(max_bytes), PREFIX + "cache:"])

    def cache_delete(self, key: str) -> None:
        self._call(self._client.delete, PREFIX + "cache:" + key)
