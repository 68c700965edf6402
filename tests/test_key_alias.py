"""Key aliases: what a recording carries instead of a key, for every key.

One function (``mockstore.keys.key_alias``) serves the recorder, drift and
calibrate alike: the same key always gets the same alias, an alias reveals
nothing of a real key, and aliasing twice changes nothing.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from mockstore.fidelity.aliases import Scrubber, aliased
from mockstore.journal import mask
from mockstore.keys import is_alias, key_alias

# Bearer tokens (RFC 6750 token68 characters), as long as real keys are.
tokens = st.from_regex(r"[A-Za-z0-9._~+/-]{12,64}=*", fullmatch=True)


@given(tokens)
def test_an_alias_is_stable_short_and_does_not_contain_the_key(key: str) -> None:
    alias = key_alias(key)
    assert re.fullmatch(r"key-[0-9a-f]{8}", alias)
    assert alias == key_alias(key)
    assert key not in alias
    assert key_alias(alias) == alias  # an alias is its own alias
    assert is_alias(alias)
    assert mask(alias) == alias  # nothing to hide in it


@given(tokens, tokens)
def test_two_keys_share_an_alias_only_by_a_32_bit_accident(first: str, second: str) -> None:
    if first != second:
        # 2^-32 per pair: hypothesis would need billions of examples to meet one.
        assert key_alias(first) != key_alias(second)


@given(tokens, st.sampled_from([b"Bearer ", b"bearer ", b"Basic ", b"Token "]))
def test_a_journaled_credential_carries_the_alias_in_place_of_the_secret(
    key: str, scheme: bytes
) -> None:
    value = scheme + key.encode()
    journaled = aliased(b"authorization", value)
    assert journaled == scheme + key_alias(key).encode()
    assert key.encode() not in journaled or is_alias(key)


@given(tokens, st.binary(max_size=200), st.binary(max_size=200))
def test_a_secret_echoed_anywhere_is_replaced_in_what_is_journaled(
    key: str, before: bytes, after: bytes
) -> None:
    scrub = Scrubber()
    scrub.learn(b"authorization", b"Bearer " + key.encode())
    journaled = scrub(before + key.encode() + after)
    assert key.encode() not in journaled or is_alias(key)
    assert key_alias(key).encode() in journaled
