"""A Pet Store client that follows the interface's etiquette, built on urllib3's ``Retry``.

What the spec asks, and how urllib3 does it:

* wait for ``Retry-After`` after a 429: ``respect_retry_after_header=True``;
* otherwise back off exponentially: ``backoff_factor`` (urllib3 waits 0 s
  before the first retry, then ``backoff_factor * 2 ** (n - 1)``: 0.2 s, 0.4 s...);
* give up rather than hammer: ``total`` bounds the retries;
* retry POST too: a 429 means the request was not processed, so it is safe;
* send ``Authorization: Bearer <API_KEY>`` on every call;
* no deprecated ``GET /pets/{petId}``: fetch with ``GET /pets?status=``.

Run it against ``examples/clients/etiquette.yaml``::

    mockstore serve --scenario examples/clients/etiquette.yaml --port 8080 &
    python examples/clients/well_behaved.py --url http://127.0.0.1:8080/v1 --key polite-key
    mockstore report --url http://127.0.0.1:8080 --fail-on info   # exit 0: no findings
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import urllib3
from urllib3.util.retry import Retry


def retry_policy() -> Retry:
    return Retry(
        total=6,
        backoff_factor=0.1,
        backoff_max=30,
        status_forcelist=[429],
        allowed_methods=frozenset({"GET", "POST"}),
        respect_retry_after_header=True,
        raise_on_status=False,
    )


def run(base_url: str, key: str) -> list[tuple[str, int]]:
    """Make the client's calls; return (call, final status) for each."""
    http = urllib3.PoolManager(
        retries=retry_policy(),
        headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
        timeout=urllib3.Timeout(total=10),
    )
    base = base_url.rstrip("/")
    results = []
    response = http.request("GET", f"{base}/pets", fields={"status": "available"})
    results.append(("GET /pets?status=available", response.status))
    response = http.request(
        "POST",
        f"{base}/pets",
        body=json.dumps({"name": "Nala", "categoryId": 7}).encode(),
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
        },
    )
    results.append(("POST /pets", response.status))
    response = http.request("GET", f"{base}/pets", fields={"limit": "5"})
    results.append(("GET /pets?limit=5", response.status))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the API's base URL, e.g. http://host/v1")
    parser.add_argument("--key", required=True, help="the API key")
    args = parser.parse_args(argv)
    results = run(args.url, args.key)
    for call, status in results:
        print(f"{call} -> {status}")
    return 0 if all(200 <= status < 300 for _, status in results) else 1


if __name__ == "__main__":
    sys.exit(main())
