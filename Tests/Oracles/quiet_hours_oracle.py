#!/usr/bin/env python3
"""An independent oracle for herald's quiet hours and local-day deferrals.

It knows the *definitions* only, not herald's algorithms:

- A quiet window [start, end) is judged by the local wall-clock time of day at an instant: when
  start > end (the window spans midnight) it is quiet when tod >= start or tod < end; otherwise when
  start <= tod < end; start == end means no window. Times are seconds since midnight, 86400 being
  PostgreSQL's 24:00:00.
- The end of quiet hours seen from an instant t is the first instant u >= t at which it is not quiet.
- A local day starts at the first instant whose local date is that date; the next local day starts at
  the first instant after t whose local date differs from t's.

Both are answered by walking the wall clock minute by minute with Python's zoneinfo (the system
tzdata, independent of the ICU data Foundation uses), and second by second through any minute in
which the wall clock passes a window's start or end (some windows have seconds). Every offset met is
checked to be whole minutes, so the clocks only jump at the turn of a UTC minute and, within one, the
wall clock runs second for second: the walk is exact to the second.

Usage: quiet_hours_oracle.py [--seed N] [--quiet-cases N] [--day-cases N]
Prints one JSON object: {"tzdata": …, "quiet": [case…], "days": [case…]}, each case with its answer.
The cases are generated here, deterministically from the seed, concentrated around the DST
transitions of zones of both hemispheres (found by sampling the zone's offset).
"""
import argparse
import datetime
import json
import random
import sys
import zoneinfo

UTC = datetime.timezone.utc

# Zones and the years whose transitions the cases gather around. Both hemispheres; 30-minute and
# 2-hour shifts; transitions at local midnight (the local date starts late or twice); a zone that
# skipped a whole day; zones without DST.
QUIET_ZONES = {
    "America/Chicago": [2026, 2027],
    "America/New_York": [2026],
    "Europe/London": [2026],
    "Europe/Berlin": [2026, 2027],
    "Australia/Sydney": [2026, 2027],
    "Australia/Lord_Howe": [2026, 2027],     # 30-minute shift
    "America/Santiago": [2026, 2027],        # at local midnight
    "Pacific/Auckland": [2026],
    "Pacific/Chatham": [2026],               # +12:45 / +13:45
    "Africa/Casablanca": [2026],             # one hour back during Ramadan
    "America/Havana": [2026],                # 00:00 → 01:00, 01:00 → 00:00 (midnight twice)
    "Asia/Beirut": [2026],                   # 00:00 → 01:00, 00:00 → 23:00
    "America/Sao_Paulo": [2018],             # historical, midnight
    "Asia/Tehran": [2021],                   # historical, midnight
    "Antarctica/Troll": [2026],              # a two-hour shift
    "America/St_Johns": [2026],              # -03:30 / -02:30
    "Pacific/Apia": [2011],                  # skipped 2011-12-30 entirely
    "Asia/Kolkata": [],                      # no DST
    "Asia/Tokyo": [],                        # no DST
    "UTC": [],
}
DAY_ZONES = {
    "America/Santiago": [2026, 2027],
    "America/Havana": [2026],
    "Asia/Beirut": [2026],
    "America/Sao_Paulo": [2018, 2019],
    "Asia/Tehran": [2021],
    "America/Asuncion": [2023],
    "Africa/Cairo": [2025],
    "Pacific/Apia": [2011],
    "America/Chicago": [2026],
    "Australia/Lord_Howe": [2026],
    "Europe/London": [2026],
    "Asia/Kolkata": [],
}

HORIZON = 3 * 86400          # no answer within three days: the window never ends (00:00–24:00)


