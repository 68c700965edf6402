"""The Lua scripts that make every state transition in Redis one atomic step.

Each API request runs ``REQUEST`` once (one round trip): it checks that the
process answers from the current generation of the configuration, rolls and
counts the caller's rate-limit windows (escalating to a ban exactly as
``mockstore.ratelimit.RateLimiter`` does), numbers the request (its request
id), and, for an admitted caller, counts the fault rules its request meets and
decides which fire (as ``mockstore.faults.FaultEngine`` does), then runs the
store operation unless a firing rule answers in its place. Control calls run
``CONTROL``: a compare-and-set on the generation together with what the call
changes in the data.

Nothing read back is trusted: a value no script wrote (a key of another type, a
counter or a window that is not a number in range, a pet id that is not one) is
deleted and the request that met it fails (``bad``: answered ``503
state_unavailable``, said in the log), so the next one starts that key afresh;
the control script replaces a generation or an epoch that is not a whole number
with one from Redis's clock, and a bucket of another type.

Numbers cross the boundary as text: Redis turns a Lua number into an integer
in a reply, and ``tostring`` keeps only 14 digits, so every float is written
with ``%.17g`` (which reads back as the same double) and read with
``tonumber``; Lua's doubles then compute exactly what Python's floats do.
"""

from __future__ import annotations

from mockstore.limiter.limiter import GENERAL_LIMITER_LUA, GENERAL_REFUND_LUA
from mockstore.ordering import LUA_ID_PART
from mockstore.pages import LUA_SPLIT
from mockstore.ratelimit import BAN_LUA

