"""Reports on the journal: coverage, etiquette, HAR, JUnit, HTML."""
