"""The scenario format: the frozen model, its builder, the YAML loader, the one resolver.

``model`` holds the plain frozen types; ``build`` turns a file's text into them
(``load_scenario``); ``loader`` reads YAML with positions and checks it against
``scenario.schema.json``; ``source`` resolves what a user names (a bundled name,
a path, YAML text) into that text.
"""

from mockstore.scenario.build import load_scenario
from mockstore.scenario.loader import Problem, ScenarioError, scenario_schema
from mockstore.scenario.model import (
    Behaviour,
    FaultRule,
    KeySpec,
    Match,
    Reply,
    Route,
    Scenario,
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
