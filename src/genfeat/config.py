"""Frozen-dataclass configs <-> YAML, and typed `--dotted.field value` overrides.

Configs are never mutated: every change returns a new object (`dataclasses.replace`). Values coming
from the command line or a YAML file are checked against the field's type annotation, so a typo or a
wrong type fails at once with a message naming the field.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
import os
import re
import tempfile
import types
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

from genfeat.errors import ConfigError

T = TypeVar("T")

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_NONE = {"none", "null", "~"}


def require_at_least(cfg: Any, minimum: float, *names: str, prefix: str = "") -> None:
    """Raise one ConfigError naming every field of `cfg` among `names` that is below `minimum` (fields set to None
    are left out), e.g. "train.lambda_ld=-0.1, train.lr_g=-1: must be >= 0"."""
    low = [f"{prefix}{n}={v}" for n in names if (v := getattr(cfg, n)) is not None and v < minimum]
    if low:
        raise ConfigError(f"{', '.join(low)}: must be >= {minimum}")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def shown(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters, for messages that echo what a user gave."""
    r = repr(value)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def coerce(value: Any, tp: Any, name: str) -> Any:
    """Convert `value` (a CLI string or a YAML scalar/list) to type `tp`, or raise ConfigError."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if type(None) in args and (value is None or (isinstance(value, str) and value.lower() in _NONE)):
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return coerce(value, arg, name)
            except ConfigError as e:
                errors.append(str(e))
        if len(errors) == 1:  # an optional value (X | None): X's own message, plus the way to unset it
            raise ConfigError(errors[0] + (" (or none)" if type(None) in args else ""))
        raise ConfigError(f"{name}: cannot read {shown(value)} as {_type_name(tp)}")
    if origin is Literal:
        choices = get_args(tp)
        for c in choices:
            if value == c or (isinstance(value, str) and str(c) == value):
                return c
        raise ConfigError(f"{name}: {shown(value)} is not one of {list(choices)}")
    if origin in (tuple, list):
        if isinstance(value, str):
            value = [v for v in (s.strip() for s in value.strip("()[]").split(",")) if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}: expected a list, got {shown(value)}")
        args = get_args(tp)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            items = [coerce(v, args[0], f"{name}[{i}]") for i, v in enumerate(value)]
        elif origin is tuple and args:
            if len(args) != len(value):
                raise ConfigError(f"{name}: expected {len(args)} values, got {len(value)}")
            items = [coerce(v, a, f"{name}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True))]
        else:
            elem = args[0] if args else Any
            items = [coerce(v, elem, f"{name}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise ConfigError(f"{name}: expected true/false, got {shown(value)}")
    if tp is int:
        if isinstance(value, bool):
            raise ConfigError(f"{name}: expected an integer, got {shown(value)}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.replace("_", ""))
            except ValueError:
                try:
                    f = float(value)
                except ValueError:
                    f = None
                if f is not None and f.is_integer():
                    return int(f)
        raise ConfigError(f"{name}: expected an integer, got {shown(value)}")
    if tp is float:  # no setting means anything by nan or inf: they are refused here, for every field
        f = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            f = float(value)
        elif isinstance(value, str):
            with contextlib.suppress(ValueError):
                f = float(value)
        if f is None or not math.isfinite(f):
            raise ConfigError(f"{name}: expected a {'finite ' if f is not None else ''}number, got {shown(value)}")
        leaf = name.rsplit(".", 1)[-1]
        if (leaf.endswith("dropout") or leaf == "dropatt") and not 0.0 <= f < 1.0:  # every recipe's dropouts
            raise ConfigError(f"{name} must be in [0, 1) (a dropout probability), got {shown(value)}")
        return f
    if tp is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{name}: expected a string, got {shown(value)}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if isinstance(value, dict):
            return from_dict(tp, value, prefix=f"{name}.")
        if isinstance(value, str) and hasattr(tp, "from_name"):  # a named config (e.g. a head: `--model.head mfs`)
            try:
                return tp.from_name(value)
            except ConfigError as e:
                raise ConfigError(f"{name}: {e}") from None
        raise ConfigError(f"{name}: expected a mapping of fields, got {shown(value)}")
    raise ConfigError(f"{name}: unsupported field type {_type_name(tp)}")


def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def from_dict(cls: type[T], data: dict[str, Any], prefix: str = "") -> T:
    """Build dataclass `cls` from a plain dict, checking names and types."""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.rstrip('.') or cls.__name__}: expected a mapping, got {shown(data)}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(
            f"unknown field {prefix}{str(unknown[0])[:80]}; valid fields of {prefix.rstrip('.') or cls.__name__}: "
            f"{', '.join(sorted(names))}"
        )
    kwargs = {k: coerce(v, hints[k], prefix + k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:  # the section's own checks; a whole run config needs no prefix
        where = prefix.rstrip(".")
        raise ConfigError(f"{where}: {e}" if where else str(e)) from None


def to_dict(obj: Any) -> Any:
    """Dataclass -> plain dict (tuples become lists) for YAML/JSON."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def override(cfg: T, overrides: dict[str, Any]) -> T:
    """Return a copy of `cfg` with dotted-path fields replaced, e.g. {"train.lr": "3e-4"}. Every override is
    checked for its name and type first; the whole config is then validated once, so the order of overrides
    does not matter (`--model.n_head 3 --model.d_model 48` is as good as the reverse). A section is set before
    its fields, so `--model.head.num_softmax 4 --model.head mfs` changes one field of the named head."""
    if not overrides:
        return cfg
    data = to_dict(cfg)
    for path, raw in sorted(overrides.items(), key=lambda kv: kv[0].count(".")):
        _put(type(cfg), data, path.split("."), raw, path)
    return from_dict(type(cfg), data)


