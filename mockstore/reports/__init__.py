"""Reports on the journal: verification, coverage, etiquette, HAR, JUnit, HTML, text.

Pure functions of journal entries: no HTTP, no app. The control API serves
them (``mockstore.control.journal``), ``mockstore report`` renders them
(``mockstore.cli.report``), ``mockstore replay`` reads HAR back
(``mockstore.fidelity.replay``).
"""
