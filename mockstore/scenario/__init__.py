"""The scenario format: loading, validation and the frozen model."""

from mockstore.scenario.loader import Problem, ScenarioError, scenario_schema
from mockstore.scenario.model import (
    Behaviour,
    FaultRule,
    KeySpec,
    Match,
    Reply,
    Route,
    Scenario,
    bundled_names,
    load_scenario,
    load_scenario_file,
    read_scenario_source,
)

__all__ = [
    "Behaviour",
    "FaultRule",
    "KeySpec",
    "Match",
    "Problem",
    "Reply",
    "Route",
    "Scenario",
    "ScenarioError",
    "bundled_names",
    "load_scenario",
    "load_scenario_file",
    "read_scenario_source",
    "scenario_schema",
]
