"""Why a difference ``drift`` finds has no setting: every reason, and the case it stands for.

A difference's cause is a scenario setting only when that setting, given the value
the recording shows and replayed (``proof``), removes the difference and adds none;
every other difference gets one of these reasons. The docs' Fidelity page lists this
table (``docs/generate.py``: a test fails while the page differs from it), and a
difference's ``reason`` is always one of its keys.
"""

from __future__ import annotations

NOT_EXPRESSIBLE: dict[str, str] = {
    "varying-header": "A header mockstore does not write, whose value changes from answer to "
    "answer (another window's rate-limit figures such as X-RateLimit-Burst-*, a digest, a "
    "cache age): a constant header (behaviour.headers) cannot reproduce it.",
    "error-body-shape": "The provider's refusal has no Error body (code, message, status), or "
    "a body that is not JSON: mockstore's refusals always carry one.",
    "error-status-field": "The Error body's status is not the HTTP status: in mockstore's it "
    "always is.",
    "message-type": "The Error body's message is not a string.",
    "pet-fields": "A returned pet's fields differ from what was sent in a way no setting "
    "decides (a number rewritten, a field renamed).",
    "list-filter": "The provider does not honour the status filter (or honours one mockstore "
    "does not).",
    "list-length": "The provider returns more pets than the limit asked for (or fewer while "
    "more exist).",
    "check-order": "The request meets two conditions and the provider checks them in another "
    "order than mockstore (say the media type before an empty body): it answers the other one.",
    "split-condition": "The provider answers one of mockstore's conditions two ways (a limit "
    "that is not a number and one below 1, say): one status and code per condition is what a "
    "scenario can state.",
    "lenient-request": "The provider accepts a request that the spec's rules refuse (an "
    "integral 7.0 as an integer, a body without Content-Type read as JSON, a repeated "
    "parameter), or refuses one they accept.",
    "representation": "A conditional read the provider answered 304 (or in full) by a "
    "validator of its own representation, where the mock's representation of the same pets "
    "is not byte for byte the provider's (another JSON encoding, ids assigned otherwise): its "
    "ETag differs, so the same If-None-Match meets another answer.",
    "store": "The answer depends on pets the recording does not show existed (a pet fetched "
    "but never listed, an id the provider assigned at random): the store cannot be "
    "reconstructed from the recording alone.",
    "allowance": "A rate-limit answer the recording does not explain: the caller's allowance "
    "was spent before the recording began and its headers do not say so, or the provider "
    "counts requests mockstore does not (or the other way around).",
    "header-presence": "The provider sends a header that mockstore writes only on other "
    "answers (X-RateLimit-* or Retry-After where mockstore's answer has none, an ETag on an "
    "answer mockstore tags no ETag), and no setting puts it on this one.",
    "header-absence": "The provider leaves out a header mockstore always writes on such an "
    "answer (Content-Type on an empty answer, X-RateLimit-* on some answers, Date), and no "
    "setting takes it off.",
    "header-format": "A header mockstore writes in a form no setting changes (Date not an "
    "HTTP-date, an X-RateLimit-* figure that is not a whole number).",
    "allow": "The provider's Allow header names other methods than the document's.",
    "connection": "The mock broke the connection where the provider answered (a scenario "
    "fault): not a difference of the provider's.",
    "value-not-shown": "A setting decides it (drift names the one it tried), but the "
    "recording does not show the value that reproduces the provider: a plan whose end was "
    "never reached, a ban whose length never showed, a header on some answers of a kind "
    "only. Choose the value from the provider's documentation.",
    "value-invalid": "The provider's answer is one the setting drift tried cannot state: the "
    "value the recording shows is one validate refuses (an X-RateLimit-Reset in no unit "
    "mockstore writes, a Retry-After in no form it writes).",
    "value-does-not-remove": "The setting drift tried, set to the value the recording shows "
    "and replayed, leaves the difference in place: something no setting decides stands "
    "behind it.",
    "value-adds-difference": "The setting drift tried, set to the value the recording shows "
    "and replayed, removes this difference but makes another (an answer the recording shows "
    "elsewhere changes): no single value of it reproduces both.",
    "value-unproven": "A setting drift names but did not prove: the recording holds more "
    "distinct suggestions than drift replays in one run (two million replayed exchanges in "
    "all; those with the most differences are proven first). Apply the proven ones and drift "
    "again.",
    "unexplained": "A difference no rule of drift's explains: compare the two answers by hand.",
}
