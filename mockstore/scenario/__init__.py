"""The scenario format: loading, validation, the frozen model, and the one resolver."""

from mockstore.scenario.loader import Problem, ScenarioError, scenario_schema
from mockstore.scenario.model import (
    Behaviour,
    FaultRule,
    KeySpec,
    Match,
    Reply,
    Route,
    Scenario,
    load_scenario,
)
from mockstore.scenario.source import (
    ScenarioNotFound,
    ScenarioSource,
    ScenarioSpec,
    bundled_names,
    load_scenario_file,
    load_scenario_source,
    read_scenario_source,
    resolve_scenario,
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
    "ScenarioNotFound",
    "ScenarioSource",
    "ScenarioSpec",
    "bundled_names",
    "load_scenario",
    "load_scenario_file",
    "load_scenario_source",
    "read_scenario_source",
    "resolve_scenario",
    "scenario_schema",
]
