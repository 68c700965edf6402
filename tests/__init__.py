"""mockstore's own tests."""

import os
import tempfile

# The verdicts of valid scenarios (mockstore.verdicts) go to a directory of the test runs'
# own, shared by the workers and the servers they start, never to the user's cache. Set
# here, before any test module imports mockstore (whose import parses the OpenAPI document).
# A directory per user where there are uids.
_OWNER = os.getuid() if hasattr(os, "getuid") else "user"
os.environ.setdefault(
    "MOCKSTORE_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"mockstore-tests-{_OWNER}")
)