# KEYS: 1 generation, 2 bucket hash, 3 bucket's rejections (list), 4 the epoch's
#       request number, 5 .. 4+C the fault rules' call counters, then the store's keys:
#       +1 next id, +2 created bytes, +3 pets (hash id -> JSON), +4 ids (list),
#       +5 ids of one status (list; the list to read for a listing), and for a scenario
#       whose listings page (``mockstore.pages``): +6 every created pet's member, +7 the
#       members of one status (sorted sets read by lexical range; the one a page reads),
#       then for a page filtered by several statuses each one's members (+7 their union)
# ARGV: 1 generation, 2 now, 3 wall, 4 minute start, 5 day start ('f' for both: windows
#       that start at a bucket's first request), 6 per minute, 7 per day, 8 ban after,
#       9 ban within ('c': after consecutive refusals), 10 ban duration,
#       11 C (fault counters), 12 the scenario's seed, 13 R (fault rules to evaluate),
#       then 9 per rule (``faults.SharedRules``): its counter (1..C), first and last count it
#       fires at, calls (',3,5,' or ''), every ('' none), within its time window
#       ('1'/'0'), probability ('' none), kind ('s' answers and stops the operation,
#       'd' answers but runs it, 'n' fires without answering), its index;
#       then the operation ('' | create | list | get | page) and its arguments.
# The parts every request script shares. ``PROLOGUE``: the generation check, the
# checks of every value read back (``bad``, ``checked``, ``num``), and ``begin``: a
# page's room, then the request's number. Then a limiter (``CLASSIC_LIMITER`` here, or
# the general one of ``mockstore.limiter.limiter``) names where its arguments end
# (``B``, ``F``, ``KF``), calls ``begin`` before it counts anything, and sets
# ``verdict``, ``retry_at`` and ``head`` (the reply so far); ``ratelimit.BAN_LUA`` is
# the ban both escalate with. ``EPILOGUE``: the fault rules and the store operation of
# an admitted request; its arguments begin at ARGV[F], its counters' keys after KEYS[KF].
# The checks of every value read back (``bad``, ``checked``, ``num``, ``zset``), and
# numbers written as text (``fmt``): the request scripts' and the refund's.
CHECKS = r"""
local function fmt(x) return string.format('%.17g', x) end
  -- A value read back that no script wrote: dropped, and this request answered 503.
local function bad(key)
  redis.call('DEL', key)
  error('mockstore-bad-value ' .. key)
end
-- An error a value causes (its type, its text) drops it; any other (OOM) is Redis's own,
-- raised as it is, and the value is kept.
local function value_error(reply)
  local e = reply.err
  if string.find(e, 'WRONGTYPE', 1, true) or string.find(e, 'not an integer', 1, true)
    or string.find(e, 'overflow', 1, true) then return true end
  error(reply)
end
local function checked(reply, key)
  if type(reply) == 'table' and reply.err and value_error(reply) then bad(key) end
  return reply
end
local function num(value, key, whole)
  if not value then return nil end
  local n = tonumber(value)
  if n == nil or n ~= n or n > 9007199254740992 or n < -9007199254740992
    or (whole and (n < 0 or n ~= math.floor(n))) then bad(key) end
  return n
end
local function zset(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'zset' and kind ~= 'none' then bad(key) end
end
"""
PROLOGUE = (
    r"""
local generation = redis.pcall('GET', KEYS[1])
if type(generation) == 'table' then return {'stale', ''} end
if generation ~= ARGV[1] then return {'stale', generation or ''} end
"""
    + CHECKS
    + LUA_ID_PART
    + LUA_SPLIT
    + r"""
local now, wall = tonumber(ARGV[2]), tonumber(ARGV[3])
local verdict, retry_at = 'allowed', 0
local number
-- A page's members, KEYS[at]; for a listing filtered by several statuses
-- (mockstore.status_filter) their sets follow it, and KEYS[at] is made their union
-- while the script runs (``union``, then DEL): a pet has one status, so the union's
-- size is the sum of theirs.
local function members_size(at)
  if #KEYS == at then zset(KEYS[at]); return redis.call('ZCARD', KEYS[at]) end
  local size = 0
  for i = at + 1, #KEYS do zset(KEYS[i]); size = size + redis.call('ZCARD', KEYS[i]) end
  return size
end
local function union(at)
  if #KEYS == at then zset(KEYS[at]); return end
  for i = at + 1, #KEYS do zset(KEYS[i]) end
  redis.call('ZUNIONSTORE', KEYS[at], #KEYS - at, unpack(KEYS, at + 1))
end
-- Called by the limiter (its fault rules' arguments from ARGV[F], its counters' keys
-- after KEYS[KF]) before it counts anything: a page at an offset where the two lists
-- interleave is searched in a window of the inventory sized for the pets created so
-- far; more since, and the reply asks again, wider, with nothing counted (the request's
-- number neither). Else the request's number.
local function begin(F, KF)
  local o = F + 3 + 9 * tonumber(ARGV[F + 2])
  if ARGV[o] == 'page' and ARGV[o + 1] == 'split' then
    local size = members_size(KF + tonumber(ARGV[F]) + 7)
    if size > tonumber(ARGV[o + 9]) then return {'resize', size} end
  end
  number = checked(redis.pcall('INCR', KEYS[4]), KEYS[4])
end
"""
)

