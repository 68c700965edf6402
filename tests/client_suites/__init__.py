"""Client test suites, one per provider stand-in, as each provider's client team writes them.

Each folder holds the suite a team writes against one provider (``tests/upstream/``) from
that provider's documentation (its module docstring): what its client depends on. A suite
reads its base URL and keys from the environment (``client.py``), so the verdict-agreement
harness (``tests/agreement.py``) runs the same suite against the provider and against a
mock of it, and compares the verdicts test by test. The project's own pytest run never
collects them (``collect_ignore`` in ``tests/conftest.py``).
"""
