"""``mockstore calibrate``: probe a real deployment and write a scenario that reproduces it.

``options`` says what one calibration may do, ``prober`` sends the requests
within the budget, ``probes`` asks each open question and turns the answers
into settings with their evidence, ``writer`` writes the scenario.
"""