# mockstore.ratelimit.RateLimiter's two fixed windows (a clock minute and a UTC day, or
# both from a first request): KEYS and ARGV as above (B = 8, F = 11, KF = 4).
CLASSIC_LIMITER = (
    r"""
local B, F, KF = 8, 11, 4
local wider = begin(F, KF)
if wider then return wider end
local b = checked(redis.pcall('HMGET', KEYS[2], 'ms', 'mu', 'ds', 'du', 'bu', 'tu', 'tw'), KEYS[2])
local ms, mu = num(b[1], KEYS[2]) or -1, num(b[2], KEYS[2], true) or 0
local ds, du = num(b[3], KEYS[2]) or -1, num(b[4], KEYS[2], true) or 0
local bu, tu, tw = num(b[5], KEYS[2]), num(b[6], KEYS[2]), num(b[7], KEYS[2]) or 0
"""
    + BAN_LUA
    + r"""
if ARGV[4] == 'f' then
  if not (ms <= now and now < ms + 60) then ms = now; mu = 0 end
  if not (ds <= now and now < ds + 86400) then ds = now; du = 0 end
else
  -- A window only moves forward: a process whose clock reads a hair behind
  -- another's counts into the newer window instead of starting an old one again.
  local minute_start, day_start = tonumber(ARGV[4]), tonumber(ARGV[5])
  if minute_start > ms then ms = minute_start; mu = 0 end
  if day_start > ds then ds = day_start; du = 0 end
end
if bu and now < bu then
  verdict = 'key_banned'; retry_at = bu
else
  if bu then bu = nil; redis.call('DEL', KEYS[3]) end
  local minute_left = tonumber(ARGV[6]) - mu
  local day_left = tonumber(ARGV[7]) - du
  if minute_left <= 0 or day_left <= 0 then
    verdict = 'rate_limited'
    if day_left <= 0 then retry_at = ds + 86400 else retry_at = ms + 60 end
    -- A run of refusals ends when an admission moves the day's count.
    escalate(du)
  else
    mu = mu + 1; du = du + 1
  end
end
redis.call('HSET', KEYS[2], 'ms', fmt(ms), 'mu', fmt(mu), 'ds', fmt(ds), 'du', fmt(du),
  'tw', fmt(tw))
if bu then redis.call('HSET', KEYS[2], 'bu', fmt(bu))
elseif b[5] then redis.call('HDEL', KEYS[2], 'bu') end
if tu then redis.call('HSET', KEYS[2], 'tu', fmt(tu)) end
local head = {'ok', verdict, fmt(mu), fmt(du), fmt(ms), fmt(ds), fmt(retry_at), number, {}, {-1}}
"""
)

