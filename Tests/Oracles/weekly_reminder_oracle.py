#!/usr/bin/env python3
"""An independent oracle for herald's weekly reminders, on the quiet-hours oracle's wall clock.

It knows the *definition* only, not herald's algorithm: a weekly reminder on weekday W (1 Sunday …
7 Saturday) at the wall-clock time T is due, for each local date D that falls on W, at the first
instant whose wall-clock reading (date, time of day) is at or after (D, T). So a time inside a
spring-forward gap is due when the clocks jump, a time that occurs twice is due the first time, and a
date the zone skipped is due at the first instant after it.

The wall clock is quiet_hours_oracle.Clock: Python's zoneinfo (the system tzdata, independent of the
ICU data Foundation uses), read once per UTC minute; every offset is checked to be whole minutes, so
walking UTC minutes is exact for times of whole minutes.

Usage: weekly_reminder_oracle.py [--seed N] [--cases N] [--case ZONE,WEEKDAY,HH:MM,FROM,TO …]
Prints one JSON object: {"seed", "tzdata", "cases": [{"zone", "weekday", "time", "from", "to",
"occurrences": [instant…]}]}, instants in Unix seconds. Generated cases start at the first instant of
a local date a week or so before a DST transition of one of the quiet-hours oracle's zones and run
three weeks; their occurrences are those from an hour before `from` (a pass at `from` still owes a
reminder missed by up to an hour, herald's catch-up) to `to`. A --case lists those in [FROM, TO].
"""
import argparse
import datetime
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quiet_hours_oracle import QUIET_ZONES, Clock, anchors, pick_minute, transitions  # noqa: E402

CATCH_UP = 3600
STEP = 600                      # the generated cases' passes are every ten minutes: `to` is on that grid
WEEKS = 3


def weekday(ordinal):
    """1 Sunday … 7 Saturday, from a proleptic Gregorian ordinal (date.isoweekday: 1 Monday … 7 Sunday)."""
    return datetime.date.fromordinal(ordinal).isoweekday() % 7 + 1


def first_at_or_after(clock, ordinal, tod):
    """The first instant (Unix seconds) whose wall clock reads (ordinal, tod) or later."""
    naive = (ordinal - datetime.date(1970, 1, 1).toordinal()) * 86400 + tod
    m = (naive - 15 * 3600) // 60      # before any offset's reading of it (offsets are within ±14 h)
    while True:
        d, s, _ = clock.minute(m)
        if (d, s) >= (ordinal, tod):
            return m * 60
        m += 1


def occurrences(clock, wday, tod, start, end):
    """The due instants of every local date falling on wday, within [start, end]."""
    first = clock.local(start)[0] - 2
    last = clock.local(end)[0] + 2
    found = []
    for d in range(first, last + 1):
        if weekday(d) == wday:
            u = first_at_or_after(clock, d, tod)
            if start <= u <= end:
                found.append(u)
    return sorted(set(found))


def day_start(clock, t):
    """The first instant of t's local date."""
    d = clock.local(t)[0]
    m = t // 60
    while clock.minute(m - 1)[0] == d:
        m -= 1
    return m * 60


def hhmm(s):
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--cases", type=int, default=0)
    ap.add_argument("--case", action="append", default=[])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clocks = {}

    def clock(name):
        if name not in clocks:
            clocks[name] = Clock(name)
        return clocks[name]

    out = []
    for spec in args.case:
        zone, wday, time, start, end = spec.split(",")
        h, m = time.split(":")
        tod = int(h) * 3600 + int(m) * 60
        out.append({"zone": zone, "weekday": int(wday), "time": time, "from": int(start), "to": int(end),
                    "occurrences": occurrences(clock(zone), int(wday), tod, int(start), int(end))})

    names = sorted(n for n, years in QUIET_ZONES.items() if years)
    zone_transitions = {n: transitions(n, QUIET_ZONES[n]) or anchors(rng, n, [], 4) for n in names}
    for _ in range(args.cases):
        name = rng.choice(names)
        c = clock(name)
        anchor = rng.choice(zone_transitions[name])
        tod = pick_minute(rng, c, anchor) % 86400          # 24:00 is midnight, as herald reads it
        # The weekday of the transition's local date (either side of it) half the time.
        near = c.local(anchor - 1 if rng.random() < 0.5 else anchor)[0]
        wday = weekday(near) if rng.random() < 0.5 else rng.randint(1, 7)
        start = day_start(c, anchor - rng.randint(6, 9) * 86400)
        end = start + STEP * (WEEKS * 7 * 86400 // STEP)
        out.append({"zone": name, "weekday": wday, "time": hhmm(tod), "from": start, "to": end,
                    "occurrences": occurrences(c, wday, tod, start - CATCH_UP, end)})

    try:
        version = open("/usr/share/zoneinfo/tzdata.zi").readline().strip().removeprefix("# version ")
    except OSError:
        version = "unknown"
    json.dump({"seed": args.seed, "tzdata": version, "cases": out}, sys.stdout)


if __name__ == "__main__":
    main()
