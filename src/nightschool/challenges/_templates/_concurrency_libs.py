"""Helper modules that the concurrency templates' setup scripts write into the workspace.

Each is the source of a small stdlib module the solution imports (`jobs.py`,
`lib.py`, `ledger.py`); placeholders like `__CAP__` are filled in by the
template. They check the concurrency rules themselves and, where the validator
needs it, write a JSON report at exit.
"""

JOBS_LIB = '''
"""Slow jobs for the challenge. Do not edit."""
import json
import threading
import time

CAP = __CAP__
ONCE = __ONCE__
_lock = threading.Lock()
_active = 0
_seen = set()


def work(x):
    """Return the result for integer x; sleeps 0.02 * (x % 7) seconds."""
    global _active
    with _lock:
        _active += 1
        too_many = CAP and _active > CAP
        repeated = ONCE and x in _seen
        _seen.add(x)
    try:
        if too_many:
            raise RuntimeError(f"more than {CAP} work() calls were running at the same time")
        if repeated:
            raise RuntimeError(f"work({x}) was called twice; compute each value once")
        time.sleep(0.02 * (x % 7))
        if x < 0:
            raise ValueError(f"work() cannot handle negative input {x}")
        return (x * __MUL__ + __ADD__) % 1000
    finally:
        with _lock:
            _active -= 1
'''


PIPE_LIB = '''
"""Message handler for the challenge. Do not edit."""
import atexit
import json
import threading
import time

ORDERED = __ORDERED__
FAILURES = __FAILURES__
_lock = threading.Lock()
_state = {"calls": 0, "active": 0, "max_active": 0, "threads": set(), "violations": [],
          "handled": []}
_busy_keys = set()
_last_id = {}


class TransientError(Exception):
    """A temporary failure: trying the same message again may work."""


def handle(mid, key, payload):
    """Handle one message (its ID, KEY and PAYLOAD) and return its result string."""
    mid = str(int(mid))
    problem = None
    with _lock:
        _state["calls"] += 1
        _state["active"] += 1
        _state["max_active"] = max(_state["max_active"], _state["active"])
        _state["threads"].add(threading.get_ident())
        _state["handled"].append(int(mid))
        if ORDERED and key in _busy_keys:
            problem = f"two messages with key {key!r} were handled at the same time"
        elif ORDERED and int(mid) < _last_id.get(key, 0):
            problem = f"message {mid} (key {key!r}) was handled after a later message of that key"
        _busy_keys.add(key)
        _last_id[key] = max(_last_id.get(key, 0), int(mid))
        if problem:
            _state["violations"].append(problem)
    try:
        if problem:
            raise RuntimeError(problem)
        time.sleep(0.006 * len(payload))
        if FAILURES.get(mid, 0) > 0:
            FAILURES[mid] -= 1
            raise TransientError(f"message {mid} failed for now, try again")
        return payload[::-1].upper() + str(len(payload))
    finally:
        with _lock:
            _state["active"] -= 1
            _busy_keys.discard(key)


@atexit.register
def _report():
    report = dict(_state, threads=len(_state["threads"]))
    with open("lib_report.json", "w") as handle:
        json.dump(report, handle)
'''


LEDGER_LIB = '''
"""A slow, not thread-safe ledger for the challenge. Do not edit."""
import atexit
import json
import threading
import time

DELAY = __DELAY__
_balances = {}
with open("accounts.txt") as _handle:
    for _line in _handle:
        if _line.strip():
            _name, _amount = _line.split()
            _balances[_name] = int(_amount)
_writers = set()


def accounts():
    """Return the account names, sorted."""
    return sorted(_balances)


def snapshot():
    """Return a copy of all balances at once (fast; use it after all operations)."""
    return dict(_balances)


def read_balance(account):
    """Return the balance of `account` (takes DELAY seconds)."""
    value = _balances[account]
    time.sleep(DELAY)
    return value


def write_balance(account, value):
    """Set the balance of `account` (takes DELAY seconds)."""
    time.sleep(DELAY)
    _writers.add(threading.get_ident())
    _balances[account] = value


@atexit.register
def _report():
    with open("ledger_report.json", "w") as handle:
        json.dump({"writers": len(_writers), "balances": _balances}, handle)
'''


PEAK_PRELUDE = """
    import threading
    import time

    _lock = threading.Lock()
    _state = {"active": 0, "peak": 0, "threads": set()}


    def _enter():
        with _lock:
            _state["active"] += 1
            _state["peak"] = max(_state["peak"], _state["active"])
            _state["threads"].add(threading.get_ident())


    def _leave():
        with _lock:
            _state["active"] -= 1


    def peak():
        return _state["peak"]


    def threads():
        return len(_state["threads"])
"""
"""Starter validator prelude: `_enter`/`_leave` around a slow call record how many overlapped.

`peak()` is the most calls that ran at once and `threads()` how many threads
made them; the starters' checks read them, so no check depends on timing.
"""