EPILOGUE = r"""
if verdict ~= 'allowed' then return head end
-- The fault rules, as mockstore.faults.FaultEngine.evaluate reads them: every
-- counter of a rule whose request conditions the request met counts it; the
-- first rule that answers ends the firing; a probability is the rule's draw
-- for this call (mockstore.faults.draw: the first 52 bits of a SHA-1).
local counters = tonumber(ARGV[F])
local stop = false
if counters > 0 then
  local counts = {}
  for i = 1, counters do counts[i] = checked(redis.pcall('INCR', KEYS[KF + i]), KEYS[KF + i]) end
  local fault, answered, seed = head[10], false, ARGV[F + 1]
  for r = 0, tonumber(ARGV[F + 2]) - 1 do
    local a = F + 2 + 9 * r
    local n = counts[tonumber(ARGV[a + 1])]
    local fires = not answered and n >= tonumber(ARGV[a + 2]) and n <= tonumber(ARGV[a + 3])
      and ARGV[a + 6] == '1'
    if fires and ARGV[a + 4] ~= '' then
      fires = string.find(ARGV[a + 4], ',' .. n .. ',', 1, true) ~= nil
    end
    if fires and ARGV[a + 5] ~= '' then fires = n % tonumber(ARGV[a + 5]) == 0 end
    if fires and ARGV[a + 7] ~= '' then
      local hex = redis.sha1hex(seed .. ':' .. ARGV[a + 9] .. ':' .. n .. ':0')
      fires = tonumber(string.sub(hex, 1, 13), 16) / 4503599627370496 < tonumber(ARGV[a + 7])
    end
    if fires then
      local index = tonumber(ARGV[a + 9])
      fault[#fault + 1] = index
      fault[#fault + 1] = n
      if ARGV[a + 8] ~= 'n' then
        answered = true
        fault[1] = index
        stop = ARGV[a + 8] == 's'
      end
    end
  end
end
local o = F + 3 + 9 * tonumber(ARGV[F + 2])
local op = ARGV[o]
if op == '' or stop then return head end
local k = KF + counters
if op == 'create' then
  -- ARGV: o+1 inventory's next id, o+2 largest id, o+3 one past it, o+4 the pet's
  -- JSON after its id, o+5 byte budget ('' none), o+6 status ('' none), o+7 cost per pet
  local id = checked(redis.pcall('GET', KEYS[k + 1]), KEYS[k + 1]) or ARGV[o + 1]
  local past = ARGV[o + 3]
  if not string.match(id, '^[1-9]%d*$') or #id > #past or (#id == #past and id > past) then
    bad(KEYS[k + 1])
  end
  for i = 3, 5 do
    local kind = redis.call('TYPE', KEYS[k + i])['ok']
    if kind ~= (i == 3 and 'hash' or 'list') and kind ~= 'none' then bad(KEYS[k + i]) end
  end
  if id == ARGV[o + 3] then head[9] = {'full_id'}; return head end
  local encoded = '{"id":' .. id .. ',' .. ARGV[o + 4]
  local cost = tonumber(ARGV[o + 7]) + 2 * #encoded
  local used = num(checked(redis.pcall('GET', KEYS[k + 2]), KEYS[k + 2]), KEYS[k + 2], true) or 0
  if ARGV[o + 5] ~= '' and used + cost > tonumber(ARGV[o + 5]) then
    head[9] = {'full_bytes', fmt(used), fmt(cost)}; return head
  end
  -- INCR cannot pass the largest int64: the id after it is written as text.
  if id == ARGV[o + 2] then redis.call('SET', KEYS[k + 1], ARGV[o + 3])
  else redis.call('SET', KEYS[k + 1], id); redis.call('INCR', KEYS[k + 1]) end
  redis.call('INCRBY', KEYS[k + 2], cost)
  redis.call('HSET', KEYS[k + 3], id, encoded)
  redis.call('RPUSH', KEYS[k + 4], id)
  if ARGV[o + 6] ~= '' then redis.call('RPUSH', KEYS[k + 5], id) end
  if ARGV[o + 8] then
    -- o+8 the pet's member without its id (mockstore.ordering): a scenario that pages
    local member = member_of(ARGV[o + 8], id)
    zset(KEYS[k + 6])
    redis.call('ZADD', KEYS[k + 6], 0, member)
    if ARGV[o + 6] ~= '' then zset(KEYS[k + 7]); redis.call('ZADD', KEYS[k + 7], 0, member) end
  end
  head[9] = {'created', id, encoded}
elseif op == 'list' then
  -- ARGV: o+1 how many created pets the page may need (ids only grow: the first ones,
  -- or with o+2 'desc' the last ones, newest first)
  local count = tonumber(ARGV[o + 1])
  local ids
  if ARGV[o + 2] == 'desc' then
    local last = checked(redis.pcall('LRANGE', KEYS[k + 5], -count, -1), KEYS[k + 5])
    ids = {}
    for i = #last, 1, -1 do ids[#ids + 1] = last[i] end
  else
    ids = checked(redis.pcall('LRANGE', KEYS[k + 5], 0, count - 1), KEYS[k + 5])
  end
  if #ids > 0 then
    head[9] = checked(redis.pcall('HMGET', KEYS[k + 3], unpack(ids)), KEYS[k + 3])
  end
elseif op == 'page' then
  -- ARGV (mockstore.pages.Query): o+1 mode (up | down | rank | head | split), o+2 bound
  -- ('' none), o+3 count, o+4 descending ('1'), o+5 start (the offset, for split),
  -- o+6 low, o+7 high, o+8 window's length, o+9 guess, then the window's members.
  -- Replies {size, inventory members before the offset (split; else -1), member, JSON, ...}
  local key = KEYS[k + 7]
  local kind = redis.call('TYPE', KEYS[k + 3])['ok']
  if kind ~= 'hash' and kind ~= 'none' then bad(KEYS[k + 3]) end
  union(k + 7)
  local mode, bound, count = ARGV[o + 1], ARGV[o + 2], tonumber(ARGV[o + 3])
  local descending = ARGV[o + 4] == '1'
  local size = redis.call('ZCARD', key)
  local members, before = {}, -1
  if mode == 'up' then
    local low = '-'
    if bound ~= '' then low = '(' .. bound end
    members = redis.call('ZRANGEBYLEX', key, low, '+', 'LIMIT', 0, count)
  elseif mode == 'down' then
    local high = '+'
    if bound ~= '' then high = '(' .. bound end
    members = redis.call('ZREVRANGEBYLEX', key, high, '-', 'LIMIT', 0, count)
  else
    local start = tonumber(ARGV[o + 5])
    if mode == 'head' then start = math.min(start, size) end
    if mode == 'split' then
      local window = {}
      for i = 1, tonumber(ARGV[o + 8]) do window[i] = ARGV[o + 9 + i] end
      local low = tonumber(ARGV[o + 6])
      before = split(key, window, low, low, tonumber(ARGV[o + 7]), start, descending)
      start = start - before
    end
    if count > 0 and start < size then
      if descending then members = redis.call('ZREVRANGE', key, start, start + count - 1)
      else members = redis.call('ZRANGE', key, start, start + count - 1) end
    end
  end
  local out = {tostring(size), tostring(before)}
  if #members > 0 then
    local ids = {}
    for i, member in ipairs(members) do ids[i] = id_of(member) or '0' end
    local found = redis.call('HMGET', KEYS[k + 3], unpack(ids))
    for i, member in ipairs(members) do
      out[#out + 1] = member
      out[#out + 1] = found[i] or ''
    end
  end
  if #KEYS > k + 7 then redis.call('DEL', key) end
  head[9] = out
elseif op == 'get' then
  -- ARGV: o+1 the pet's id
  local found = checked(redis.pcall('HGET', KEYS[k + 3], ARGV[o + 1]), KEYS[k + 3])
  if found then head[9] = {found} end
end
return head
"""

