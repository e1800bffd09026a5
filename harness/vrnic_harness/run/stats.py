"""The vrnic control socket's `stats` answer (one JSON object), read and parsed here only: read(server) for a live
value, delta(before, after) for what moved in a scenario's window (run/context.py takes a snapshot when the window
opens and one when every guest has ended it)."""
import json
import re


class StatsError(Exception):
    """The server did not answer `stats`, or not with JSON."""


def read(server):
    """The server's stats as a dict; StatsError when it does not answer."""
    try:
        st = json.loads(server.command("stats"))
    except (OSError, ValueError) as e:
        raise StatsError(str(e)) from e
    if not isinstance(st, dict):
        raise StatsError("not a JSON object: %.80r" % st)
    return st


def snapshot(server):
    """read(server), or None when it does not answer (a server that was killed)."""
    try:
        return read(server)
    except StatsError:
        return None


def delta(before, after):
    """after with every integer counter less its value in before (a missing one counts from 0); other values (a
    state, a LID, a gauge) as they are in after."""
    if isinstance(after, dict):
        b = before if isinstance(before, dict) else {}
        return {k: delta(b.get(k), v) for k, v in after.items()}
    if isinstance(after, int) and not isinstance(after, bool):
        return after - (before if isinstance(before, int) and not isinstance(before, bool) else 0)
    return after


def get(st, *path, default=None):
    """st[path[0]][path[1]]..., default where a level is missing."""
    for p in path:
        if not isinstance(st, dict) or p not in st:
            return default
        st = st[p]
    return st


def leaves(st):
    """(name, value) of every value in st that is not an object, in document order (a list's items under its name)."""
    out = []
    if isinstance(st, dict):
        for k, v in st.items():
            out += leaves(v) if isinstance(v, dict) else [(k, x) for x in v] if isinstance(v, list) else [(k, v)]
    return out


def counters(st, pattern):
    """{name: value} of the integer values whose name matches the regex pattern (fully), the last of each name."""
    rx = re.compile(pattern)
    return {k: v for k, v in leaves(st) if rx.fullmatch(k) and isinstance(v, int) and not isinstance(v, bool)}


def paths(st, prefix=""):
    """{dotted path: value} of every integer value in st (a list's items as path[index])."""
    out = {}
    items = st.items() if isinstance(st, dict) else enumerate(st) if isinstance(st, list) else []
    for k, v in items:
        p = "%s[%d]" % (prefix, k) if isinstance(st, list) else (prefix + "." + k if prefix else k)
        if isinstance(v, (dict, list)):
            out.update(paths(v, p))
        elif isinstance(v, int) and not isinstance(v, bool):
            out[p] = v
    return out


def objects(st):
    """(name, value) of every object below st, depth first."""
    out = []
    if isinstance(st, dict):
        for k, v in st.items():
            if isinstance(v, dict):
                out.append((k, v))
                out += objects(v)
    return out


def self_test():
    """delta and counters on a captured-shape sample."""
    before = {"firmware": {"fabric": {"tx_packets": 10, "tx_no_route": 0}, "port_state": 4}, "eth_link": None}
    after = {"firmware": {"fabric": {"tx_packets": 25, "tx_no_route": 0, "rx_packets": 3}, "port_state": 4},
             "eth_link": {"fault_dropped": 2, "prio": {"3": {"rx_held": 5}}}}
    d = delta(before, after)
    fails = []
    if get(d, "firmware", "fabric") != {"tx_packets": 15, "tx_no_route": 0, "rx_packets": 3}:
        fails.append("delta of counters: %s" % get(d, "firmware", "fabric"))
    if get(d, "firmware", "port_state") != 0 or get(after, "firmware", "port_state") != 4:
        fails.append("get/delta of a plain value")
    if counters(d, r"fault_\w+") != {"fault_dropped": 2} or dict(objects(d)).get("prio") != {"3": {"rx_held": 5}}:
        fails.append("counters/objects: %s %s" % (counters(d, r"fault_\w+"), dict(objects(d))))
    return fails