def _unknown(name: str, full: str, names: list[str], parent: str) -> ConfigError:
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {(parent + '.' if parent else '') + close[0]}?" if close else ""
    where = f" of {parent}" if parent else ""
    return ConfigError(f"unknown field {full}{hint} (valid fields{where}: {', '.join(names)})")


def _put(cls: type, data: dict[str, Any], parts: list[str], raw: Any, full: str) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    head = parts[0]
    parent = full[: len(full) - len(".".join(parts))].rstrip(".")
    if head not in names:
        raise _unknown(head, full, names, parent)
    tp = _hints(cls)[head]
    if len(parts) == 1:
        data[head] = to_dict(coerce(raw, tp, full))  # the type is checked here, so the message names the field
        return
    sub = tp if dataclasses.is_dataclass(tp) else next(
        (a for a in get_args(tp) if dataclasses.is_dataclass(a)), None)
    if sub is None:
        raise ConfigError(f"unknown field {full}: {parent + '.' if parent else ''}{head} is not a config section")
    if data.get(head) is None:  # an optional section left at None: start from its defaults
        data[head] = to_dict(sub())
    _put(sub, data[head], parts[1:], raw, full)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_mode(directory: bool = False) -> int:
    """The mode a plain open() / mkdir() would give under the user's umask (0644 / 0755 by default): for files
    made through tempfile, which creates them 0600 / 0700."""
    return (0o777 if directory else 0o666) & ~_umask()


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file via a temp file in the same directory + rename (never half-written), with the mode
    the user's umask gives."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """`atomic_write_text` for bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, default_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename makes it visible
        os.replace(tmp, path)
    except OSError as e:  # a failed write() names no file: name the one it was for
        Path(tmp).unlink(missing_ok=True)
        if e.filename is None:
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


MAX_YAML_VALUES = 100_000  # the nodes of a config with its aliases expanded (`load_yaml`)


def _expanded_size(root: yaml.Node | None) -> int:
    """The node count with every alias expanded (an alias shares its anchor's node), counted up to just past
    `MAX_YAML_VALUES`: nested aliases grow exponentially (a 1 KB "billion laughs" file)."""
    n, todo = 0, [root] if root is not None else []
    while todo and n <= MAX_YAML_VALUES:
        node = todo.pop()
        n += 1
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            todo.extend(x for pair in node.value for x in pair)
    return n


def load_yaml(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        hint = f"pass {path / 'config.yaml'}" + (f", or continue the run with --resume {path}"
                                                  if (path / "config.yaml").is_file() else "")
        raise ConfigError(f"config file {path} is a directory; {hint}")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
        if _expanded_size(yaml.compose(text, Loader=yaml.SafeLoader)) > MAX_YAML_VALUES:
            raise ConfigError(f"config file {path} expands to more than {MAX_YAML_VALUES:,} values through its YAML "
                              "aliases (a config is a few hundred)")
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not a text (UTF-8 YAML) file") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {path} is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping, got {type(data).__name__}")
    return data


def recorded_run(run_dir: str | os.PathLike, recipe: str, files: tuple[str, ...] = (), hint: str = "") -> dict:
    """The config.yaml of a finished `recipe` run that holds `files` (ConfigError naming the missing file, or the
    recipe the directory holds instead; `hint`, say how to make one, ends either message)."""
    run = Path(run_dir)
    end, a = f"; {hint}" if hint else "", "an" if recipe[0] in "aeiou" else "a"
    for f in ("config.yaml", *files):
        if not (run / f).is_file():
            raise ConfigError(f"{run}: not a finished {recipe} run directory (no {f}){end}")
    saved = load_yaml(run / "config.yaml")
    if saved.get("recipe") != recipe:
        raise ConfigError(f"{run} is a {saved.get('recipe')!r} run, not {a} {recipe} run{end}")
    return saved


_FIELD_LINE = re.compile(r"^\s+(\w+)\s*:[^=]*(?:=.*?)?(?:\s+#\s?(.*))?$")
_CONTINUATION = re.compile(r"^\s+#\s+(.*)$")


def field_comments(cls: type) -> dict[str, str]:
    """{field: its trailing comment in the class's source, continuation lines joined} (empty when the source is
    not available)."""
    import inspect

    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    names = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, str] = {}
    last = None
    for line in lines:
        m = _FIELD_LINE.match(line)
        if m and m.group(1) in names:
            last = m.group(1)
            out[last] = (m.group(2) or "").strip()
        elif last and (c := _CONTINUATION.match(line)):
            out[last] = f"{out[last]} {c.group(1).strip()}".strip()
        else:
            last = None
    return out


def describe_fields(cfg: Any, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(dotted name, type, value, comment) of every leaf field of a config instance, sections flattened."""
    rows = []
    hints, notes = _hints(type(cfg)), field_comments(type(cfg))
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            rows += describe_fields(value, f"{prefix}{f.name}.")
        else:
            rows.append((prefix + f.name, _type_name(hints[f.name]), repr(to_dict(value)), notes.get(f.name, "")))
    return rows
