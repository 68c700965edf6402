"""The journal's keys in Redis and the Lua scripts that write and read them, each one atomic.

Every process of one mock ships the answers it recorded to ONE stream, and a
batch's sequence numbers are handed out by the same script that appends it, so
the stream's order is the mock's journal order, the same for every process
(``mockstore.shared.journal``). After the mock's prefix (``mockstore:``, or a
tenant's)::

    journal            stream: a batch a message, its id <last seq>-0, fields o (the
                       process that shipped it) and m (the batch, ``records``)
    journal:seq        the last sequence number handed out
    journal:sync       stream: what the processes tell one another: k=n (a batch was
                       shipped), k=b (a read asks every process to ship what it has:
                       a barrier), k=a with b=<barrier id> (shipped; the barrier is met)
    journal:live       sorted set: each process that ships, scored with the last time
                       it said it was there (Redis's own clock, in ms)
    journals:cleared   sorted set: member seq, the sequence number the latest clear
                       went through

Nothing read back is trusted (``records`` checks the batches): the scripts
replace a key of the wrong type, a counter that is not a whole number within
2**53, and a clear mark beyond the numbers handed out, rather than failing on
them forever; the reader checks again what they return. Numbers are written
with ``%d`` (Lua's ``tostring`` keeps 14 digits).
"""

from __future__ import annotations

# After the mock's prefix.
STREAM = "journal"
SEQ = "journal:seq"
SYNC = "journal:sync"
LIVE = "journal:live"
CLEARED = "journals:cleared"
MARK = "seq"

# Shared by the scripts: a whole number within 2**53 read back, or nil; and a key that
# holds another type than ``kind`` is deleted (written there by someone else).
_COMMON = r"""
local function whole(value)
  local n = tonumber(value)
  if n and n >= 0 and n <= 9007199254740992 and n == math.floor(n) then return n end
  return nil
end
local function own_type(key, kind)
  local found = redis.call('TYPE', key)['ok']
  if found ~= kind and found ~= 'none' then redis.call('DEL', key) end
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# KEYS: 1 seq, 2 journal, 3 sync, 4 live.
# ARGV: 1 origin, 2 floor (no number at or below it is handed out: what the caller has
#       seen), 3 the stream's time to live (s), 4 entries the stream keeps, 5 messages the
#       sync stream keeps, 6 the barrier this ship meets ('' none), 7 the batch's record
#       count (0: nothing to ship), 8 the batch.
# Returns the batch's last sequence number (the counter when nothing was shipped).
SHIP = (
    _COMMON
    + r"""
own_type(KEYS[1], 'string')
own_type(KEYS[2], 'stream')
own_type(KEYS[3], 'stream')
own_type(KEYS[4], 'zset')
local seq = whole(redis.call('GET', KEYS[1])) or 0
local floor = tonumber(ARGV[2])
if floor > seq then seq = floor end
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if top[1] then
  local last = whole(string.match(top[1][1], '^(%d+)%-'))
  if last == nil then redis.call('DEL', KEYS[2])
  elseif last > seq then seq = last end
end
local count = tonumber(ARGV[7])
if count > 0 then
  seq = seq + count
  redis.call('XADD', KEYS[2], string.format('%d-0', seq), 'o', ARGV[1], 'm', ARGV[8])
  local keep = seq - tonumber(ARGV[4])
  if keep > 0 then redis.call('XTRIM', KEYS[2], 'MINID', string.format('%d-0', keep)) end
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'k', 'n', 'o', ARGV[1])
end
redis.call('SET', KEYS[1], string.format('%d', seq))
if ARGV[6] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'k', 'a', 'o', ARGV[1], 'b', ARGV[6])
end
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('ZADD', KEYS[4], now_ms(), ARGV[1])
redis.call('EXPIRE', KEYS[4], ARGV[3])
return seq
"""
)

# KEYS: 1 sync, 2 live. ARGV: 1 origin, 2 how recent (ms) a process's word must be to
# count as live, 3 messages the sync stream keeps, 4 the streams' time to live (s),
# 5 '1' to post a barrier, '' only to say this process is there.
# Returns {barrier id or '', live origins...}: the processes a barrier waits for.
PRESENCE = (
    _COMMON
    + r"""
own_type(KEYS[1], 'stream')
own_type(KEYS[2], 'zset')
local now = now_ms()
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[4])
local reply = {''}
if ARGV[5] == '1' then
  reply[1] = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'k', 'b', 'o', ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  -- Gone long since, or said to be there in the future (not a process's word): forgotten.
  local recent = tonumber(ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', now - 30 * recent))
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '(' .. string.format('%d', now + recent), '+inf')
  local live = redis.call('ZRANGEBYSCORE', KEYS[2], string.format('%d', now - recent), '+inf')
  for i = 1, #live do reply[#reply + 1] = live[i] end
end
return reply
"""
)

# KEYS: 1 journal, 2 cleared, 3 seq. ARGV: 1 the first sequence number to read (one
# past the reader's position), 2 messages at most, 3 the largest payload taken, 4 the
# reader's origin.
# Returns {messages, clear mark, counter}; each message {id, origin, payload, size}:
# the reader's own batches and payloads over the limit come back empty (it holds its
# own; one too large is skipped unread), with their size.
READ = (
    _COMMON
    + r"""
own_type(KEYS[1], 'stream')
own_type(KEYS[2], 'zset')
own_type(KEYS[3], 'string')
local out = {}
local messages = redis.call('XRANGE', KEYS[1], ARGV[1] .. '-0', '+', 'COUNT', ARGV[2])
local limit = tonumber(ARGV[3])
for i, message in ipairs(messages) do
  local origin, payload = '', ''
  local fields = message[2]
  for j = 1, #fields - 1, 2 do
    if fields[j] == 'o' then origin = fields[j + 1]
    elseif fields[j] == 'm' then payload = fields[j + 1] end
  end
  local size = #payload
  if #origin > 64 then origin = '' end
  if (origin == ARGV[4] and ARGV[4] ~= '') or size > limit then payload = '' end
  out[i] = {message[1], origin, payload, size}
end
local mark = redis.call('ZSCORE', KEYS[2], 'seq') or ''
local counter = redis.call('GET', KEYS[3]) or ''
return {out, mark, counter}
"""
)

# KEYS: 1 cleared, 2 seq. ARGV: 1 the sequence number this clear goes through.
# The mark only moves forward (two clears at once keep the later), except a mark past
# every number handed out, which no clear set: it is replaced. Returns the mark.
CLEAR = (
    _COMMON
    + r"""
own_type(KEYS[1], 'zset')
local counter = whole(redis.call('GET', KEYS[2])) or 0
local through = tonumber(ARGV[1])
local mark = whole(redis.call('ZSCORE', KEYS[1], 'seq'))
if mark == nil or mark > counter or mark < through then mark = through end
redis.call('ZADD', KEYS[1], string.format('%d', mark), 'seq')
return string.format('%d', mark)
"""
)