REQUEST = PROLOGUE + CLASSIC_LIMITER + EPILOGUE
# The request script of a scenario whose limiter is not the classic one
# (``mockstore.limiter``: any window length, algorithm, time zone, what counts).
GENERAL_REQUEST = PROLOGUE + GENERAL_LIMITER_LUA + EPILOGUE
# A general limiter's refund of a request whose answer does not count (ratelimit.not_counted).
REFUND = CHECKS + GENERAL_REFUND_LUA

# Control calls. KEYS: 1 generation, 2 configuration hash.
# ARGV: 1 the generation the caller read (compare-and-set; '' to create the state),
#       2 the new configuration as field/value pairs in JSON,
#       3 what else changes, in JSON: {"epoch": true} starts a new epoch (reset,
#       scenario), "preload": [[bucket key, minute start, used, day start, used]] (a
#       general limiter's: [bucket key, "g", [field, value, ...], minute log, day log]),
#       "forget": [keys], "lift": bucket key (its rejections key follows),
#       "rebase": {"prefix": bucket keys' prefix, "now": t, "to": t}
# Returns {'stale', generation} or {'ok', generation, epoch, lifted}.
CONTROL = r"""
-- Keys of another type than ours, written by someone else: replaced.
for i, kind in ipairs({'string', 'hash'}) do
  local found = redis.call('TYPE', KEYS[i])['ok']
  if found ~= kind and found ~= 'none' then redis.call('DEL', KEYS[i]) end
end
local gen = redis.call('GET', KEYS[1])
if (gen or '') ~= ARGV[1] then return {'stale', gen or ''} end
local function fmt(x) return string.format('%.17g', x) end
-- A generation or an epoch that is not a whole number within 2**53 is started again
-- from Redis's clock in ms: a number no process holds (bounded, never reused).
local function whole(value)
  local n = tonumber(value)
  return n and n >= 0 and n <= 9007199254740992 and n == math.floor(n)
end
local function fresh()
  local t = redis.call('TIME')
  return string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
-- A bucket key of another type (written by someone else) is replaced.
local function hset(key, ...)
  local reply = redis.pcall('HSET', key, ...)
  if type(reply) == 'table' and string.find(reply.err, 'WRONGTYPE', 1, true) then
    redis.call('DEL', key)
    redis.call('HSET', key, ...)
  elseif type(reply) == 'table' then
    error(reply)  -- not the value's fault (OOM): raised, nothing replaced
  end
end
local change = cjson.decode(ARGV[3])
local fields = cjson.decode(ARGV[2])
for name, value in pairs(fields) do redis.call('HSET', KEYS[2], name, value) end
local epoch = redis.call('HGET', KEYS[2], 'epoch') or '0'
if not whole(epoch) then epoch = fresh(); redis.call('HSET', KEYS[2], 'epoch', epoch) end
if change.epoch then epoch = tostring(redis.call('HINCRBY', KEYS[2], 'epoch', 1)) end
local prefix = change.prefix_base .. epoch .. ':'
if change.preload then
  for _, p in ipairs(change.preload) do
    if p[2] == 'g' then
      -- A general limiter's bucket (mockstore.limiter.limiter.stored): fields, then logs.
      redis.call('DEL', prefix .. 'b:' .. p[1])
      hset(prefix .. 'b:' .. p[1], unpack(p[3]))
      for i, suffix in ipairs({':m', ':d'}) do
        local log = prefix .. 'l:' .. p[1] .. suffix
        redis.call('DEL', log)
        local entries = p[3 + i]
        for first = 1, #entries, 1000 do  -- unpack has a stack to fit in
          redis.call('RPUSH', log, unpack(entries, first, math.min(first + 999, #entries)))
        end
      end
    else
      hset(prefix .. 'b:' .. p[1], 'ms', p[2], 'mu', p[3], 'ds', p[4], 'du', p[5])
    end
  end
end
if change.forget then
  for _, bucket in ipairs(change.forget) do
    redis.call('DEL', prefix .. 'b:' .. bucket, prefix .. 'r:' .. bucket,
      prefix .. 'l:' .. bucket .. ':m', prefix .. 'l:' .. bucket .. ':d')
  end
end
local lifted = '0'
if change.lift then
  local key = prefix .. 'b:' .. change.lift
  if redis.pcall('HEXISTS', key, 'bu') == 1 then
    lifted = '1'
    redis.call('HDEL', key, 'bu')
    redis.call('DEL', prefix .. 'r:' .. change.lift)
  end
end
if change.rebase then
  -- The clock moved back: windows start afresh, a ban keeps what was left of it.
  local now, to = tonumber(change.rebase.now), tonumber(change.rebase.to)
  local cursor = '0'
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', prefix .. 'b:*', 'COUNT', 500)
    cursor = page[1]
    for _, key in ipairs(page[2]) do
      hset(key, 'ms', '-1', 'ds', '-1', 'mu', '0', 'du', '0')
      -- And a general limiter's windows: ends, counts, buckets, and its logs emptied.
      redis.call('HDEL', key, 'tu', 'me', 'mc', 'mp', 'mk', 'ma', 'mt', 'de', 'dc', 'dp', 'dk',
        'da', 'dt')
      local name = string.sub(key, #prefix + 3)
      redis.call('DEL', prefix .. 'l:' .. name .. ':m', prefix .. 'l:' .. name .. ':d')
      local bu = tonumber(redis.call('HGET', key, 'bu'))
      if bu and (bu ~= bu or bu == math.huge or bu == -math.huge) then bu = nil end
      if bu then
        local left = bu - now
        if left > 0 then redis.call('HSET', key, 'bu', fmt(to + left))
        else redis.call('HDEL', key, 'bu') end
      end
      redis.call('DEL', prefix .. 'r:' .. string.sub(key, #prefix + 3))
    end
  until cursor == '0'
end
if change.bump ~= false then
  if gen and not whole(gen) then redis.call('SET', KEYS[1], fresh()) end
  gen = string.format('%d', redis.call('INCR', KEYS[1]))
end
return {'ok', gen or '', epoch, lifted}
"""
