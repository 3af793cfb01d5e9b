"""How a Client starts: ``Client(sdk_key=..., datafile=..., start=...)``.

Without ``start`` the client starts as optimizely-sdk's does: with a datafile and an sdk_key it starts at
once from that datafile and keeps it fresh (a background fetch, then polling every ``polling_interval_s``;
the S modes below prefer a cached datafile instead, as the Swift SDK does); with an sdk_key
alone it starts fetching (asynchronous start: ready when the datafile arrives, see ``wait_ready``); with a
datafile alone it uses that datafile as it is; with neither it waits for ``start()`` / ``start_async()``.

``start`` names one of the Swift SDK's six initialization modes, or one of the plain ones:

========  ===================================================================================================
``"S1"``  synchronous: the cached (else the given) datafile at once; the newest one is downloaded in the
          background and cached, used at the next start only
``"S2"``  synchronous: as S1, and the downloaded datafile is used at once; no polling
``"S3"``  synchronous: as S2, then polling every ``polling_interval_s`` (default 300)
``"A1"``  asynchronous: the datafile is downloaded (else the cached one, else the given one); no polling
``"A2"``  asynchronous: as A1, then polling every ``polling_interval_s``
``"A3"``  as A2, awaited: ``await client.wait_ready_async()``
``"sync"``   the given datafile only: no cache, no fetching
``"async"``  asynchronous, polling as the options say (``start_async``)
``"none"``   not started
========  ===================================================================================================

S1, S2 and A1 poll never: ``polling_interval_s`` may be left out (or 0) with them.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from .errors import InvalidArgumentError

__all__ = ["START_MODES", "SYNC_UPDATE_NONE", "SYNC_UPDATE_NEXT_START", "SYNC_UPDATE_NOW"]

# EXP_SYNC_UPDATE_*
SYNC_UPDATE_NONE, SYNC_UPDATE_NEXT_START, SYNC_UPDATE_NOW = 0, 1, 2
SYNC_GIVEN_FIRST = 0x10  # EXP_SYNC_GIVEN_FIRST: the given datafile even when one is cached

# name: (how it starts, EXP_SYNC_UPDATE_* for synchronous starts, whether it polls)
START_MODES: Dict[str, Tuple[str, int, bool]] = {
    "S1": ("managed", SYNC_UPDATE_NEXT_START, False),
    "S2": ("managed", SYNC_UPDATE_NOW, False),
    "S3": ("managed", SYNC_UPDATE_NOW, True),
    "A1": ("async", 0, False),
    "A2": ("async", 0, True),
    "A3": ("async", 0, True),
    "sync": ("static", 0, True),
    "async": ("async", 0, True),
    "none": ("none", 0, True),
}


def resolve(start: Optional[str], sdk_key: Any, datafile: Any, options: Dict[str, Any]) -> Tuple[str, int]:
    """(how the client starts: "none" / "static" / "managed" / "async", the EXP_SYNC_UPDATE_* value). Sets
    polling_interval_s to 0 in ``options`` for the modes that never poll."""
    if start is None:
        if sdk_key is not None and datafile is not None:
            return "managed", SYNC_UPDATE_NOW | SYNC_GIVEN_FIRST
        if sdk_key is not None:
            return "async", 0
        return ("static", 0) if datafile is not None else ("none", 0)
    mode = START_MODES.get(start) if isinstance(start, str) else None
    if mode is None:
        raise InvalidArgumentError("start: expected one of %s, got %r" % (", ".join(repr(m) for m in START_MODES), start))
    kind, update, polls = mode
    if kind in ("managed", "async") and sdk_key is None:
        raise InvalidArgumentError("start=%r needs an sdk_key (it names the datafile URL and cache entry)" % start)
    if kind == "static" and datafile is None:
        raise InvalidArgumentError('start="sync" needs a datafile')
    if not polls:
        interval = options.get("polling_interval_s")
        if interval not in (None, 0):
            raise InvalidArgumentError("start=%r never polls: polling_interval_s must be 0 or left out, got %r"
                                       % (start, interval))
        options["polling_interval_s"] = 0
    return kind, update
