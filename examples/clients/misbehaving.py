"""A Pet Store client that misbehaves on purpose, to show what the etiquette report finds.

It does three things the interface asks clients not to do:

* calls the deprecated ``GET /pets/{petId}`` (finding ETQ004);
* ignores ``Retry-After`` and retries a 429 at once (ETQ001), at a steady
  pace instead of backing off (ETQ002);
* keeps hammering until its key is banned (ETQ003).

Run it against ``examples/clients/etiquette.yaml``::

    mockstore serve --scenario examples/clients/etiquette.yaml --port 8080 &
    python examples/clients/misbehaving.py --url http://127.0.0.1:8080/v1 --key rude-key
    mockstore report --url http://127.0.0.1:8080    # exit 1: ETQ001 ETQ002 ETQ003 ETQ004
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import urllib3

MAX_ATTEMPTS = 200  # it stops at the ban, or here if the scenario never bans


def run(base_url: str, key: str) -> list[int]:
    """Every status the client got, in order."""
    http = urllib3.PoolManager(
        retries=False,
        headers={"Authorization": f"Bearer {key}"},
        timeout=urllib3.Timeout(total=10),
    )
    base = base_url.rstrip("/")
    statuses = [http.request("GET", f"{base}/pets/1").status]
    for _ in range(MAX_ATTEMPTS):
        response = http.request("GET", f"{base}/pets")
        statuses.append(response.status)
        if response.status == 200:
            continue
        try:
            code = json.loads(response.data).get("code")
        except ValueError:
            code = None
        if code == "key_banned":
            break
        # A 429 with Retry-After: N. This client does not care, and asks again now.
    return statuses


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the API's base URL, e.g. http://host/v1")
    parser.add_argument("--key", required=True, help="the API key")
    args = parser.parse_args(argv)
    statuses = run(args.url, args.key)
    print(" ".join(str(s) for s in statuses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
