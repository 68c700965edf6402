"""Rate limiting as gateways do it: windows, buckets and bans, each rule in Python and Lua.

``limiter`` is the general limiter a scenario's ``ratelimit`` section builds;
``counters`` and ``buckets`` hold the algorithms, ``grid`` where clock-aligned
windows lie, ``announce`` and ``openapi`` what answers and the served document
say of them.
"""
