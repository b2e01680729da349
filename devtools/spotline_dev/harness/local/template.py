"""Reading `template.yaml` as data: the local stack, the sandbox and the tests build what they
need from the template's own properties instead of repeating them."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[4]
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"


# libyaml's parser where PyYAML has it (its wheels do): the same document, several times faster.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """YAML loader that turns short-form intrinsics (!Ref X) into their long form ({"Ref": X})."""


class _PureCfnLoader(yaml.SafeLoader):
    """The same in pure Python (tests hold the two equal)."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)
_PureCfnLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as data: parsed once per process and version of the file, a copy each time
    (callers may change theirs)."""
    stat = path.stat()
    return copy.deepcopy(_parsed(path, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=4)
def _parsed(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    return yaml.load(path.read_text(), Loader=_CfnLoader)  # type: ignore[no-any-return]


def load_template_pure(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template parsed by PyYAML's pure-Python loader, for the test that holds it equal."""
    return yaml.load(path.read_text(), Loader=_PureCfnLoader)  # type: ignore[no-any-return]


def resources_of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in template["Resources"].items() if res["Type"] == resource_type}


def function_environment(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    """Globals' variables overlaid with the function's own, unresolved."""
    merged = dict(template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
    props = template["Resources"][logical_id]["Properties"]
    merged.update(props.get("Environment", {}).get("Variables", {}))
    return merged


NO_VALUE = object()  # AWS::NoValue: the property or list item is left out


class Resolver:
    """Resolves the intrinsics the template uses (Ref, GetAtt, Sub, Join, Select, Split, If with
    its Conditions) against local names."""

    def __init__(
        self, template: dict[str, Any], physical: Callable[[str, str | None], str], pseudo: dict[str, str]
    ) -> None:
        self.template = template
        self.physical = physical  # (logical id, attribute or None) -> value
        self.pseudo = pseudo  # AWS::Region etc.

    def parameter(self, name: str) -> str:
        return str(self.template.get("Parameters", {})[name].get("Default", ""))

    def ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.template.get("Parameters", {}):
            # A CommaDelimitedList is "An array of literal strings that are separated by commas"
            # (CloudFormation, "Parameters"): its Ref is that list.
            if self.template["Parameters"][name].get("Type") == "CommaDelimitedList":
                return self.parameter(name).split(",")
            return self.parameter(name)
        return self.physical(name, None)

    def condition(self, name: str) -> bool:
        return self._truth(self.template["Conditions"][name])

    def _truth(self, value: Any) -> bool:
        ((key, arg),) = value.items()
        if key == "Condition":
            return self.condition(arg)
        if key == "Fn::Equals":
            return str(self.resolve(arg[0])) == str(self.resolve(arg[1]))
        if key == "Fn::Not":
            return not self._truth(arg[0])
        if key in ("Fn::And", "Fn::Or"):
            truths = [self._truth(item) for item in arg]
            return all(truths) if key == "Fn::And" else any(truths)
        raise ValueError(f"condition function {key} is not known to the local resolver")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.physical(logical, attribute)
            if key == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))
                return re.sub(r"\$\{([^}]+)\}", lambda m: self._sub_var(m.group(1), extra), text)
            if key == "Fn::Join":
                separator, items = arg
                return separator.join(str(v) for v in self.resolve(items))
            if key == "Fn::Select":
                return self.resolve(arg[1])[int(self.resolve(arg[0]))]
            if key == "Fn::Split":
                return str(self.resolve(arg[1])).split(arg[0])
            if key == "Fn::If":
                return self.resolve(arg[1] if self.condition(arg[0]) else arg[2])
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def _sub_var(self, name: str, extra: dict[str, Any]) -> str:
        if name.startswith("!"):  # Fn::Sub: "${!Literal}" is written as "${Literal}"
            return "${" + name[1:] + "}"
        if name in extra:
            return str(extra[name])
        if "." in name and not name.startswith("AWS::"):
            logical, attribute = name.split(".", 1)
            return self.physical(logical, attribute)
        return str(self.ref(name))


def powertools_environment(template: dict[str, Any] | None = None) -> dict[str, str]:
    """The POWERTOOLS_* variables of the template's Globals with parameters at their defaults.

    Powertools reads them when `spotline.aws.common.observability` is first imported, so in-process users
    (tests, sandbox) set them before that import, as Lambda does."""
    template = template or load_template()
    resolver = Resolver(template, lambda logical, attribute: logical, {})
    variables = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    return {k: str(resolver.resolve(v)) for k, v in variables.items() if k.startswith("POWERTOOLS_")}


def queue_capacity(template: dict[str, Any], queue: dict[str, Any], resolver: Resolver) -> dict[str, int] | None:
    """The capacity limits of a job queue's first service environment ({CapacityUnit:
    MaxCapacity}: NUM_INSTANCES or per instance type), None when it sets none."""
    order = sorted(queue["Properties"].get("ServiceEnvironmentOrder") or [], key=lambda o: int(o.get("Order", 0)))
    environment = order[0].get("ServiceEnvironment") if order else None
    logical = environment.get("Ref") if isinstance(environment, dict) else None
    resource = template["Resources"].get(logical) if logical else None
    limits = resolver.resolve((resource or {}).get("Properties", {}).get("CapacityLimits") or [])
    capacity = {
        str(limit.get("CapacityUnit", "NUM_INSTANCES")): int(limit["MaxCapacity"])
        for limit in limits
        if "MaxCapacity" in limit
    }
    return capacity or None
