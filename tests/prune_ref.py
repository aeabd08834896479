#!/usr/bin/env python3
"""An independent model of mtc-prune's policy, for the tests (standard library only).

Written from mtc(7) section 8 and the backup-warden / rotate-backups
documentation, in a different shape from lib/retention.c on purpose:
datetime objects, dictionaries of periods, calendar arithmetic by hand.

  prune_ref.py [--hourly N ...] [--prefer-recent] [--relaxed] < names
      prints "keep NAME REASONS" or "would-delete NAME", oldest first
  prune_ref.py --generate SEED COUNT
      prints COUNT backup names, shuffled
"""
import argparse
import datetime as dt
import fnmatch
import random
import re
import sys

FREQUENCIES = ["minutely", "hourly", "daily", "weekly", "monthly", "yearly"]
DEFAULTS = {"minutely": "0", "hourly": "72", "daily": "7", "weekly": "6",
            "monthly": "12", "yearly": "always"}

DEFAULT_PATTERN = r"""
    (?P<year>\d{4}) \D? (?P<month>\d{2}) \D? (?P<day>\d{2}) \D?
    (?: (?P<hour>\d{2}) \D? (?P<minute>\d{2}) \D? (?P<second>\d{2})? )?
"""


def count(text):
    text = text.strip().lower()
    if text == "always":
        return None
    total = 0
    for term in text.split("+"):
        product = 1
        for factor in term.split("*"):
            product *= int(factor.strip())
        total += product
    return total


def timestamp(pattern, name):
    m = pattern.search(name.rsplit("/", 1)[-1])
    if not m:
        return None
    parts = m.groupdict()
    try:
        fields = [int(parts.get(k) or 0) if k not in ("year", "month", "day") else int(parts[k])
                  for k in ("year", "month", "day", "hour", "minute", "second")]
        return dt.datetime(*fields)
    except (TypeError, ValueError):
        return None


def months_back(when, months):
    index = when.year * 12 + (when.month - 1) - months
    year, month = divmod(index, 12)
    month += 1
    if year < 1:
        return None
    last_day = [31, 29 if (year % 4 == 0 and year % 100 != 0) or year % 400 == 0 else 28,
                31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    return when.replace(year=year, month=month, day=min(when.day, last_day))


def window_start(frequency, newest, n):
    try:
        if frequency == "monthly":
            return months_back(newest, n)
        if frequency == "yearly":
            return months_back(newest, 12 * n)
        unit = {"minutely": dt.timedelta(minutes=1), "hourly": dt.timedelta(hours=1),
                "daily": dt.timedelta(days=1), "weekly": dt.timedelta(weeks=1)}[frequency]
        return newest - unit * n
    except OverflowError:
        return None


def period(frequency, when):
    if frequency == "minutely":
        return (when.year, when.month, when.day, when.hour, when.minute)
    if frequency == "hourly":
        return (when.year, when.month, when.day, when.hour)
    if frequency == "daily":
        return (when.year, when.month, when.day)
    if frequency == "weekly":
        iso = when.isocalendar()
        return (iso[0], iso[1])
    if frequency == "monthly":
        return (when.year, when.month)
    return (when.year,)


def decide(backups, policy, prefer_recent, relaxed):
    """backups: list of (when, name). Returns {name-index: [frequencies]}."""
    ordered = sorted(range(len(backups)), key=lambda i: (backups[i][0], backups[i][1]))
    if not ordered:
        return ordered, {}
    newest = backups[ordered[-1]][0]
    reasons = {}
    for frequency in FREQUENCIES:
        n = policy[frequency]
        if n == 0:
            continue
        periods = {}
        for i in ordered:
            periods.setdefault(period(frequency, backups[i][0]), []).append(i)
        chosen = []
        for key in sorted(periods):
            members = periods[key]
            chosen.append(members[-1] if prefer_recent else members[0])
        if n is not None:
            if not relaxed:
                start = window_start(frequency, newest, n)
                if start is not None:
                    chosen = [i for i in chosen if backups[i][0] >= start]
            chosen = chosen[len(chosen) - n:] if n < len(chosen) else chosen
        for i in chosen:
            reasons.setdefault(i, []).append(frequency)
    return ordered, reasons


def generate(seed, total):
    rng = random.Random(seed)
    names = set()
    start = dt.datetime(2023, 12, 20)
    t = start
    while len(names) < total * 2 // 3:
        t += dt.timedelta(minutes=rng.choice([30, 30, 30, 30, 60, 90, 7, 720, 1440 * 3]))
        names.add(t.strftime("%Y-%m-%d_%H-%M"))
    while len(names) < total:
        year = rng.choice([2019, 2020, 2023, 2024, 2025])
        when = dt.datetime(year, 1, 1) + dt.timedelta(minutes=rng.randrange(525600))
        shape = rng.choice(["%Y-%m-%d_%H-%M", "%Y%m%d_%H%M%S", "backup-%Y%m%d", "%Y-%m-%d@%H:%M",
                            "db-%Y-%m-%d_%H-%M-%S.tar"])
        names.add(when.strftime(shape))
        if rng.random() < 0.05:
            names.add("%04d-%02d-%02d_10-00" % (year, 2, 30))
    out = sorted(names)
    rng.shuffle(out)
    return out


def main():
    ap = argparse.ArgumentParser()
    for f in FREQUENCIES:
        ap.add_argument("--" + f, default=DEFAULTS[f])
    ap.add_argument("--prefer-recent", action="store_true")
    ap.add_argument("--relaxed", action="store_true")
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--timestamp-pattern", default=DEFAULT_PATTERN)
    ap.add_argument("--generate", nargs=2, type=int)
    args = ap.parse_args()
    if args.generate:
        print("\n".join(generate(*args.generate)))
        return
    pattern = re.compile(args.timestamp_pattern, re.VERBOSE)
    policy = {f: count(getattr(args, f)) for f in FREQUENCIES}
    backups = []
    for line in sys.stdin.read().splitlines():
        if not line:
            continue
        if any(fnmatch.fnmatchcase(line, g) for g in args.exclude):
            continue
        if args.include and not any(fnmatch.fnmatchcase(line, g) for g in args.include):
            continue
        when = timestamp(pattern, line)
        if when is not None:
            backups.append((when, line))
    ordered, reasons = decide(backups, policy, args.prefer_recent, args.relaxed)
    for i in ordered:
        if i in reasons:
            print("keep %s %s" % (backups[i][1], ", ".join(reasons[i])))
        else:
            print("would-delete %s" % backups[i][1])


if __name__ == "__main__":
    main()