class Clock:
    """The wall clock of one zone, read once per UTC minute (memoised)."""

    def __init__(self, name):
        self.tz = zoneinfo.ZoneInfo(name)
        self.memo = {}

    def minute(self, m):
        """(local date ordinal, local seconds since midnight) at the UTC minute m (epoch seconds / 60)."""
        hit = self.memo.get(m)
        if hit is None:
            dt = datetime.datetime.fromtimestamp(m * 60, self.tz)
            off = dt.utcoffset().total_seconds()
            if off % 60 != 0:
                sys.exit(f"oracle: {self.tz.key} has an offset of {off}s, not whole minutes")
            hit = (dt.date().toordinal(), dt.hour * 3600 + dt.minute * 60 + dt.second, int(off))
            self.memo[m] = hit
        return hit

    def local(self, t):
        """(date ordinal, seconds since midnight, utc offset) at the instant t (whole seconds)."""
        d, s, off = self.minute(t // 60)
        return d, s + t % 60, off


def quiet(start, end, tod):
    if start == end:
        return False
    if start > end:
        return tod >= start or tod < end
    return start <= tod < end


def quiet_end(clock, start, end, t):
    """The first instant u >= t at which the wall clock is outside the window; None within HORIZON."""
    bounds = {start % 86400, end % 86400}
    u = t
    while u <= t + HORIZON:
        tod = clock.local(u)[1]
        rest = (u // 60 + 1) * 60 - u               # seconds left in this UTC minute
        if any(tod < b < tod + rest for b in bounds):
            for k in range(rest):                   # the judgement may change within it: every second
                if not quiet(start, end, tod + k):
                    return u + k
        elif not quiet(start, end, tod):
            return u
        u += rest
    return None


def day_bounds(clock, t):
    """(first instant of t's local date, first instant after t on another local date)."""
    d = clock.local(t)[0]
    m = t // 60
    while clock.minute(m - 1)[0] == d:
        m -= 1
    start = m * 60
    m = t // 60 + 1
    while clock.minute(m)[0] == d:
        m += 1
    return start, m * 60


def transitions(name, years):
    """UTC instants (whole seconds) at which the zone's offset changes during the given years."""
    tz = zoneinfo.ZoneInfo(name)
    off = lambda s: datetime.datetime.fromtimestamp(s, tz).utcoffset()
    found = []
    for y in years:
        a = int(datetime.datetime(y, 1, 1, tzinfo=UTC).timestamp()) - 86400
        b = int(datetime.datetime(y + 1, 1, 1, tzinfo=UTC).timestamp()) + 86400
        step = 3 * 3600
        s = a
        while s < b:
            if off(s) != off(s + step):
                lo, hi = s, s + step              # off(lo) != off(hi): the first second with off(hi)
                while lo + 1 < hi:
                    mid = (lo + hi) // 2
                    if off(mid) == off(s):
                        lo = mid
                    else:
                        hi = mid
                found.append(hi)
            s += step
    return sorted(set(found))


def pick_instant(rng, around):
    if rng.random() < 0.6:
        t = around + rng.randint(-4 * 3600, 4 * 3600)
    else:
        t = around + rng.randint(-30 * 3600, 30 * 3600)
    if rng.random() < 0.5:
        t -= t % 60
    return t


def anchors(rng, name, years, count):
    ts = transitions(name, years)
    if not ts:       # no DST: arbitrary instants through 2026
        base = int(datetime.datetime(2026, 1, 1, tzinfo=UTC).timestamp())
        ts = [base + rng.randrange(365) * 86400 + rng.randrange(86400) for _ in range(4)]
    return ts


def pick_time(rng, clock, anchor):
    """A window end point: often near the wall times either side of the transition, else anywhere;
    one in ten has seconds."""
    m = pick_minute(rng, clock, anchor)
    if m % 86400 and rng.random() < 0.1:
        m += rng.choice([1, 30, 59, rng.randrange(60)]) - 60
    return m


def pick_minute(rng, clock, anchor):
    r = rng.random()
    if r < 0.02:
        return 86400                                           # 24:00:00
    if r < 0.55:
        near = clock.local(anchor - 1 if rng.random() < 0.5 else anchor)[1]
        near -= near % 60
        return (near + 60 * rng.choice([0, 0, 0, -30, 30, -60, 60, -90, 90, -15, 15, 1, -1,
                                         rng.randint(-150, 150)])) % 86400
    if r < 0.65:
        return 60 * rng.choice([0, 60, 90, 120, 150, 180, 1380, 1410])   # 00:00, 01:00, 01:30, 02:00, …
    return 60 * rng.randrange(1440)


def hhmmss(s):
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261101)
    ap.add_argument("--quiet-cases", type=int, default=4000)
    ap.add_argument("--day-cases", type=int, default=1000)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clocks = {}

    def clock(name):
        if name not in clocks:
            clocks[name] = Clock(name)
        return clocks[name]

    quiet_cases = []
    # A window entered in the repeated hour: Chicago, 2026-11-01, 01:30–01:00; CDT → CST at 07:00Z.
    fall_back = int(datetime.datetime(2026, 11, 1, 7, tzinfo=UTC).timestamp())
    named = [("America/Chicago", 5400, 3600, fall_back + k * 600) for k in range(-6, 7)]
    zone_anchors = {n: anchors(rng, n, y, 4) for n, y in QUIET_ZONES.items()}
    names = sorted(QUIET_ZONES)
    while len(named) + len(quiet_cases) < args.quiet_cases:
        name = rng.choice(names)
        anchor = rng.choice(zone_anchors[name])
        c = clock(name)
        start, end = pick_time(rng, c, anchor), pick_time(rng, c, anchor)
        t = pick_instant(rng, anchor)
        quiet_cases.append((name, start, end, t))
    out_quiet = []
    for name, start, end, t in named + quiet_cases:
        c = clock(name)
        d, tod, off = c.local(t)
        out_quiet.append({
            "zone": name, "start": hhmmss(start), "end": hhmmss(end), "t": t,
            "local": f"{datetime.date.fromordinal(d)}T{hhmmss(tod)}", "offset": off,
            "quiet": quiet(start, end, tod), "until": quiet_end(c, start, end, t),
        })

    out_days = []
    day_anchors = {n: anchors(rng, n, y, 4) for n, y in DAY_ZONES.items()}
    day_names = sorted(DAY_ZONES)
    for _ in range(args.day_cases):
        name = rng.choice(day_names)
        c = clock(name)
        t = pick_instant(rng, rng.choice(day_anchors[name]))
        d, tod, off = c.local(t)
        start, nxt = day_bounds(c, t)
        out_days.append({"zone": name, "t": t, "local": f"{datetime.date.fromordinal(d)}T{hhmmss(tod)}",
                         "offset": off, "day_start": start, "next_day": nxt})

    try:
        version = open("/usr/share/zoneinfo/tzdata.zi").readline().strip().removeprefix("# version ")
    except OSError:
        version = "unknown"
    json.dump({"seed": args.seed, "tzdata": version, "quiet": out_quiet, "days": out_days}, sys.stdout)


if __name__ == "__main__":
    main()
